// Samples one process from /proc (memory, threads, CPU time, descriptors) and finds a process's
// children, for the supervisor's walk of the job's process tree each second.
// Supervisor process, sampler thread; one ProcSampler per thread (it holds the read buffers).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "store/evidence.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/proc/proc_text.h"

namespace traindoc::supervisor {

// One look at a process: the sample for the store, and the stat it came from (state, ppid,
// comm, and for a zombie the wait status its parent has not collected yet).
struct ProcSnapshot {
  store::ProcSample sample;
  ProcStat stat;
};

struct PidParent {
  int pid = 0;
  int ppid = 0;
};

class ProcSampler {
 public:
  ProcSampler();

  // Fast fields (stat and status: rss, swap, threads, CPU) on every call; with `slow` also
  // smaps_rollup (pss, uss), the descriptor count and limit, which cost more and may be denied
  // (another user's process): those then stay empty, as does fd_limit where it is unlimited.
  // A zombie gets only the fast fields. nullopt when the process is gone.
  std::optional<ProcSnapshot> sample(int pid, bool slow);
  // The slow fields for a sample taken without them: smaps_rollup's (pss, uss), whose cost
  // grows with the process's resident memory, and the descriptors', which stay cheap.
  void add_smaps(int pid, store::ProcSample& sample);
  void add_descriptors(int pid, store::ProcSample& sample);

  // Children of `pid` (zombies included until reaped), sorted, from each of its threads'
  // task/<tid>/children (the kernel lists a child under the thread that forked it): one read per
  // thread. Where the kernel has no such file (CONFIG_PROC_CHILDREN off), a scan of /proc.
  // Empty when `pid` is gone. `out` is replaced.
  void children_of(int pid, std::vector<int>& out);
  std::vector<int> children_of(int pid);

  // Every process on the machine with its parent: for callers that walk whole trees where the
  // children files are missing, one scan instead of one per process.
  void scan_parents(std::vector<PidParent>& out);

  // When a process started, on the realtime clock, from its stat's start time (clock ticks
  // since boot): exact to a tick.
  int64_t start_realtime_ns(uint64_t start_ticks) const;

  bool has_children_files() const { return m_children_files; }
  int last_errno() const { return m_reader.last_errno(); }

 private:
  ProcFileReader m_reader;
  double m_seconds_per_tick = 0.01;
  uint64_t m_page_size = 4096;
  bool m_children_files = false;
  std::vector<int> m_tids;  // reused between children_of calls
};

}  // namespace traindoc::supervisor
