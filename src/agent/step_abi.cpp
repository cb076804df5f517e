// The step counter's C entry point, called by the Python hook (python/traindoc_hook/steps.py)
// through ctypes in every job process that trains; ordinary Python code, never a signal handler.
// One record per call into the process's ring: cheap enough for every optimizer step.
#include <cerrno>
#include <cstdint>

#include "agent/agent.h"

// `kind` is a common::StepKind, `count` the process's running total of that kind; unknown kinds
// are dropped so that a newer hook cannot write records this supervisor would misread.
extern "C" __attribute__((visibility("default"))) void traindoc_step(int kind, int64_t count) {
  using traindoc::common::StepKind;
  if (kind < static_cast<int>(StepKind::kOptimizer) ||
      kind > static_cast<int>(StepKind::kDdpForward)) {
    return;
  }
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kStep, kind, count);
  errno = saved_errno;
}
