// A stop signal that traindoc passed on to its job, as a signal-forwarded event holds it: the
// signal, the processes it reached and its sender are the event's facts; its text and the request
// a title names are made of them. Made by the supervisor, read by the analysis. Pure.
#pragma once

#include <cstdint>
#include <string>

#include "store/evidence.h"

namespace traindoc::store {

// Who sent a signal, as the kernel told it (signalfd_siginfo).
struct SignalSender {
  int pid = 0;       // 0: the kernel (a terminal), or a sender outside traindoc's pid namespace
  int code = 0;      // si_code: SI_KERNEL for a terminal's, SI_USER for kill(), ...
  std::string name;  // its /proc comm at the signal's arrival; empty when it had gone
};

struct ForwardedSignal {
  int sig = 0;         // the event's a: the signal passed on; SIGKILL is the second interrupt's
  int64_t sent = 0;    // the event's b: the processes it was passed on to
  SignalSender from;   // the event's pid, c and name
  int64_t had_it = 0;  // the processes not sent it, which had it from the sender already
};

// The event, at `t_ns` (its arrival). Its text: "SIGTERM from pid 4242 (slurmstepd), passed on to
// 3 process(es) (1 had it already)", "SIGKILL at the second interrupt, sent to 3 process(es)".
Event forwarded_event(int64_t t_ns, const ForwardedSignal& signal);

// The sender in words: "the terminal", "pid 4242 (slurmstepd)", "pid 4242" (gone before it was
// looked at), or a process outside traindoc's pid namespace.
std::string sender_words(const SignalSender& sender);

// Whether the event is the second interrupt's SIGKILL.
bool second_interrupt(const Event& event);

// The request the event tells, for a title: "SIGTERM from pid 4242 (slurmstepd)", "SIGKILL at
// the second interrupt", "SIGTERM" (a file too old to name the sender); an event without a signal
// (words no traindoc wrote) is told as its text says.
std::string forwarded_request(const Event& event);

}  // namespace traindoc::store
