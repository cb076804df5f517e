// What traindoc does with a stop signal it receives (SIGINT, SIGTERM, SIGHUP, SIGQUIT) before it
// passes it on to the job: a second interrupt kills, and a process that got the same signal from
// the same sender already (its handler noted it through the agent) is not sent a second copy.
// Supervisor process, main loop thread. Given the notes, the live processes and a poll callback.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace traindoc::supervisor {

class StopForwarding {
 public:
  // `own_pid`: traindoc's, whose earlier copies name no copy of a signal received now.
  explicit StopForwarding(int own_pid) : m_own_pid(own_pid) {}

  // A stop signal that `pid`'s own handler got (the agent's note): which, from whom, when.
  void noted(int pid, int sig, int sender, int64_t t_ns);

  // The signal to pass on for `sig` received: SIGKILL from the second SIGINT on.
  int to_pass_on(int sig);
  // Whether this is the first stop signal received: the job's stacks are asked for then.
  bool first_stop() { return !std::exchange(m_stopped, true); }

  // The processes of `live` that got `sig` themselves from `sender` at `since_ns` or a moment
  // before (a signal sent to the whole process group, as `timeout` does, or a scheduler's to every
  // process): a second copy would interrupt their handlers, a checkpoint being saved on the way
  // out. Waits up to kNotesWaitNs for the notes of `catching` (those whose handler catches it),
  // calling `poll` (which reads the agents' notes) between looks. Sender 0 is one outside
  // traindoc's pid namespace, the same 0 in the job's notes.
  std::set<int> had_it_already(int sig, int sender, int64_t since_ns, std::vector<int> catching,
                               const std::vector<int>& live, const std::function<void()>& poll);

  // How long the notes are waited for, and how much earlier than traindoc's a process's copy may
  // have come.
  static constexpr int64_t kNotesWaitNs = 200'000'000;
  static constexpr int64_t kNotesSlackNs = 1'000'000'000;
  // The notes kept of each process: the latest.
  static constexpr size_t kNotesKept = 8;

 private:
  struct Note {
    int sig = 0;
    int sender = 0;
    int64_t t_ns = 0;
  };
  bool had_it(int pid, int sig, int sender, int64_t since_ns) const;

  int m_own_pid;
  int m_interrupts = 0;
  bool m_stopped = false;
  std::map<int, std::deque<Note>> m_notes;
};

}  // namespace traindoc::supervisor
