// Tests of the smaps_rollup pacer: the base period while reads are cheap, a longer one that keeps
// a round's reads within the budget when they are not, a larger budget under memory pressure,
// and the costs of processes gone.
#include "supervisor/proc/smaps_pacer.h"

#include <gtest/gtest.h>

namespace traindoc::supervisor {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1000 * kMs;

// Base period 5 s, reads may come 0.5 s early, 0.5 % of a core: 25 ms of reads per 5 s.
SmapsPacer pacer() {
  return SmapsPacer(5 * kSecond, kSecond / 2, 0.005);
}

TEST(SmapsPacer, FirstSightingIsDueThenOncePerBasePeriod) {
  SmapsPacer p = pacer();
  EXPECT_TRUE(p.due(10, 100, 0));
  p.read(10, 100, 0, 1 * kMs);
  EXPECT_FALSE(p.due(10, 100, 4 * kSecond));
  EXPECT_TRUE(p.due(10, 100, 4'600 * kMs));  // a walk a little early still counts
  EXPECT_TRUE(p.due(11, 100, 1 * kSecond));  // another process has its own time
  EXPECT_EQ(p.period_ns(), 5 * kSecond);
}

TEST(SmapsPacer, CostlyReadsStretchThePeriodToTheBudget) {
  SmapsPacer p = pacer();
  // Eight ranks of 2 GiB: 14 ms each, 112 ms a round, 22.4 s at 0.5 % of a core.
  for (int pid = 1; pid <= 8; ++pid) p.read(pid, 7, 0, 14 * kMs);
  EXPECT_EQ(p.period_ns(), 22'400 * kMs);
  EXPECT_FALSE(p.due(1, 7, 10 * kSecond));
  EXPECT_TRUE(p.due(1, 7, 22 * kSecond));
  // Their cost is what their last read cost.
  for (int pid = 1; pid <= 8; ++pid) p.read(pid, 7, 22 * kSecond, 1 * kMs);
  EXPECT_EQ(p.period_ns(), 5 * kSecond);
}

TEST(SmapsPacer, MemoryPressureGivesTheReadsFourTimesTheBudget) {
  SmapsPacer p = pacer();
  for (int pid = 1; pid <= 8; ++pid) p.read(pid, 7, 0, 14 * kMs);
  p.set_pressure(true);
  EXPECT_EQ(p.period_ns(), 5'600 * kMs);
  EXPECT_TRUE(p.due(1, 7, 5'200 * kMs));
  p.set_pressure(false);
  EXPECT_EQ(p.period_ns(), 22'400 * kMs);
}

TEST(SmapsPacer, ProcessesGoneNoLongerCount) {
  SmapsPacer p = pacer();
  p.read(1, 7, 0, 50 * kMs);
  p.read(2, 7, 0, 50 * kMs);
  EXPECT_EQ(p.period_ns(), 20 * kSecond);
  p.retain({2});
  EXPECT_EQ(p.period_ns(), 10 * kSecond);
  EXPECT_TRUE(p.due(1, 7, 1 * kSecond));
  // A pid reused by a new process: the old one's cost is dropped at the new one's first read.
  p.read(2, 8, 1 * kSecond, 1 * kMs);
  EXPECT_EQ(p.period_ns(), 5 * kSecond);
}

}  // namespace
}  // namespace traindoc::supervisor
