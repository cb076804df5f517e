// Steady growth of a memory series: a robust slope after warm-up, and the checks that tell a leak
// from noise, allocator warm-up, a one-off cache, a plateau or a sawtooth. Pure; used by the
// leak rule (rule_memory_leak.cpp) for any series: host RSS or USS, GPU memory per process.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

namespace traindoc::analysis {

// One sample of a series: x is a step count or a time (in whatever unit the caller reports
// growth per), bytes the memory measured there.
struct SeriesPoint {
  double x = 0;
  double bytes = 0;
};

struct GrowthLimits {
  double warmup_fraction = 0.2;  // of the x range, skipped: allocator pools, caches, first batches
  size_t min_points = 8;         // after warm-up
  double min_span = 0;           // of x after warm-up: steps, or minutes
  double min_growth_bytes = 64.0 * 1024 * 1024;  // fitted growth over the fitted span
  double min_relative = 0.1;                     // ... and relative to the level after warm-up
  // Steadiness: each quarter's slope is at least this part of the whole one in 3 quarters of 4,
  // the last among them, so that one jump or growth that stopped is not a leak.
  double quarter_slope_fraction = 0.25;
  size_t min_growing_quarters = 3;
  // The largest fall from a running peak (smoothed), relative to the growth: memory that is
  // given back (a list cleared each epoch, a sawtooth) is not leaking.
  double max_drawdown = 0.3;
  // The largest rise within a tenth of the points (smoothed), relative to the growth: growth
  // that came in one piece (a cache filled once, then noise) is not a leak.
  double max_rise = 0.6;
};

struct Growth {
  double slope = 0;   // bytes per unit of x (Theil-Sen)
  double from_x = 0;  // the span fitted, after warm-up
  double to_x = 0;
  double from_bytes = 0;  // levels at both ends of the span (medians of the nearest points)
  double to_bytes = 0;
  size_t points = 0;
  size_t growing_quarters = 0;

  double growth_bytes() const { return slope * (to_x - from_x); }
};

// The median of the slopes between all pairs of points with different x; 0 with fewer than two.
// Robust: up to ~29% of the points may be outliers.
double theil_sen_slope(const std::vector<SeriesPoint>& points);

// Steady growth of `series` (any order), or nullopt: too few points, too little growth, not
// steady, or given back.
std::optional<Growth> steady_growth(std::vector<SeriesPoint> series,
                                    const GrowthLimits& limits = {});

}  // namespace traindoc::analysis
