// A stop signal that traindoc passed on to its job, as a signal-forwarded event holds it: the
// signal and the processes it reached are the event's numbers; its text is made of them. Made by
// the supervisor, read by the analysis. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "store/evidence.h"

namespace traindoc::store {

struct ForwardedSignal {
  int sig = 0;         // the event's a: the signal passed on; SIGKILL is the second interrupt's
  int64_t sent = 0;    // the event's b: the processes it was passed on to
  std::string sender;  // in words: "the terminal", "pid 4242 (slurmstepd)"; unused for SIGKILL
  int64_t had_it = 0;  // the processes not sent it, which had it from the sender already
};

// The event, at `t_ns` (its arrival) from `sender_pid` (0: the terminal, or a sender outside
// traindoc's pid namespace). Its text: "SIGTERM from pid 4242 (slurmstepd), passed on to 3
// process(es) (1 had it already)", "SIGKILL at the second interrupt, sent to 3 process(es)".
Event forwarded_event(int64_t t_ns, int sender_pid, const ForwardedSignal& signal);

// Whether the event is the second interrupt's SIGKILL.
bool second_interrupt(const Event& event);

// The request the event tells, for a title: "SIGTERM from pid 4242 (slurmstepd)", "SIGKILL at
// the second interrupt". The signal is its a; the sender's words, which no number holds, are its
// text's before the delivery that forwarded_event made of b (or, in older files, the words "sent
// to").
std::string forwarded_request(const Event& event);

}  // namespace traindoc::store
