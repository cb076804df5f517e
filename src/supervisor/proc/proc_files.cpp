// Reads /proc and cgroup files with plain open/read into one reused buffer, and lists
// directories with getdents64. Supervisor process, sampler thread.
#include "supervisor/proc/proc_files.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <utility>

#include "store/memory_map.h"

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

std::vector<int> list_proc_pids() {
  std::vector<int> out;
  thread_reader().list_dir("/proc", [&](std::string_view name) {
    if (std::optional<int> pid = parse_pid_name(name)) out.push_back(*pid);
  });
  return out;
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

namespace {

// Calls `fn(tid, call)` for each thread of `pid`, with the system call it is blocked in (nullopt
// when unreadable: gone, or not ours to read).
template <typename Fn>
void for_each_thread_call(int pid, Fn fn) {
  char path[64];
  format_pid_path(path, sizeof path, pid, "task");
  ProcFileReader& reader = thread_reader();
  reader.list_dir(path, [&](std::string_view tid) {
    char file[96];
    std::snprintf(file, sizeof file, "%s/%.*s/syscall", path, static_cast<int>(tid.size()),
                  tid.data());
    std::optional<std::string_view> text = reader.read(file, ReadUntil::kShortRead);
    int number = 0;
    std::from_chars(tid.data(), tid.data() + tid.size(), number);
    fn(number, text ? parse_thread_syscall(*text) : std::nullopt);
  });
}

// The file of the code that made the call `call` of a thread of `pid` waits in: the first return
// address above the stack pointer that lies outside the C library (whose wrappers keep small
// frames). "" when unknown.
std::string caller_of(int pid, const ThreadSyscall& call,
                      const std::vector<store::MemoryMapping>& maps) {
  const store::MemoryMapping* libc = store::find_mapping(maps, call.pc);
  if (libc == nullptr) return "";
  char path[64];
  format_pid_path(path, sizeof path, pid, "mem");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  uint64_t words[512];
  ssize_t got = pread(fd, words, sizeof words, static_cast<off_t>(call.sp));
  close(fd);
  for (ssize_t i = 0; i < got / static_cast<ssize_t>(sizeof(uint64_t)); ++i) {
    const store::MemoryMapping* code = store::find_mapping(maps, words[i]);
    if (code != nullptr && code->perms.find('x') != std::string::npos && code->path != libc->path &&
        code->path != "[vdso]") {
      return code->path;
    }
  }
  return "";
}

// Whether the file is CPython's (the interpreter, libpython, a module of its lib-dynload): it
// makes its calls again after a signal handler ran (PEP 475).
bool is_python_code(const std::string& path) {
  std::string_view name = std::string_view(path).substr(path.rfind('/') + 1);
  return name.starts_with("python") || name.starts_with("libpython") ||
         path.find("/lib-dynload/") != std::string::npos;
}

}  // namespace

std::optional<int> thread_to_interrupt(int pid, std::string& main_call) {
  // Best first: blocked in a call the handler leaves alone; running (it may enter any call
  // before the signal lands: a thread of a library that retries in a loop runs a moment between
  // its waits), or not readable; none when each waits in a call the handler would cut short.
  enum Fit { kBlockedSafe, kRunning, kNone };
  Fit main_fit = kNone;
  Fit other_fit = kNone;
  int other = 0;
  std::string main_waits;  // the main thread's call, when it cannot take the signal
  std::optional<std::vector<store::MemoryMapping>> maps;  // read once, when needed
  for_each_thread_call(pid, [&](int tid, const std::optional<ThreadSyscall>& call) {
    if (tid != pid && other_fit == kBlockedSafe) return;
    Fit fit = !call || call->number < 0 ? kRunning : kBlockedSafe;
    const char* cut = fit == kBlockedSafe ? call->cut_short_by_signal() : nullptr;
    if (cut != nullptr) {
      if (!maps) {
        char path[64];
        format_pid_path(path, sizeof path, pid, "maps");
        std::optional<std::string_view> text = thread_reader().read(path, ReadUntil::kEof);
        maps = text ? store::parse_maps(*text) : std::vector<store::MemoryMapping>{};
      }
      std::string caller = caller_of(pid, *call, *maps);
      if (!is_python_code(caller)) fit = kNone;
      if (tid == pid && fit == kNone) {
        main_waits = cut;
        if (!caller.empty()) main_waits += ", called from " + caller.substr(caller.rfind('/') + 1);
      }
    }
    if (tid == pid) {
      main_fit = fit;
    } else if (fit < other_fit) {
      other_fit = fit;
      other = tid;
    }
  });
  if (other_fit < main_fit) return other;
  if (main_fit != kNone) return pid;
  main_call = std::move(main_waits);
  return std::nullopt;
}

std::optional<std::string> stdin_wait(int pid) {
  bool waits = false;
  for_each_thread_call(pid, [&](int, const std::optional<ThreadSyscall>& call) {
    waits = waits || (call && call->waits_on_stdin());
  });
  if (!waits) return std::nullopt;
  char path[64];
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
