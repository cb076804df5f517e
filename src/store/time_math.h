// Arithmetic on run.db's times that cannot overflow. Those times are whatever the file holds (a
// clock set far off, a damaged or planted file), and the analysis and the report must still be
// total and read sensibly: no wrapped, negative or undefined duration. Any process; pure.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

namespace traindoc::store {

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

// Longer than any run: times further apart than this are a clock far off or a damaged file.
inline constexpr int64_t kLongestDurationNs = int64_t{100} * 366 * 86'400 * 1'000'000'000;

// to - from where both are times of the clock (not before its origin), `to` is not before
// `from`, and they lie within a run's reach of each other; none for times that tell no
// duration. What the analysis writes in words goes through here.
inline std::optional<int64_t> duration_ns(int64_t from, int64_t to) {
  if (from < 0 || to < from || to - from > kLongestDurationNs) return std::nullopt;
  return to - from;
}

// How far apart a and b are, saturated at INT64_MAX.
inline int64_t distance_ns(int64_t a, int64_t b) {
  return a < b ? elapsed_ns(a, b) : elapsed_ns(b, a);
}

}  // namespace traindoc::store
