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

bool below(const ProcStat& stat, int ancestor) {
  std::optional<ProcStat> at = stat;
  // Bounded: a parent that ends mid-walk may leave its pid to a newer process.
  for (int depth = 0; at && depth < 1024; ++depth) {
    if (at->ppid == ancestor) return true;
    if (at->ppid <= 1) return false;
    at = read_proc_stat(at->ppid);
  }
  return false;
}

Whereabouts locate(int pid, uint64_t start_ticks, int ancestor) {
  std::optional<ProcStat> stat = read_proc_stat(pid);
  if (!stat || stat->starttime != start_ticks) return Whereabouts::kGone;
  return below(*stat, ancestor) ? Whereabouts::kBelow : Whereabouts::kElsewhere;
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
