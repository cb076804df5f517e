// Reads /proc and cgroup files with plain open/read into one reused buffer, and lists
// directories with getdents64, so a sample of hundreds of processes each second allocates nothing.
// Supervisor process, sampler thread. Never throws: a failed read is nullopt plus an errno.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/proc/cgroup_text.h"
#include "supervisor/proc/environ_text.h"
#include "supervisor/proc/proc_text.h"

namespace traindoc::supervisor {

// When a file has been read whole. Most /proc and cgroup files are generated as one record per
// open (seq_file single_open, environ, cmdline): a read shorter than asked for is the end, and
// the extra read() that would return 0 costs as much as the useful one. Multi-record files
// (mountinfo, /proc/<pid>/maps) can return short reads mid-file and need kEof.
enum class ReadUntil { kEof, kShortRead };

class ProcFileReader {
 public:
  ProcFileReader();
  ~ProcFileReader();
  ProcFileReader(const ProcFileReader&) = delete;
  ProcFileReader& operator=(const ProcFileReader&) = delete;

  // The whole file, or its first kMaxFileSize bytes. The view lives until the next read.
  std::optional<std::string_view> read(const char* path, ReadUntil until = ReadUntil::kEof);
  // /proc/<pid>/<name>, a single-record file (stat, status, smaps_rollup, limits, environ, ...).
  std::optional<std::string_view> read_pid_file(int pid, const char* name);

  // Calls on_entry(name) for each entry but "." and "..". The names live during the call only,
  // and on_entry may use read() but not list another directory. False when it cannot be opened.
  template <typename OnEntry>
  bool list_dir(const char* path, OnEntry&& on_entry);
  std::optional<int> count_dir_entries(const char* path);

  // errno of the last failure; 0 after a success.
  int last_errno() const { return m_errno; }
  // The last failure means the process (or file) no longer exists.
  bool last_gone() const;

  static constexpr size_t kMaxFileSize = size_t{16} << 20;

 private:
  int open_dir(const char* path);
  // Fills the directory buffer; returns bytes or <= 0 at the end or on error.
  long next_dir_chunk(int fd);
  static std::string_view entry_name(const char* record, size_t size);
  static size_t entry_size(const char* record);
  void close_dir(int fd);

  std::unique_ptr<char[]> m_buffer;
  size_t m_capacity = 0;
  std::unique_ptr<char[]> m_dir_buffer;
  int m_errno = 0;
};

template <typename OnEntry>
bool ProcFileReader::list_dir(const char* path, OnEntry&& on_entry) {
  int fd = open_dir(path);
  if (fd < 0) return false;
  long got = 0;
  while ((got = next_dir_chunk(fd)) > 0) {
    for (long offset = 0; offset < got;) {
      const char* record = m_dir_buffer.get() + offset;
      size_t size = entry_size(record);
      if (size == 0 || offset + static_cast<long>(size) > got) break;
      std::string_view name = entry_name(record, size);
      if (name != "." && name != ".." && !name.empty()) on_entry(name);
      offset += static_cast<long>(size);
    }
  }
  close_dir(fd);
  return got == 0;
}

// One-shot readers over a reader of the calling thread. nullopt: gone, unreadable or malformed.
// Every process /proc shows.
std::vector<int> list_proc_pids();
std::optional<ProcStat> read_proc_stat(int pid);
std::optional<ProcStatus> read_proc_status(int pid);
std::optional<SmapsRollup> read_smaps_rollup(int pid);
std::optional<ProcLimits> read_proc_limits(int pid);
std::optional<EnvironText> read_proc_environ(int pid);
std::optional<std::vector<std::string>> read_proc_cmdline(int pid);
std::optional<MemInfo> read_meminfo();
std::optional<int> count_open_fds(int pid);
// Whether the process has a handler for `sig`; false when it is gone.
bool catches_signal(int pid, int sig);
// The thread of `pid` to send a signal whose handler must not cut a wait short
// (cut_short_by_signal, unless CPython made the call: it makes it again): the main thread when it
// is blocked in another call, else another thread that is, else a running one (or one that cannot
// be read), the main thread first. nullopt when each waits in such a call; `main_call` then names
// the main thread's call and its caller ("clock_nanosleep, called from libtorch_cpu.so").
std::optional<int> thread_to_interrupt(int pid, std::string& main_call);
// When a thread of the process is blocked waiting for its standard input: what that input is
// ("a terminal, /dev/pts/2", "a pipe", a file's path; "" when unknown). nullopt when none waits
// or the process's threads cannot be read.
std::optional<std::string> stdin_wait(int pid);

}  // namespace traindoc::supervisor
