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

// How long the run lasted, where its times tell: both recorded (wall-clock times, so after 1970)
// and the end not before the start. None for a run still going or one whose times are absurd.
inline std::optional<int64_t> run_duration_ns(const store::RunInfo& run) {
  if (run.start_ns <= 0 || run.end_ns < run.start_ns) return std::nullopt;
  return run.end_ns - run.start_ns;
}

}  // namespace traindoc::report
