// Steady growth of a memory series (Theil-Sen slope, quarters, drawdown, largest rise). Pure.
// Memory in a training job is noisy (allocator pools, batches of different sizes, the garbage
// collector), so nothing here is a least-squares fit: medians throughout.
#include "analysis/growth.h"

#include <algorithm>

namespace traindoc::analysis {
namespace {

// Pairs grow with the square of the points: a day sampled every second is thinned to this many.
constexpr size_t kMaxFitPoints = 200;
constexpr size_t kQuarters = 4;
// The running median before the drawdown and the largest rise spans a tenth of the points, at
// least this many: a spike (an evaluation pass, a checkpoint) shorter than that is smoothed
// away, a fall that lasts (a sawtooth) or a rise that lasts (a cache filled) is not.
constexpr size_t kMinSmoothing = 5;
constexpr double kLevelAgreement = 0.5;  // the levels' difference against the fitted growth

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  double upper = *middle;
  if (values.size() % 2 == 1) return upper;
  return (upper + *std::max_element(values.begin(), middle)) / 2;
}

std::vector<SeriesPoint> evenly(const std::vector<SeriesPoint>& points, size_t most) {
  if (points.size() <= most) return points;
  std::vector<SeriesPoint> out;
  out.reserve(most);
  for (size_t i = 0; i < most; ++i) out.push_back(points[i * (points.size() - 1) / (most - 1)]);
  return out;
}

std::vector<double> bytes_of(std::vector<SeriesPoint>::const_iterator from,
                             std::vector<SeriesPoint>::const_iterator to) {
  std::vector<double> out;
  for (auto it = from; it != to; ++it) out.push_back(it->bytes);
  return out;
}

// Quarters by point count, so that each has points to fit; the last one must be among the
// growing ones: growth that stopped before the end is a cache that filled, not a leak.
size_t growing_quarters(const std::vector<SeriesPoint>& points, double slope,
                        const GrowthLimits& limits, bool& last_grows) {
  size_t growing = 0;
  for (size_t q = 0; q < kQuarters; ++q) {
    std::vector<SeriesPoint> quarter(
        points.begin() + static_cast<std::ptrdiff_t>(q * points.size() / kQuarters),
        points.begin() + static_cast<std::ptrdiff_t>((q + 1) * points.size() / kQuarters));
    bool grows = theil_sen_slope(quarter) >= limits.quarter_slope_fraction * slope;
    growing += grows ? 1 : 0;
    last_grows = grows;
  }
  return growing;
}

// The series on a running median over a tenth of its points (at least kMinSmoothing), so that
// noise and short spikes are not falls or rises.
std::vector<double> levels(const std::vector<SeriesPoint>& all) {
  std::vector<SeriesPoint> points = evenly(all, kMaxFitPoints);
  size_t half = std::max(kMinSmoothing, points.size() / 10) / 2;
  std::vector<double> out;
  out.reserve(points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    size_t from = i >= half ? i - half : 0;
    size_t to = std::min(points.size(), i + half + 1);
    out.push_back(median(bytes_of(points.begin() + static_cast<std::ptrdiff_t>(from),
                                  points.begin() + static_cast<std::ptrdiff_t>(to))));
  }
  return out;
}

// The largest fall below an earlier peak.
double drawdown(const std::vector<double>& levels) {
  double peak = 0;
  double deepest = 0;
  for (size_t i = 0; i < levels.size(); ++i) {
    peak = i == 0 ? levels[i] : std::max(peak, levels[i]);
    deepest = std::max(deepest, peak - levels[i]);
  }
  return deepest;
}

// The largest rise within a tenth of the points: a leak spreads its growth over the span, a
// cache filled once puts it in one place.
double largest_rise(const std::vector<double>& levels) {
  size_t window = std::max<size_t>(1, levels.size() / 10);
  double largest = 0;
  for (size_t i = 0; i + window < levels.size(); ++i) {
    largest = std::max(largest, levels[i + window] - levels[i]);
  }
  return largest;
}

}  // namespace

double theil_sen_slope(const std::vector<SeriesPoint>& points) {
  if (points.size() < 2) return 0;
  std::vector<SeriesPoint> fit = evenly(points, kMaxFitPoints);
  std::vector<double> slopes;
  slopes.reserve(fit.size() * (fit.size() - 1) / 2);
  for (size_t i = 0; i < fit.size(); ++i) {
    for (size_t j = i + 1; j < fit.size(); ++j) {
      double dx = fit[j].x - fit[i].x;
      if (dx != 0) slopes.push_back((fit[j].bytes - fit[i].bytes) / dx);
    }
  }
  return median(std::move(slopes));
}

std::optional<Growth> steady_growth(std::vector<SeriesPoint> series, const GrowthLimits& limits) {
  if (series.size() < limits.min_points) return std::nullopt;
  std::stable_sort(series.begin(), series.end(),
                   [](const SeriesPoint& a, const SeriesPoint& b) { return a.x < b.x; });
  double warm = series.front().x + limits.warmup_fraction * (series.back().x - series.front().x);
  std::erase_if(series, [&](const SeriesPoint& p) { return p.x < warm; });
  if (series.size() < limits.min_points || series.back().x <= series.front().x ||
      series.back().x - series.front().x < limits.min_span) {
    return std::nullopt;
  }

  Growth g;
  g.slope = theil_sen_slope(series);
  g.points = series.size();
  g.from_x = series.front().x;
  g.to_x = series.back().x;
  auto ends = static_cast<std::ptrdiff_t>(std::max<size_t>(3, series.size() / 10));
  g.from_bytes = median(bytes_of(series.begin(), series.begin() + ends));
  g.to_bytes = median(bytes_of(series.end() - ends, series.end()));
  double growth = g.growth_bytes();
  if (g.slope <= 0 || growth < limits.min_growth_bytes ||
      growth < limits.min_relative * g.from_bytes ||
      g.to_bytes - g.from_bytes < kLevelAgreement * growth) {
    return std::nullopt;
  }
  bool last_grows = false;
  g.growing_quarters = growing_quarters(series, g.slope, limits, last_grows);
  if (g.growing_quarters < limits.min_growing_quarters || !last_grows) return std::nullopt;
  std::vector<double> smooth = levels(series);
  if (drawdown(smooth) > limits.max_drawdown * growth) return std::nullopt;
  if (largest_rise(smooth) > limits.max_rise * growth) return std::nullopt;
  return g;
}

}  // namespace traindoc::analysis
