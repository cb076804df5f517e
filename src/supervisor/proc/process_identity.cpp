#include "supervisor/proc/process_identity.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {

bool same_process(int pid, uint64_t start_ticks) {
  std::optional<ProcStat> stat = read_proc_stat(pid);
  return stat && stat->starttime == start_ticks;
}

bool runs_below(int pid, uint64_t start_ticks, int ancestor) {
  std::optional<ProcStat> stat = read_proc_stat(pid);
  if (!stat || stat->starttime != start_ticks) return false;
  // Bounded: a parent that ends mid-walk may leave its pid to a newer process.
  for (int depth = 0; stat && depth < 1024; ++depth) {
    if (stat->ppid == ancestor) return true;
    if (stat->ppid <= 1) return false;
    stat = read_proc_stat(stat->ppid);
  }
  return false;
}

bool signal_process(int pid, uint64_t start_ticks, int sig) {
  if (pid <= 0) return false;
  auto fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) {
    if (errno == ESRCH) return false;
    return same_process(pid, start_ticks) && kill(pid, sig) == 0;
  }
  bool sent =
      same_process(pid, start_ticks) && syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0;
  close(fd);
  return sent;
}

}  // namespace traindoc::supervisor
