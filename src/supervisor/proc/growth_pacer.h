// When the walk of the job's processes comes sooner than its interval: while a process's RSS
// grows fast, a job of a few seconds leaks hundreds of MiB between two walks of the default
// 1 s, and its growth needs more samples than the interval gives to be told from warm-up and
// noise. Supervisor process, main loop thread. Given each walk's samples; reads nothing itself.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "store/evidence.h"

namespace traindoc::supervisor {

class GrowthPacer {
 public:
  // `interval_ns`: the walks' period when memory is quiet. `tick_ns`: the shortest period there
  // is (the loop's timer). `budget`: the fraction of one core the extra walks may take.
  GrowthPacer(int64_t interval_ns, int64_t tick_ns, double budget);

  // One walk at `t_ns` saw `samples` and cost `cost_ns` of the supervisor's CPU.
  void walked(int64_t t_ns, const std::vector<store::ProcSample>& samples, int64_t cost_ns);
  // The walks' period at `t_ns`: the interval, or a fifth of it (a tick at least) while a
  // process's RSS grew fast in the last seconds and the walks stay within the budget.
  int64_t period_ns(int64_t t_ns) const;

  // A process's RSS growing this fast (bytes per second) makes the walks faster: 64 MiB, the
  // least growth the leak rule calls a leak, in 4 s.
  static constexpr double kFastBytesPerSecond = 16.0 * 1024 * 1024;
  // How long the walks stay fast after the last fast growth seen.
  static constexpr int64_t kHoldNs = 3'000'000'000;
  static constexpr int kSpeedUp = 5;

 private:
  int64_t m_interval_ns;
  int64_t m_fast_ns;
  double m_budget;
  int64_t m_fast_until_ns = 0;
  int64_t m_cost_ns = 0;  // of the last walk
  // Each process's last sample: its time and RSS.
  std::map<std::pair<int, uint64_t>, std::pair<int64_t, uint64_t>> m_last;
};

}  // namespace traindoc::supervisor
