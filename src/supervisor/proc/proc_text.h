// Parsers of per-process /proc texts (stat, status, smaps_rollup, limits, a thread's syscall) and
// /proc/meminfo.
// Supervisor process, sampler thread. Pure: text in, structs out, no I/O.
// Total: malformed or truncated text gives nullopt or fields left empty, never a throw.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace traindoc::supervisor {

// /proc/<pid>/stat, the fields the sampler and the process tree need.
struct ProcStat {
  int pid = 0;
  std::string comm;  // at most 15 bytes from the kernel, so no allocation
  char state = '?';  // R S D Z T t X I ...
  int ppid = 0;
  int pgrp = 0;
  int session = 0;
  uint64_t utime = 0;  // clock ticks
  uint64_t stime = 0;
  int num_threads = 0;
  uint64_t starttime = 0;  // clock ticks after boot; with pid, the process's identity
  uint64_t rss_pages = 0;
  // Field 28, where the stack begins: placed anew at each exec (address randomization), copied by
  // a fork. 0 when the reader may not see it.
  uint64_t start_stack = 0;
  // Field 52 (Linux >= 3.5): the wait status the parent will get; meaningful for zombies only.
  std::optional<int> exit_code;

  // A zombie or a dying process: its memory and descriptors are gone, only its stat is left.
  bool dead() const { return state == 'Z' || state == 'X'; }
};

// /proc/<pid>/status; sizes in bytes. A zombie has no Vm* or Rss* lines.
struct ProcStatus {
  std::optional<uint64_t> vm_rss;
  std::optional<uint64_t> vm_swap;
  std::optional<uint64_t> rss_anon;
  std::optional<uint64_t> rss_file;
  std::optional<uint64_t> rss_shmem;
  std::optional<uint64_t> vm_hwm;
  std::optional<int> threads;
  std::optional<uint64_t> caught_signals;  // SigCgt: bit N-1 for signal N
};

// /proc/<pid>/smaps_rollup (Linux >= 4.14); bytes. Older kernels lack some lines.
struct SmapsRollup {
  std::optional<uint64_t> rss;
  std::optional<uint64_t> pss;
  std::optional<uint64_t> private_clean;
  std::optional<uint64_t> private_dirty;
  std::optional<uint64_t> swap;
  std::optional<uint64_t> swap_pss;

  // Unique set size: what freeing the process would give back.
  std::optional<uint64_t> uss() const {
    if (!private_clean || !private_dirty) return std::nullopt;
    return *private_clean + *private_dirty;
  }
};

// The value /proc/<pid>/limits prints as "unlimited".
inline constexpr uint64_t kUnlimited = UINT64_MAX;

// /proc/<pid>/limits, "Max open files" only.
struct ProcLimits {
  std::optional<uint64_t> open_files_soft;  // kUnlimited for "unlimited"
  std::optional<uint64_t> open_files_hard;
};

// /proc/meminfo; bytes.
struct MemInfo {
  std::optional<uint64_t> mem_total;
  std::optional<uint64_t> mem_available;  // Linux >= 3.14
  std::optional<uint64_t> swap_total;
  std::optional<uint64_t> swap_free;
};

// /proc/<pid>/task/<tid>/syscall: the system call a blocked thread is in, with its first
// argument and where the thread's user stack and code were. number -1: running, or blocked outside
// a system call.
struct ThreadSyscall {
  long number = -1;
  uint64_t arg0 = 0;
  uint64_t sp = 0;  // 0 while running
  uint64_t pc = 0;

  // Blocked until its standard input gives something: read(0, ...), or select()/pselect6() on
  // fd 0 alone (nfds 1), as Python's readline waits at a pdb prompt on a terminal.
  bool waits_on_stdin() const;
  // The call, when a signal handler that runs in this thread would make it fail with EINTR even
  // under SA_RESTART (signal(7)): a wait with a timeout (poll, select, epoll, a sleep, System V
  // IPC, AIO) or a socket call, which libraries rarely retry (PyTorch 1.13's TCPStore gives up
  // its connect with "Interrupted system call"). nullptr for any other call, or none.
  const char* cut_short_by_signal() const;
};

// A pid or tid as /proc names its folders and the children files list them; nullopt for any
// other name ("self", "meminfo", "0").
std::optional<int> parse_pid_name(std::string_view name);
// nullopt unless every field up to rss (24) is present and well formed.
std::optional<ProcStat> parse_proc_stat(std::string_view text);
ProcStatus parse_proc_status(std::string_view text);
SmapsRollup parse_smaps_rollup(std::string_view text);
ProcLimits parse_proc_limits(std::string_view text);
MemInfo parse_meminfo(std::string_view text);
// "running", "-1 sp pc", or "nr arg0 ... arg5 sp pc" with hexadecimal arguments.
std::optional<ThreadSyscall> parse_thread_syscall(std::string_view text);

}  // namespace traindoc::supervisor
