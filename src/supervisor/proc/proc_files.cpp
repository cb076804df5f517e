// Reads /proc and cgroup files with plain open/read into one reused buffer, and lists
// directories with getdents64. Supervisor process, sampler thread.
#include "supervisor/proc/proc_files.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace traindoc::supervisor {
namespace {

constexpr size_t kInitialCapacity = size_t{16} << 10;
constexpr size_t kDirBufferSize = size_t{32} << 10;
// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen, u8 d_type, char d_name[].
constexpr size_t kDirentReclenOffset = 16;
constexpr size_t kDirentNameOffset = 19;

void format_pid_path(char* out, size_t size, int pid, const char* name) {
  std::snprintf(out, size, "/proc/%d/%s", pid, name);
}

ProcFileReader& thread_reader() {
  thread_local ProcFileReader t_reader;
  return t_reader;
}

}  // namespace

ProcFileReader::ProcFileReader()
    : m_buffer(new char[kInitialCapacity]),
      m_capacity(kInitialCapacity),
      m_dir_buffer(new char[kDirBufferSize]) {}

ProcFileReader::~ProcFileReader() = default;

bool ProcFileReader::last_gone() const {
  return m_errno == ENOENT || m_errno == ESRCH;
}

std::optional<std::string_view> ProcFileReader::read(const char* path, ReadUntil until) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    m_errno = errno;
    return std::nullopt;
  }
  size_t size = 0;
  while (true) {
    if (size == m_capacity) {
      if (m_capacity >= kMaxFileSize) break;  // keep what fits: parsers take partial text
      size_t grown = m_capacity * 2;
      std::unique_ptr<char[]> bigger(new (std::nothrow) char[grown]);
      if (!bigger) break;
      std::memcpy(bigger.get(), m_buffer.get(), size);
      m_buffer = std::move(bigger);
      m_capacity = grown;
    }
    ssize_t got = ::read(fd, m_buffer.get() + size, m_capacity - size);
    if (got < 0) {
      if (errno == EINTR) continue;
      // A process that exits while we read its files answers ESRCH (environ) or 0 bytes.
      m_errno = errno;
      ::close(fd);
      return std::nullopt;
    }
    if (got == 0) break;
    size_t asked = m_capacity - size;
    size += static_cast<size_t>(got);
    if (until == ReadUntil::kShortRead && static_cast<size_t>(got) < asked) break;
  }
  ::close(fd);
  m_errno = 0;
  return std::string_view(m_buffer.get(), size);
}

std::optional<std::string_view> ProcFileReader::read_pid_file(int pid, const char* name) {
  char path[96];
  format_pid_path(path, sizeof path, pid, name);
  return read(path, ReadUntil::kShortRead);
}

int ProcFileReader::open_dir(const char* path) {
  int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  m_errno = fd < 0 ? errno : 0;
  return fd;
}

long ProcFileReader::next_dir_chunk(int fd) {
  // glibc's getdents64 wrapper is newer than some distributions the supervisor runs on.
  long got = ::syscall(SYS_getdents64, fd, m_dir_buffer.get(), kDirBufferSize);
  if (got < 0) m_errno = errno;
  return got;
}

size_t ProcFileReader::entry_size(const char* record) {
  uint16_t reclen = 0;
  std::memcpy(&reclen, record + kDirentReclenOffset, sizeof reclen);
  return reclen > kDirentNameOffset ? reclen : 0;
}

std::string_view ProcFileReader::entry_name(const char* record, size_t size) {
  const char* name = record + kDirentNameOffset;
  return std::string_view(name, ::strnlen(name, size - kDirentNameOffset));
}

void ProcFileReader::close_dir(int fd) {
  ::close(fd);
}

std::optional<int> ProcFileReader::count_dir_entries(const char* path) {
  int count = 0;
  if (!list_dir(path, [&](std::string_view) { ++count; })) return std::nullopt;
  return count;
}

std::optional<ProcStat> read_proc_stat(int pid) {
  std::optional<std::string_view> text = thread_reader().read_pid_file(pid, "stat");
  if (!text) return std::nullopt;
  return parse_proc_stat(*text);
}

std::optional<ProcStatus> read_proc_status(int pid) {
  std::optional<std::string_view> text = thread_reader().read_pid_file(pid, "status");
  if (!text) return std::nullopt;
  return parse_proc_status(*text);
}

std::optional<SmapsRollup> read_smaps_rollup(int pid) {
  std::optional<std::string_view> text = thread_reader().read_pid_file(pid, "smaps_rollup");
  if (!text) return std::nullopt;
  return parse_smaps_rollup(*text);
}

std::optional<ProcLimits> read_proc_limits(int pid) {
  std::optional<std::string_view> text = thread_reader().read_pid_file(pid, "limits");
  if (!text) return std::nullopt;
  return parse_proc_limits(*text);
}

std::optional<EnvironText> read_proc_environ(int pid) {
  std::optional<std::string_view> text = thread_reader().read_pid_file(pid, "environ");
  if (!text) return std::nullopt;
  return EnvironText(*text);
}

std::optional<std::vector<std::string>> read_proc_cmdline(int pid) {
  std::optional<std::string_view> text = thread_reader().read_pid_file(pid, "cmdline");
  if (!text) return std::nullopt;
  return parse_cmdline(*text);
}

std::optional<MemInfo> read_meminfo() {
  std::optional<std::string_view> text =
      thread_reader().read("/proc/meminfo", ReadUntil::kShortRead);
  if (!text) return std::nullopt;
  return parse_meminfo(*text);
}

std::optional<int> count_open_fds(int pid) {
  char path[64];
  format_pid_path(path, sizeof path, pid, "fd");
  return thread_reader().count_dir_entries(path);
}

bool catches_signal(int pid, int sig) {
  std::optional<ProcStatus> status = read_proc_status(pid);
  return status && status->caught_signals && ((*status->caught_signals >> (sig - 1)) & 1) != 0;
}

std::optional<std::string> stdin_wait(int pid) {
  char path[64];
  format_pid_path(path, sizeof path, pid, "task");
  ProcFileReader& reader = thread_reader();
  bool waits = false;
  reader.list_dir(path, [&](std::string_view tid) {
    char file[96];
    std::snprintf(file, sizeof file, "%s/%.*s/syscall", path, static_cast<int>(tid.size()),
                  tid.data());
    std::optional<std::string_view> text = reader.read(file, ReadUntil::kShortRead);
    auto call = text ? parse_thread_syscall(*text) : std::nullopt;
    waits = waits || (call && call->waits_on_stdin());
  });
  if (!waits) return std::nullopt;
  format_pid_path(path, sizeof path, pid, "fd/0");
  char target[256];
  ssize_t size = readlink(path, target, sizeof target - 1);
  if (size <= 0) return "";
  std::string input(target, static_cast<size_t>(size));
  if (input.starts_with("/dev/pts/") || input.starts_with("/dev/tty")) {
    return "a terminal, " + input;
  }
  if (input.starts_with("pipe:")) return "a pipe";
  if (input.starts_with("socket:")) return "a socket";
  return input;
}

}  // namespace traindoc::supervisor
