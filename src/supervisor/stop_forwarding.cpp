// The stop forwarding's decisions: the second interrupt, and who had the signal already.
// Supervisor process, main loop thread.
#include "supervisor/stop_forwarding.h"

#include <signal.h>

#include <algorithm>
#include <ctime>

#include "common/clock.h"

namespace traindoc::supervisor {

void StopForwarding::noted(int pid, int sig, int sender, int64_t t_ns) {
  std::deque<Note>& notes = m_notes[pid];
  notes.push_back({sig, sender, t_ns});
  if (notes.size() > kNotesKept) notes.pop_front();
}

int StopForwarding::to_pass_on(int sig) {
  return sig == SIGINT && ++m_interrupts >= 2 ? SIGKILL : sig;
}

bool StopForwarding::had_it(int pid, int sig, int sender, int64_t since_ns) const {
  auto notes = m_notes.find(pid);
  return notes != m_notes.end() &&
         std::any_of(notes->second.begin(), notes->second.end(), [&](const Note& note) {
           return note.sig == sig && note.sender == sender && note.t_ns >= since_ns - kNotesSlackNs;
         });
}

std::set<int> StopForwarding::had_it_already(int sig, int sender, int64_t since_ns,
                                             std::vector<int> catching,
                                             const std::vector<int>& live,
                                             const std::function<void()>& poll) {
  std::set<int> out;
  if (sender < 0 || sender == m_own_pid) return out;
  auto noted_it = [&](int pid) { return had_it(pid, sig, sender, since_ns); };
  int64_t until = common::realtime_ns() + kNotesWaitNs;
  while (true) {
    poll();
    std::erase_if(catching, noted_it);
    if (catching.empty() || common::realtime_ns() >= until) break;
    constexpr timespec kPoll{0, 10'000'000};
    nanosleep(&kPoll, nullptr);
  }
  for (int pid : live) {
    if (noted_it(pid)) out.insert(pid);
  }
  return out;
}

}  // namespace traindoc::supervisor
