// The log tap thread. Supervisor process. It reads in large chunks and never parses lines on the
// way to the terminal, so binary output and a line of any length pass at pipe speed.
#include "supervisor/log_tap.h"

#include "common/clock.h"
#include "common/layout.h"
#include "common/write_all.h"
#include "supervisor/line_splitter.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

namespace traindoc::supervisor {
namespace {

constexpr size_t kChunk = size_t{1} << 20;  // the pipe traindoc gives the job holds as much
constexpr std::streamoff kTailRead = std::streamoff{1} << 20;  // of each log file, at the end
constexpr int kReadFilesEveryMs = 200;
constexpr size_t kFileChunksPerRead = 8;  // a file written fast never holds up the pipes long
// Files beyond these are not read: a job that gives every process a log file of its own.
constexpr size_t kMaxFiles = 16;

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

LogTap::LogTap(const std::string& run_dir, const LaunchedJob& job, LogBounds bounds)
    : m_run_dir(run_dir), m_bounds(bounds), m_streams(2) {
  const OutputChannel* channels[2] = {&job.out, &job.err};
  const char* names[2] = {"stdout", "stderr"};
  for (int i = 0; i < 2; ++i) {
    m_streams[i].info.name = names[i];
    m_streams[i].log_name = names[i];
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
    if (stream.tailed >= 0) close(stream.tailed);
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
  // Files told at the end, and what the others got since the thread's last read.
  adopt_files();
  for (size_t i = 2; i < m_streams.size(); ++i) tail(m_streams[i], SIZE_MAX);
  for (Stream& stream : m_streams) {
    std::vector<store::LogLine> cited;
    // Output ending without a newline.
    stream.unfinished = stream.lines.end_partial(stream.info.name, common::realtime_ns(), cited);
    cite(cited);
  }
}

bool LogTap::stderr_mid_line() const {
  struct stat out {};
  struct stat err {};
  bool one_file = fstat(STDOUT_FILENO, &out) == 0 && fstat(STDERR_FILENO, &err) == 0 &&
                  out.st_dev == err.st_dev && out.st_ino == err.st_ino;
  return m_streams[one_file ? m_last_written : 1].unfinished;
}

std::vector<store::LogStream> LogTap::streams() const {
  std::lock_guard lock(m_mutex);
  std::vector<store::LogStream> out;
  for (const Stream& stream : m_streams) out.push_back(stream.info);
  return out;
}

void LogTap::add_file(OutputFile file) {
  std::lock_guard lock(m_mutex);
  m_added.push_back(std::move(file));
}

// Takes the files told since the last call: a new path becomes a stream, a known one gains a
// writer. The thread's (or, after it, finish()'s) alone.
void LogTap::adopt_files() {
  std::vector<OutputFile> added;
  {
    std::lock_guard lock(m_mutex);
    added.swap(m_added);
  }
  for (OutputFile& file : added) {
    auto known = std::find_if(m_streams.begin() + 2, m_streams.end(),
                              [&](const Stream& s) { return s.info.name == file.path; });
    if (known == m_streams.end()) {
      if (m_streams.size() - 2 >= kMaxFiles) continue;
      {
        std::lock_guard lock(m_mutex);
        known = m_streams.emplace(m_streams.end());
        known->info.name = file.path;
      }
      known->log_name = "file-" + std::to_string(m_streams.size() - 2);
      known->tailed = file.file.release();
      known->offset = file.offset;
      open_next_file(*known);
    } else {
      follow_replaced(*known, file);
    }
    // A process that opens its log again and again (a handler added per step) is one writer.
    std::vector<store::LogWriter>& writers = known->info.writers;
    if (std::none_of(writers.begin(), writers.end(), [&](const store::LogWriter& w) {
          return w.pid == file.writer.pid && w.fd == file.writer.fd;
        })) {
      std::lock_guard lock(m_mutex);
      writers.push_back(file.writer);
    }
  }
}

// A path told again that names another file than the one read (a rotated log: the old one
// renamed, a new one opened in its place): the old one is read to its end, then the new one from
// where its writer begins, as the same stream.
void LogTap::follow_replaced(Stream& stream, OutputFile& file) {
  struct stat now {};
  struct stat read {};
  if (fstat(file.file.get(), &now) != 0 || fstat(stream.tailed, &read) != 0 ||
      (now.st_dev == read.st_dev && now.st_ino == read.st_ino)) {
    return;
  }
  tail(stream, SIZE_MAX);
  std::vector<store::LogLine> cited;  // its last line, never ended
  stream.lines.end_partial(stream.info.name, common::realtime_ns(), cited);
  cite(cited);
  close(stream.tailed);
  stream.tailed = file.file.release();
  stream.offset = file.offset;
}

// Reads what was written to a file since the last read, up to `max_chunks` chunks.
void LogTap::tail(Stream& stream, size_t max_chunks) {
  static thread_local std::vector<char> buffer(kChunk);
  struct stat file {};
  if (fstat(stream.tailed, &file) == 0) {
    auto size = static_cast<uint64_t>(file.st_size);
    // Cut short since (a writer that truncated it): what comes next is written from its end.
    stream.offset = std::min(stream.offset, size);
    if (size - stream.offset > m_bounds.file_lag_bytes) {
      uint64_t passed = size - stream.offset - m_bounds.file_lag_bytes;
      stream.offset += passed;
      stream.lines.drop_partial();
      std::lock_guard lock(m_mutex);
      stream.info.bytes += passed;
      stream.info.bytes_not_kept += passed;
    }
  }
  for (size_t chunk = 0; chunk < max_chunks; ++chunk) {
    ssize_t n =
        pread(stream.tailed, buffer.data(), buffer.size(), static_cast<off_t>(stream.offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    auto size = static_cast<size_t>(n);
    stream.offset += size;
    uint64_t lines = scan_lines(stream, buffer.data(), size, common::realtime_ns());
    keep(stream, buffer.data(), size, lines);
  }
}

void LogTap::run() {
  int64_t deadline = -1;
  // Until both pipes ended and the job's end was told: files are read also while the job writes
  // only to them (a shell's `exec > log 2>&1`).
  while (m_streams[0].source >= 0 || m_streams[1].source >= 0 || deadline < 0) {
    pollfd fds[3] = {{m_streams[0].source, POLLIN, 0},
                     {m_streams[1].source, POLLIN, 0},
                     {deadline < 0 ? m_wake[0] : -1, POLLIN, 0}};
    int timeout = kReadFilesEveryMs;
    if (deadline >= 0) {
      timeout = static_cast<int>(std::clamp<int64_t>(deadline - now_ms(), 0, timeout));
    }
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
    adopt_files();
    for (size_t i = 2; i < m_streams.size(); ++i) tail(m_streams[i], kFileChunksPerRead);
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
  m_last_written = &stream == &m_streams[0] ? 0 : 1;
  if (stream.sink >= 0 && !common::write_all(stream.sink, buffer.data(), size)) {
    // Our reader is gone (`traindoc run ... | head`): close the job's pipe so the job meets the
    // same broken pipe it would have met without us.
    stream.sink = -1;
    close(stream.source);
    stream.source = -1;
  }
  uint64_t lines = scan_lines(stream, buffer.data(), size, common::realtime_ns());
  keep(stream, buffer.data(), size, lines);
}

uint64_t LogTap::scan_lines(Stream& stream, const char* data, size_t size, int64_t t_ns) {
  std::vector<store::LogLine> cited;
  uint64_t lines = stream.lines.scan({data, size}, stream.info.name, t_ns, cited);
  cite(cited);
  return lines;
}

void LogTap::cite(std::vector<store::LogLine>& lines) {
  if (lines.empty()) return;
  std::lock_guard lock(m_mutex);
  m_lines.insert(m_lines.end(), std::make_move_iterator(lines.begin()),
                 std::make_move_iterator(lines.end()));
}

std::vector<store::LogLine> LogTap::take_lines() {
  std::lock_guard lock(m_mutex);
  return std::exchange(m_lines, {});
}

std::vector<store::LogLine> LogTap::last_lines(size_t count, int64_t t_ns) const {
  std::vector<store::LogLine> out;
  for (const Stream& stream : m_streams) {
    // The newest kept file holds the end, unless it has just been opened and is nearly empty.
    std::string tail;
    for (auto it = stream.info.files.rbegin(); it != stream.info.files.rend(); ++it) {
      // Only each file's end is read: a 100 MB line is not read back whole.
      std::ifstream in(m_run_dir + "/" + *it, std::ios::binary | std::ios::ate);
      if (!in) continue;
      std::streamoff size = in.tellg();
      std::streamoff from = std::max<std::streamoff>(0, size - kTailRead);
      std::string text(static_cast<size_t>(size - from), '\0');
      in.seekg(from);
      in.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(static_cast<size_t>(in.gcount()));
      tail.insert(0, text);
      if (std::count(tail.begin(), tail.end(), '\n') > static_cast<long>(count)) break;
    }
    if (!tail.empty() && tail.back() == '\n') tail.pop_back();
    std::vector<std::string_view> lines;
    std::string_view rest(tail);
    while (lines.size() < count && !rest.empty()) {
      size_t cut = rest.rfind('\n');
      std::string_view line = cut == std::string_view::npos ? rest : rest.substr(cut + 1);
      lines.push_back(line);
      rest = cut == std::string_view::npos ? std::string_view() : rest.substr(0, cut);
    }
    uint64_t number = stream.lines.lines();
    for (std::string_view line : lines) {
      // The lines cited already are not repeated.
      std::string_view text = shown_line(line);
      if (!worth_citing(number, text)) {
        out.push_back({t_ns, stream.info.name, number, std::string(text)});
      }
      --number;
    }
  }
  return out;
}

void LogTap::keep(Stream& stream, const char* data, size_t size, uint64_t lines) {
  uint64_t total = size;
  uint64_t lost = 0;  // not written: a full disk, a file that could not be opened
  while (size > 0) {
    uint64_t limit = stream.files_opened == 1 ? m_bounds.head_bytes : m_bounds.tail_bytes;
    if (stream.file_bytes >= limit) {
      open_next_file(stream);
      continue;
    }
    size_t part = static_cast<size_t>(std::min<uint64_t>(size, limit - stream.file_bytes));
    if (stream.file >= 0 && !common::write_all(stream.file, data, part)) {
      close(stream.file);  // a full disk must not stop the job's output
      stream.file = -1;
    }
    if (stream.file < 0) lost += part;
    stream.file_bytes += part;
    data += part;
    size -= part;
  }
  std::lock_guard lock(m_mutex);
  stream.info.bytes += total;
  stream.info.lines += lines;
  stream.info.bytes_not_kept += lost;
}

// The head file first, then numbered tail files of which the last two are kept.
void LogTap::open_next_file(Stream& stream) {
  if (stream.file >= 0) close(stream.file);
  std::string name = stream.files_opened == 0 ? "logs/" + stream.log_name + ".log"
                                              : "logs/" + stream.log_name + ".tail-" +
                                                    std::to_string(stream.files_opened) + ".log";
  stream.file = open((m_run_dir + "/" + name).c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND | O_NOFOLLOW, 0600);
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
