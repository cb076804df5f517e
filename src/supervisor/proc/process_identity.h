// Which process a pid names. A pid is free for reuse once its process is reaped, by whichever
// parent reaps it, so a pid alone may name an unrelated process by the time it is used; and a pid
// that a job process wrote (agent/slots) may name any process at all.
#pragma once

#include <cstdint>
#include <map>

namespace traindoc::supervisor {

// Processes by pid and start time (clock ticks after boot, /proc/<pid>/stat's field 22): a pid
// that comes back after its process ended is another process.
using ProcessIds = std::map<int, uint64_t>;

// Sends `sig` to `pid` if the process holding it started at `start_ticks`. Race-free through a
// pidfd: the descriptor pins the process that held the pid when it was opened, and its start time,
// read after, says whether that is ours. Kernels without pidfds (before 5.3, or a seccomp filter
// that refuses them) get the same check just before a plain kill(). Returns whether it was sent.
bool signal_process(int pid, uint64_t start_ticks, int sig);

// Whether the process holding `pid` now started at `start_ticks`.
bool same_process(int pid, uint64_t start_ticks);

struct ProcStat;

// Whether the process /proc described as `stat` is below `ancestor` now: its parent, or its
// parent's, and so on (orphans are adopted by a subreaper, which traindoc is to its job).
bool below(const ProcStat& stat, int ancestor);

// Where the process (pid, start_ticks) is now: gone (no process holds the pid with that start
// time), alive (or a zombie) below `ancestor`, or elsewhere.
enum class Whereabouts { kGone, kBelow, kElsewhere };
Whereabouts locate(int pid, uint64_t start_ticks, int ancestor);

inline bool runs_below(int pid, uint64_t start_ticks, int ancestor) {
  return locate(pid, start_ticks, ancestor) == Whereabouts::kBelow;
}

}  // namespace traindoc::supervisor
