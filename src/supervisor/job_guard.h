// JobGuard: ends the job when traindoc ends before it without finishing the run (a kill -9 of
// traindoc alone, a fault of its own), so that no rank stays hung in a collective, holding its
// GPU until a timeout, with nobody watching. The guard is a process of its own, started by
// `traindoc run` before anything starts a thread, and not traindoc's child (the supervisor's walk
// of its children must not see it); it waits on a pipe that only traindoc holds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "supervisor/proc/process_identity.h"

namespace traindoc::supervisor {

// The job's live processes, whichever parent they have now (once traindoc is gone they are
// orphans): those whose environment names `run_dir` as their run folder, those of `recorded`
// (run.db holds them as running; they may have dropped their environment, or run as another
// user), and the descendants of both. Zombies are not: nothing is left of them to end.
ProcessIds processes_of_run(const std::string& run_dir, const ProcessIds& recorded = {});

class JobGuard {
 public:
  // Starts the guard. `announce`: it says on stderr what it does (--silent: not). `report`,
  // called in the guard once it has ended the job, writes the reports from run.db.
  JobGuard(const std::string& run_dir, bool announce, const std::function<void()>& report);
  // Without release(): the guard ends the job.
  ~JobGuard();
  JobGuard(const JobGuard&) = delete;
  JobGuard& operator=(const JobGuard&) = delete;

  // The run is finished: the guard exits, and leaves whatever still runs alone.
  void release();

  // Not traindoc's child, except where traindoc is the first process of a pid namespace (a
  // container's): orphans are then its own.
  pid_t pid() const { return m_pid; }

 private:
  int m_fd = -1;  // the pipe's write end: closed without a byte written, traindoc has ended
  pid_t m_pid = -1;
};

}  // namespace traindoc::supervisor
