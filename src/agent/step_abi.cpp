// The step counter's C entry points, called by the Python hook (python/traindoc_hook/steps.py)
// through ctypes in every job process that trains; ordinary Python code, never a signal handler.
#include <cerrno>
#include <cstdint>

#include "agent/agent.h"

namespace {

using traindoc::common::StepKind;

// The process's running totals by StepKind, counted by the hook in place (it holds them as a
// ctypes array over this memory, and zeroes them in the child of a fork): each Python collective
// record reads its step from here, as it is at the call, without an argument to convert. Written
// only by processes that train.
alignas(64) int64_t g_step_counts[4];

}  // namespace

namespace traindoc::agent {

uint64_t current_step() {
  int64_t optimizer = g_step_counts[static_cast<int>(StepKind::kOptimizer)];
  int64_t steps = optimizer != 0 ? optimizer : g_step_counts[static_cast<int>(StepKind::kBackward)];
  return steps > 0 ? static_cast<uint64_t>(steps) : 0;
}

}  // namespace traindoc::agent

// Where the hook counts: four int64 totals, indexed by StepKind (index 0 unused).
extern "C" __attribute__((visibility("default"))) int64_t* traindoc_step_counts(void) {
  return g_step_counts;
}

// `kind` is a StepKind, `count` the process's running total of that kind: one record into the
// process's ring, cheap enough for every optimizer step (the hook sends one per kind at most
// every 10 ms). Unknown kinds are dropped so that a newer hook cannot write records this
// supervisor would misread.
extern "C" __attribute__((visibility("default"))) void traindoc_step(int kind, int64_t count) {
  if (kind < static_cast<int>(StepKind::kOptimizer) ||
      kind > static_cast<int>(StepKind::kDdpForward)) {
    return;
  }
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kStep, kind, count);
  errno = saved_errno;
}
