// The words of a signal-forwarded event, made of its facts. Pure.
#include "store/forwarded_signal.h"

#include <signal.h>

#include "store/signal_words.h"

namespace traindoc::store {
namespace {

std::string processes(int64_t n) {
  return std::to_string(n) + " process(es)";
}

}  // namespace

std::string sender_words(const SignalSender& sender) {
  if (sender.code == SI_KERNEL) return "the terminal";
  // The kernel gives 0 for a sender it cannot name in our pid namespace: the stop of the
  // container traindoc runs in, which its runtime sends from the host.
  if (sender.pid == 0) {
    return "a process outside traindoc's pid namespace (its container's runtime or host: docker "
           "stop or a Kubernetes pod's end)";
  }
  std::string out = "pid " + std::to_string(sender.pid);
  if (!sender.name.empty()) out += " (" + sender.name + ")";
  return out;
}

Event forwarded_event(int64_t t_ns, const ForwardedSignal& signal) {
  std::string text =
      signal.sig == SIGKILL
          ? signal_words(SIGKILL) + " at the second interrupt, sent to " + processes(signal.sent)
          : signal_words(signal.sig) + " from " + sender_words(signal.from) + ", passed on to " +
                processes(signal.sent) +
                (signal.had_it == 0 ? ""
                                    : " (" + std::to_string(signal.had_it) + " had it already)");
  return {t_ns,
          EventKind::kSignalForwarded,
          signal.from.pid,
          std::move(text),
          signal.sig,
          signal.sent,
          signal.from.code,
          signal.from.name};
}

bool second_interrupt(const Event& event) {
  return event.kind == EventKind::kSignalForwarded && event.a == SIGKILL;
}

std::string forwarded_request(const Event& event) {
  if (!event.a) return event.text;
  std::string sig = signal_words(static_cast<int>(*event.a));
  if (second_interrupt(event)) return sig + " at the second interrupt";
  if (!event.c) return sig;
  return sig + " from " + sender_words({event.pid, static_cast<int>(*event.c), event.name});
}

}  // namespace traindoc::store
