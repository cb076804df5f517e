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

TEST(SteadyGrowth, OneJumpWithNoisyQuartersIsNotALeak) {
  // RSS (KiB) by optimizer step of the leak tests' warm-up job on a busy machine: a one-off
  // cache of 400 MiB at step 35 of 80, then flat but for noise and a slight drift, which pass
  // for slow growth in the quarters after it. The growth is still one rise.
  const SeriesPoint kib[] = {
      {1.216, 249432},  {2.012, 251296},  {2.437, 416764},  {2.873, 466784},  {3.682, 466784},
      {4.918, 466784},  {6.211, 466784},  {7.326, 462816},  {8.328, 466788},  {9.454, 470884},
      {10.472, 466788}, {11.441, 466788}, {12.449, 474568}, {13.577, 479076}, {15.061, 471012},
      {16.326, 466788}, {17.185, 466916}, {18.132, 458724}, {19.148, 462692}, {20.414, 466792},
      {21.356, 458600}, {22.201, 458728}, {23.321, 466792}, {24.448, 466792}, {25.715, 466792},
      {27.034, 462824}, {28.135, 470888}, {29.189, 470888}, {30.077, 470888}, {30.888, 479080},
      {31.810, 470888}, {32.838, 474984}, {33.771, 470888}, {34.722, 470888}, {35.194, 565824},
      {35.466, 699936}, {35.738, 872428}, {36.038, 872428}, {37.082, 872300}, {38.137, 872428},
      {39.293, 876396}, {40.475, 880492}, {41.475, 868204}, {42.505, 880492}, {43.712, 880492},
      {45.000, 884588}, {45.749, 876524}, {46.804, 872428}, {48.011, 874492}, {49.211, 876524},
      {50.393, 872428}, {51.339, 876396}, {52.255, 868208}, {53.143, 868336}, {54.101, 876400},
      {55.297, 872432}, {56.486, 880496}, {57.840, 880496}, {59.123, 880496}, {60.562, 872432},
      {61.619, 876400}, {62.556, 876400}, {63.639, 872304}, {64.931, 884592}, {65.808, 876400},
      {66.886, 884592}, {68.024, 876404}, {69.092, 876532}, {69.982, 888692}, {70.808, 876404},
      {71.637, 876404}, {72.490, 877208}, {73.313, 876404}, {74.101, 880500}, {74.957, 884596},
      {75.845, 888692}, {76.605, 884596}, {77.685, 884596}, {78.601, 884596}, {79.474, 884596}};
  std::vector<SeriesPoint> points;
  for (SeriesPoint p : kib) points.push_back({p.x, p.bytes * 1024});
  EXPECT_FALSE(steady_growth(points));
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
