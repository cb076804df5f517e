// The one wall clock of traindoc: nanoseconds since the epoch (CLOCK_REALTIME), the time base
// of every record, sample and line in run.db. Header-only; async-signal-safe.
#pragma once

#include <time.h>

#include <cstdint>

namespace traindoc::common {

// Async-signal-safe.
inline int64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace traindoc::common
