// Tests of steady_growth() and theil_sen_slope() on synthetic memory series: steady growth with
// noise and outliers is found with its slope; noise, allocator warm-up, a one-off jump, a
// plateau and sawtooths are not leaks.
#include "analysis/growth.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace traindoc::analysis {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// Deterministic noise in [-1, 1]: the same series on every run.
double noise(int i) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
  h ^= h >> 15;
  return static_cast<double>(h % 2001) / 1000.0 - 1.0;
}

// Points at x = 0 .. n - 1 with bytes = mib(x) MiB.
std::vector<SeriesPoint> series(int n, const std::function<double(int)>& mib) {
  std::vector<SeriesPoint> out;
  for (int x = 0; x < n; ++x) out.push_back({static_cast<double>(x), mib(x) * kMiB});
  return out;
}

TEST(TheilSen, ExactOnALineAndZeroWithoutPairs) {
  EXPECT_DOUBLE_EQ(theil_sen_slope(series(10, [](int x) { return 3.0 * x + 7; })), 3.0 * kMiB);
  EXPECT_EQ(theil_sen_slope({}), 0);
  EXPECT_EQ(theil_sen_slope({{1, 5}}), 0);
  EXPECT_EQ(theil_sen_slope({{1, 5}, {1, 9}}), 0);  // same x: no slope
}

TEST(TheilSen, IgnoresAFewWildOutliers) {
  auto points = series(100, [](int x) { return 500 + 2.0 * x + (x % 10 == 3 ? 900 : 0); });
  EXPECT_NEAR(theil_sen_slope(points) / kMiB, 2.0, 0.05);
}

TEST(SteadyGrowth, SteadyGrowthWithNoiseHasItsSlope) {
  auto points = series(100, [](int x) { return 500 + 10.0 * x + 20 * noise(x); });
  std::optional<Growth> g = steady_growth(points);
  ASSERT_TRUE(g);
  EXPECT_NEAR(g->slope / kMiB, 10.0, 0.3);
  EXPECT_EQ(g->from_x, 20);  // the first 20% is warm-up
  EXPECT_EQ(g->to_x, 99);
  EXPECT_EQ(g->points, 80u);
  EXPECT_EQ(g->growing_quarters, 4u);
  EXPECT_NEAR(g->growth_bytes() / kMiB, 790, 30);
  EXPECT_NEAR(g->from_bytes / kMiB, 710, 30);
  EXPECT_NEAR(g->to_bytes / kMiB, 1480, 30);
}

TEST(SteadyGrowth, OrderOfThePointsDoesNotMatter) {
  auto points = series(60, [](int x) { return 200 + 5.0 * x; });
  std::vector<SeriesPoint> reversed(points.rbegin(), points.rend());
  ASSERT_TRUE(steady_growth(reversed));
  EXPECT_DOUBLE_EQ(steady_growth(reversed)->slope, steady_growth(points)->slope);
}

TEST(SteadyGrowth, ShortSpikesDoNotHideALeak) {
  // An evaluation pass every 40 steps holds 1 GiB for 3 samples, then gives it back.
  auto points = series(200, [](int x) { return 500 + 5.0 * x + (x % 40 < 3 ? 1024 : 0); });
  std::optional<Growth> g = steady_growth(points);
  ASSERT_TRUE(g);
  EXPECT_NEAR(g->slope / kMiB, 5.0, 0.1);
}

TEST(SteadyGrowth, NoiseAloneIsNotALeak) {
  EXPECT_FALSE(steady_growth(series(200, [](int x) { return 2000 + 300 * noise(x); })));
}

TEST(SteadyGrowth, AllocatorWarmUpThenFlatIsNotALeak) {
  EXPECT_FALSE(steady_growth(series(100, [](int x) { return x < 5 ? 300 + 200.0 * x : 1300; })));
}

TEST(SteadyGrowth, OneJumpAfterWarmUpIsNotALeak) {
  // A one-off cache of 1 GiB filled at step 35, then flat with noise.
  EXPECT_FALSE(
      steady_growth(series(100, [](int x) { return 300 + (x >= 35 ? 1024 : 0) + 5 * noise(x); })));
}

TEST(SteadyGrowth, GrowthThatStoppedIsNotALeak) {
  // A cache that filled over three quarters of the run, then a plateau.
  EXPECT_FALSE(steady_growth(series(100, [](int x) { return 300 + 10.0 * std::min(x, 75); })));
}

TEST(SteadyGrowth, SawtoothsAreNotLeaks) {
  // A list of outputs cleared every epoch, short and long epochs.
  EXPECT_FALSE(steady_growth(series(200, [](int x) { return 300 + 10.0 * (x % 25); })));
  EXPECT_FALSE(steady_growth(series(200, [](int x) { return 300 + 10.0 * (x % 90); })));
}

TEST(SteadyGrowth, TooLittleGrowthIsNotALeak) {
  // 40 MiB in all: under the absolute floor.
  EXPECT_FALSE(steady_growth(series(100, [](int x) { return 500 + 0.5 * x; })));
  // 100 MiB on 8 GiB: under the relative floor.
  EXPECT_FALSE(steady_growth(series(100, [](int x) { return 8192 + 1.25 * x; })));
}

TEST(SteadyGrowth, TooFewPointsIsNotEnoughEvidence) {
  EXPECT_FALSE(steady_growth(series(9, [](int x) { return 100 + 100.0 * x; })));
  EXPECT_TRUE(steady_growth(series(10, [](int x) { return 100 + 100.0 * x; })));
  EXPECT_FALSE(steady_growth({}));
}

TEST(SteadyGrowth, ASpanShorterThanTheMinimumIsNotEnoughEvidence) {
  GrowthLimits limits;
  limits.min_span = 80;  // the span after warm-up is 20 .. 99
  auto points = series(100, [](int x) { return 500 + 10.0 * x; });
  EXPECT_FALSE(steady_growth(points, limits));
  limits.min_span = 79;
  EXPECT_TRUE(steady_growth(points, limits));
}

TEST(SteadyGrowth, ShrinkingIsNotALeak) {
  EXPECT_FALSE(steady_growth(series(100, [](int x) { return 2000 - 10.0 * x; })));
}

}  // namespace
}  // namespace traindoc::analysis
