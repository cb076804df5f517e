// Durations of the report's times: the saturating arithmetic of store/time_math.h, and the run's
// length where its times tell one. Any process; pure.
#pragma once

#include <cstdint>
#include <optional>

#include "store/evidence.h"
#include "store/time_math.h"

namespace traindoc::report {

using store::elapsed_ns;
using store::elapsed_s;
using store::shifted_ns;

// How long the run lasted, where its times tell one (store::duration_ns) and its start was
// recorded (0: not). None for a run still going or one whose times are absurd.
inline std::optional<int64_t> run_duration_ns(const store::RunInfo& run) {
  if (run.start_ns == 0) return std::nullopt;
  return store::duration_ns(run.start_ns, run.end_ns);
}

}  // namespace traindoc::report
