// The words of a signal-forwarded event, made of its numbers. Pure.
#include "store/forwarded_signal.h"

#include <signal.h>

#include "store/signal_words.h"

namespace traindoc::store {
namespace {

std::string processes(int64_t n) {
  return std::to_string(n) + " process(es)";
}

std::string delivery(int64_t sent) {
  return ", passed on to " + processes(sent);
}

}  // namespace

Event forwarded_event(int64_t t_ns, int sender_pid, const ForwardedSignal& signal) {
  std::string text =
      signal.sig == SIGKILL
          ? signal_words(SIGKILL) + " at the second interrupt, sent to " + processes(signal.sent)
          : signal_words(signal.sig) + " from " + signal.sender + delivery(signal.sent) +
                (signal.had_it == 0 ? ""
                                    : " (" + std::to_string(signal.had_it) + " had it already)");
  return {t_ns, EventKind::kSignalForwarded, sender_pid, std::move(text), signal.sig, signal.sent};
}

bool second_interrupt(const Event& event) {
  return event.kind == EventKind::kSignalForwarded && event.a == SIGKILL;
}

std::string forwarded_request(const Event& event) {
  if (!event.a) return event.text;  // words no traindoc wrote: told as they are
  if (second_interrupt(event)) return signal_words(SIGKILL) + " at the second interrupt";
  std::string head = signal_words(static_cast<int>(*event.a)) + " from ";
  size_t end = std::string::npos;
  if (event.b) end = event.text.rfind(delivery(*event.b));
  if (end == std::string::npos && event.b)
    end = event.text.rfind(", sent to " + processes(*event.b));
  if (!event.text.starts_with(head) || end == std::string::npos || end < head.size()) {
    // No sender's words: "SIGTERM", as the oldest files say it.
    return signal_words(static_cast<int>(*event.a));
  }
  return event.text.substr(0, end);
}

}  // namespace traindoc::store
