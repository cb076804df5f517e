// Watches each coreutils `timeout` in the job until a moment before its limit runs out, when the
// stacks of the programs below it are asked for (a hang, most often, that the limit will end).
// Supervisor process, main loop thread. Given times and command lines; asks nothing itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace traindoc::supervisor {

class TimeLimitWatch {
 public:
  // `run_start_ns`: a `timeout` started before the run (by the clocks of a time namespace) counts
  // from the run's start.
  explicit TimeLimitWatch(int64_t run_start_ns) : m_run_start_ns(run_start_ns) {}

  // A process seen for the first time, started at `start_ns` (realtime): watched when its command
  // line sets a time limit.
  void process_seen(int pid, int64_t start_ns, const std::string& cmdline);

  // The `timeout`s whose stacks are due at `t_ns`, each once. One that is gone (`is_live` says
  // not) or whose limit ran out already is forgotten without: its signal was sent.
  std::vector<int> due(int64_t t_ns, const std::function<bool(int pid)>& is_live);

  bool empty() const { return m_watches.empty(); }

 private:
  struct Watch {
    int pid = 0;
    int64_t stacks_at_ns = 0;
    int64_t limit_at_ns = 0;
  };
  int64_t m_run_start_ns;
  std::vector<Watch> m_watches;
};

}  // namespace traindoc::supervisor
