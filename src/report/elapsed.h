// Differences of the report's times that cannot overflow. run.db's times are whatever it holds (a
// clock set far off, a damaged or planted file), and the report must still be written and read
// sensibly: no wrapped, negative or undefined duration. Any process; pure.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "store/evidence.h"

namespace traindoc::report {

// to - from, saturated at int64's limits.
inline int64_t elapsed_ns(int64_t from, int64_t to) {
  int64_t out = 0;
  if (!__builtin_sub_overflow(to, from, &out)) return out;
  return to > from ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// The same, in seconds.
inline double elapsed_s(int64_t from, int64_t to) {
  return static_cast<double>(elapsed_ns(from, to)) / 1e9;
}

// t + by, saturated at int64's limits.
inline int64_t shifted_ns(int64_t t, int64_t by) {
  int64_t out = 0;
  if (!__builtin_add_overflow(t, by, &out)) return out;
  return by > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

// How long the run lasted, where its times tell: both recorded (wall-clock times, so after 1970)
// and the end not before the start. None for a run still going or one whose times are absurd.
inline std::optional<int64_t> run_duration_ns(const store::RunInfo& run) {
  if (run.start_ns <= 0 || run.end_ns < run.start_ns) return std::nullopt;
  return run.end_ns - run.start_ns;
}

}  // namespace traindoc::report
