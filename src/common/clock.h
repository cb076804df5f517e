// The one wall clock of traindoc: nanoseconds since the epoch (CLOCK_REALTIME), the time base
// of every record, sample and line in run.db; and the read of any other clock in nanoseconds.
// Header-only; async-signal-safe.
#pragma once

#include <time.h>

#include <cstdint>

namespace traindoc::common {

// Async-signal-safe.
inline int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Async-signal-safe.
inline int64_t realtime_ns() {
  return clock_ns(CLOCK_REALTIME);
}

// The same clock at the kernel tick's resolution (1-4 ms), at a fifth of the cost on virtual
// machines whose clock source makes the precise read a paravirtual call: for records made on
// every collective, where milliseconds are precise enough. Async-signal-safe.
inline int64_t coarse_realtime_ns() {
  return clock_ns(CLOCK_REALTIME_COARSE);
}

}  // namespace traindoc::common
