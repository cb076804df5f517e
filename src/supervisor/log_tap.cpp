// The log tap thread. Supervisor process. It reads in large chunks and never parses lines on the
// way to the terminal, so binary output and a line of any length pass at pipe speed.
#include "supervisor/log_tap.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

namespace traindoc::supervisor {
namespace {

constexpr size_t kChunk = 256 * 1024;

// False when the sink broke (EPIPE: our reader went away).
bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

LogTap::LogTap(const std::string& run_dir, const LaunchedJob& job, LogBounds bounds)
    : m_run_dir(run_dir), m_bounds(bounds) {
  const OutputChannel* channels[2] = {&job.out, &job.err};
  const char* names[2] = {"stdout", "stderr"};
  for (int i = 0; i < 2; ++i) {
    m_streams[i].info.name = names[i];
    m_streams[i].source = channels[i]->read_fd;
    m_streams[i].sink = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
    open_next_file(m_streams[i]);
  }
  if (pipe2(m_wake, O_CLOEXEC) != 0) throw std::runtime_error("cannot create a pipe");
  m_thread = std::thread([this] { run(); });
}

LogTap::~LogTap() {
  if (m_thread.joinable()) finish(0);
  for (Stream& stream : m_streams) {
    if (stream.source >= 0) close(stream.source);
    if (stream.file >= 0) close(stream.file);
  }
  close(m_wake[0]);
  close(m_wake[1]);
}

void LogTap::finish(int grace_ms) {
  m_grace_ms.store(grace_ms);
  char byte = 1;
  ssize_t ignored = write(m_wake[1], &byte, 1);
  (void)ignored;
  m_thread.join();
}

std::vector<store::LogStream> LogTap::streams() const {
  std::lock_guard lock(m_mutex);
  return {m_streams[0].info, m_streams[1].info};
}

void LogTap::run() {
  int64_t deadline = -1;
  while (m_streams[0].source >= 0 || m_streams[1].source >= 0) {
    pollfd fds[3] = {{m_streams[0].source, POLLIN, 0},
                     {m_streams[1].source, POLLIN, 0},
                     {deadline < 0 ? m_wake[0] : -1, POLLIN, 0}};
    int timeout = deadline < 0 ? -1 : static_cast<int>(std::max<int64_t>(0, deadline - now_ms()));
    int ready = poll(fds, 3, timeout);
    if (ready < 0 && errno == EINTR) continue;
    if (fds[2].revents != 0) {
      // The job's root ended: everything it wrote is in the pipe, and only processes that
      // outlive it can still write. Give them the grace period, then stop.
      deadline = now_ms() + m_grace_ms.load();
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents != 0) pump(m_streams[i]);
    }
    // Past the deadline, stop even if an orphan still writes: it could write forever.
    if (deadline >= 0 && now_ms() >= deadline) break;
  }
}

// Moves one chunk, or closes the stream at its end.
void LogTap::pump(Stream& stream) {
  static thread_local std::vector<char> buffer(kChunk);
  ssize_t n = read(stream.source, buffer.data(), buffer.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {  // EOF, or EIO on a pty whose last writer closed
    close(stream.source);
    stream.source = -1;
    return;
  }
  auto size = static_cast<size_t>(n);
  if (stream.sink >= 0 && !write_all(stream.sink, buffer.data(), size)) {
    // Our reader is gone (`traindoc run ... | head`): close the job's pipe so the job meets the
    // same broken pipe it would have met without us.
    stream.sink = -1;
    close(stream.source);
    stream.source = -1;
  }
  keep(stream, buffer.data(), size);
}

void LogTap::keep(Stream& stream, const char* data, size_t size) {
  auto lines = static_cast<uint64_t>(std::count(data, data + size, '\n'));
  uint64_t total = size;
  while (size > 0) {
    uint64_t limit = stream.files_opened == 1 ? m_bounds.head_bytes : m_bounds.tail_bytes;
    if (stream.file_bytes >= limit) {
      open_next_file(stream);
      continue;
    }
    size_t part = static_cast<size_t>(std::min<uint64_t>(size, limit - stream.file_bytes));
    if (stream.file >= 0 && !write_all(stream.file, data, part)) {
      close(stream.file);  // a full disk must not stop the job's output
      stream.file = -1;
    }
    stream.file_bytes += part;
    data += part;
    size -= part;
  }
  std::lock_guard lock(m_mutex);
  stream.info.bytes += total;
  stream.info.lines += lines;
}

// The head file first, then numbered tail files of which the last two are kept.
void LogTap::open_next_file(Stream& stream) {
  if (stream.file >= 0) close(stream.file);
  std::string name = stream.files_opened == 0 ? "logs/" + stream.info.name + ".log"
                                              : "logs/" + stream.info.name + ".tail-" +
                                                    std::to_string(stream.files_opened) + ".log";
  stream.file = open((m_run_dir + "/" + name).c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND, 0644);
  stream.file_bytes = 0;
  ++stream.files_opened;
  std::lock_guard lock(m_mutex);
  if (stream.info.files.size() >= 3) {
    // Drop the oldest tail: the head and the latest output are what explain a failure.
    unlink((m_run_dir + "/" + stream.info.files[1]).c_str());
    stream.info.bytes_not_kept += m_bounds.tail_bytes;
    stream.info.files.erase(stream.info.files.begin() + 1);
  }
  stream.info.files.push_back(name);
}

}  // namespace traindoc::supervisor
