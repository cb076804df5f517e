// Every kind of event the supervisor stores in run.db's events table, by the name stored there.
// Adding a kind is one line here. Where an event carries facts, they are its a, b, c and name
// (named in its comment); its text says the same for people and is never parsed.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string_view>

// X(enumerator, name)
#define TRAINDOC_EVENT_KINDS(X)                                                                    \
  /* the job's processes, as the agent tells them */                                               \
  X(kScriptFinished, "script-finished") /* a Python program's end, its exit handlers run */        \
  X(kKillSent, "kill-sent")     /* a kill() a process made; a: its pid argument (killpg(g): -g) */ \
  X(kThreadDied, "thread-died") /* an exception ended a thread; text: its name */                  \
  /* a loss rejected a label; a: it, b: the classes, c: the targets' largest label */              \
  X(kLabelOutOfRange, "label-out-of-range")                                                        \
  /* a parameter DDP's reducer named by index; a: its index, name: the parameter's name */         \
  X(kDdpParameter, "ddp-parameter")                                                                \
  /* the batch size of the DataLoader a process steps on, when it changes; a: it */                \
  X(kBatchSize, "batch-size")                                                                      \
  X(kStdinWait, "stdin-wait") /* a process blocked reading its terminal */                         \
  /* the supervisor's watches */                                                                   \
  X(kJobIdle, "job-idle")                                                                          \
  X(kJobResumed, "job-resumed")                                                                    \
  /* a stop passed on; a: the signal, b: the processes sent it, c: its sender's si_code, */        \
  /* pid: its sender (0: the kernel, or one outside our pid namespace), name: its comm */          \
  X(kSignalForwarded, "signal-forwarded")                                                          \
  X(kTraindocAbort, "traindoc-abort") /* --on-mismatch abort stopped the job */                    \
  X(kTrialEnded, "trial-ended")       /* traindoc fit ended a trial; a: its optimizer steps, or */ \
                                      /* b: the ms its memory stayed flat (no steps counted)    */ \
  X(kHostCpu, "host-cpu")             /* the host's CPU, for crash texts */                        \
  /* stack dumps asked for at a moment; text: the process's frames */                              \
  X(kStackAtStall, "stack-at-stall")                                                               \
  X(kStackAtStop, "stack-at-stop")                                                                 \
  X(kStackAtIdle, "stack-at-idle")                                                                 \
  X(kStackAtLimit, "stack-at-limit")                                                               \
  /* evidence that is missing, and why */                                                          \
  X(kAgentUnavailable, "agent-unavailable")                                                        \
  X(kAgentNoSlot, "agent-no-slot")                                                                 \
  X(kAgentSlotRefused, "agent-slot-refused")                                                       \
  X(kAgentRecordsDropped, "agent-records-dropped")                                                 \
  /* a process's NCCL calls that could not be seen; a: common::NcclNotVisible, why */              \
  X(kCollectivesNotVisible, "collectives-not-visible")                                             \
  X(kStoreFailed, "store-failed")                                                                  \
  X(kKernelLogUnavailable, "kernel-log-unavailable") /* the OOM killer's own account is missing */ \
  /* the kernel log's records overwritten before they were read, a running total; a: it, */        \
  /* b: when the log was last read to its end before the loss (they were written after it) */      \
  X(kKernelLogRecordsLost, "kernel-log-records-lost")                                              \
  X(kPreflightFailed, "preflight-failed") /* the checks at the start could not run; text: why */   \
  X(kSupervisorLost, "supervisor-lost")

namespace traindoc::store {

enum class EventKind : uint8_t {
#define TRAINDOC_EVENT_KIND_ENUMERATOR(enumerator, name) enumerator,
  TRAINDOC_EVENT_KINDS(TRAINDOC_EVENT_KIND_ENUMERATOR)
#undef TRAINDOC_EVENT_KIND_ENUMERATOR
};

std::string_view to_string(EventKind kind);
// The kind of that name; none for a name of no kind (a run.db of another version).
std::optional<EventKind> event_kind_named(std::string_view name);
// Every kind, in the order above.
std::span<const EventKind> all_event_kinds();
std::ostream& operator<<(std::ostream& out, EventKind kind);

}  // namespace traindoc::store
