// Tests of the growth pacer: walks at the interval while memory is quiet, five times as often
// for a while after a process's RSS grew fast, never faster than a tick, and not at all faster
// when a walk costs more than the budget allows.
#include "supervisor/proc/growth_pacer.h"

#include <gtest/gtest.h>

namespace traindoc::supervisor {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr uint64_t kMiB = 1024 * 1024;

store::ProcSample sample(int64_t t_ns, uint64_t rss, int pid = 10) {
  store::ProcSample s;
  s.t_ns = t_ns;
  s.pid = pid;
  s.start_ticks = 100;
  s.rss = rss;
  return s;
}

// 1 s interval, 100 ms ticks, 1 % of a core.
GrowthPacer pacer() {
  return GrowthPacer(kSecond, 100 * kMs, 0.01);
}

TEST(GrowthPacer, QuietMemoryKeepsTheInterval) {
  GrowthPacer p = pacer();
  p.walked(0, {sample(0, 200 * kMiB)}, kMs / 10);
  p.walked(kSecond, {sample(kSecond, 210 * kMiB)}, kMs / 10);  // 10 MiB/s: not fast
  EXPECT_EQ(p.period_ns(kSecond), kSecond);
}

TEST(GrowthPacer, FastGrowthShortensThePeriodForAWhile) {
  GrowthPacer p = pacer();
  p.walked(0, {sample(0, 200 * kMiB)}, kMs / 10);
  p.walked(kSecond, {sample(kSecond, 280 * kMiB)}, kMs / 10);  // 80 MiB/s
  EXPECT_EQ(p.period_ns(kSecond), 200 * kMs);
  // Flat again: fast for the hold time after the last fast growth, then the interval.
  p.walked(kSecond + 200 * kMs, {sample(kSecond + 200 * kMs, 280 * kMiB)}, kMs / 10);
  EXPECT_EQ(p.period_ns(kSecond + 200 * kMs), 200 * kMs);
  EXPECT_EQ(p.period_ns(kSecond + GrowthPacer::kHoldNs), kSecond);
}

TEST(GrowthPacer, AnyProcessGrowingFastCountsAndANewOneDoesNot) {
  GrowthPacer p = pacer();
  p.walked(0, {sample(0, 200 * kMiB, 10)}, kMs / 10);
  // Process 11 appears with 1 GiB: a first sample is no growth.
  p.walked(kSecond, {sample(kSecond, 200 * kMiB, 10), sample(kSecond, 1024 * kMiB, 11)}, kMs / 10);
  EXPECT_EQ(p.period_ns(kSecond), kSecond);
  p.walked(2 * kSecond, {sample(2 * kSecond, 200 * kMiB, 10), sample(2 * kSecond, 1100 * kMiB, 11)},
           kMs / 10);
  EXPECT_EQ(p.period_ns(2 * kSecond), 200 * kMs);
}

TEST(GrowthPacer, CostlyWalksStayAtTheInterval) {
  GrowthPacer p = pacer();
  p.walked(0, {sample(0, 200 * kMiB)}, 3 * kMs);
  p.walked(kSecond, {sample(kSecond, 400 * kMiB)}, 3 * kMs);  // 3 ms a walk: 1.5 % at 200 ms
  EXPECT_EQ(p.period_ns(kSecond), kSecond);
}

TEST(GrowthPacer, NeverFasterThanATick) {
  GrowthPacer p(200 * kMs, 100 * kMs, 0.01);
  p.walked(0, {sample(0, 200 * kMiB)}, kMs / 10);
  p.walked(200 * kMs, {sample(200 * kMs, 300 * kMiB)}, kMs / 10);
  EXPECT_EQ(p.period_ns(200 * kMs), 100 * kMs);
  GrowthPacer tick(100 * kMs, 100 * kMs, 0.01);
  tick.walked(0, {sample(0, 200 * kMiB)}, kMs / 10);
  tick.walked(100 * kMs, {sample(100 * kMs, 300 * kMiB)}, kMs / 10);
  EXPECT_EQ(tick.period_ns(100 * kMs), 100 * kMs);
}

}  // namespace
}  // namespace traindoc::supervisor
