// The batch-size search of `traindoc fit` (batch_search.h). Pure.
#include "analysis/batch_search.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace traindoc::analysis {
namespace {

// The second trial is this many times the first: far enough apart that an allocator's rounding
// (2 MiB blocks, 20 MiB segments) moves the slope little, near enough to fit most of the time.
constexpr int kSecondTrialFactor = 8;
// Peaks that grow less than this over the batches measured do not grow with the batch: page and
// block rounding alone moves a peak by a few MiB.
constexpr double kNoGrowthBytes = 4.0 * (1 << 20);
// The two largest batches measured give the slope where the answer is when their peaks lie this
// far apart: enough above the rounding for a slope to extrapolate.
constexpr double kSlopeBytes = 16.0 * (1 << 20);
// The same batch peaks up to this far apart from run to run (the allocator, the pages an
// interpreter touches). Predictions aim half of it below the usable memory, so that the batch
// they name fits on most runs, not only on a lucky one: aimed at the limit itself, one trial in
// two went over and cost another. But never more than this share of the batch below: where a
// sample is small against the spread, that share costs less than the trial it may save.
constexpr double kPeakSpreadBytes = 17.0 * (1 << 20);
constexpr double kSpreadAimShare = 0.025;
// A batch between the largest that fit and a failure this close above it is not worth a trial:
// the answer is then within 5 % of the truth, and never above it.
constexpr double kEnoughGain = 0.05;
// Nor is a prediction this close above the largest batch that fit, where no failure bounds it:
// a peak a little off from run to run moves the prediction by as much. Nor one up to
// kEnoughGain above it whose samples add less memory than a run-to-run spread: the prediction
// is not that exact.
constexpr double kEnoughPredictedGain = 0.02;
// After a predicted batch failed without a measurement, the next trial goes this far from the
// largest batch that fit towards it.
constexpr double kBelowFailure = 0.85;
// A prediction over this many times the largest batch measured is aimed this far towards.
constexpr double kFarBeyond = 4;
constexpr double kShortOfFar = 0.8;

double median(std::vector<double> values) {
  size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle),
                   values.end());
  double upper = values[middle];
  if (values.size() % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(middle)) +
          upper) /
         2;
}

// The trials' peaks by meter, of the trials that ran to a measurement (a crash's last sample
// is only a lower bound of what it needed).
std::map<std::string, std::vector<std::pair<int, uint64_t>>> measured(
    const std::vector<Trial>& trials) {
  std::map<std::string, std::vector<std::pair<int, uint64_t>>> points;
  for (const Trial& trial : trials) {
    if (trial.outcome != TrialOutcome::kFits && trial.outcome != TrialOutcome::kOverBudget) {
      continue;
    }
    for (const auto& [meter, peak] : trial.peaks) points[meter].emplace_back(trial.batch, peak);
  }
  return points;
}

struct Bracket {
  int fits = 0;         // the largest batch that fit; 0: none yet
  int fails = INT_MAX;  // the smallest batch that did not fit
};

Bracket bracket_of(const std::vector<Trial>& trials) {
  Bracket bracket;
  bracket.fits = largest_fit(trials);
  for (const Trial& trial : trials) {
    if (trial.outcome != TrialOutcome::kFits) bracket.fails = std::min(bracket.fails, trial.batch);
  }
  return bracket;
}

// The largest batch a line says fits in `usable`; INT_MAX where it does not grow.
double predicted(const MemoryModel& model, uint64_t usable) {
  if (model.per_sample_bytes <= 0) return static_cast<double>(INT_MAX);
  return std::floor((static_cast<double>(usable) - model.fixed_bytes) / model.per_sample_bytes);
}

// The batch at which the line through two measured peaks reaches `usable`; empty where the
// peaks lie closer than `apart` (rounding would make the slope) or do not rise with the batch.
std::optional<double> through(const std::pair<int, uint64_t>& a, const std::pair<int, uint64_t>& b,
                              uint64_t usable, double apart) {
  double rise = static_cast<double>(b.second) - static_cast<double>(a.second);
  int run = b.first - a.first;
  if (run == 0 || rise / run <= 0 || std::abs(rise) < apart) return std::nullopt;
  return std::floor(a.first +
                    (static_cast<double>(usable) - static_cast<double>(a.second)) * run / rise);
}

// The largest batch a meter's measured peaks say fits in `usable`. Once a trial went over it:
// on the line through the two peaks nearest it (a secant, which converges where bracketing from
// a far end creeps), else between the batches on either side. Else on the line through the two
// largest batches where their peaks lie far enough apart (the curve's slope where the answer
// is, which a curve that bends makes differ from the whole line's), else on `model`.
double predicted(std::vector<std::pair<int, uint64_t>> points, const MemoryModel& model,
                 uint64_t usable) {
  std::sort(points.begin(), points.end());
  auto above = std::find_if(points.begin(), points.end(),
                            [usable](const auto& point) { return point.second > usable; });
  if (above != points.end()) {
    std::vector<std::pair<int, uint64_t>> nearest = points;
    auto distance = [usable](const auto& point) {
      return std::abs(static_cast<double>(point.second) - static_cast<double>(usable));
    };
    std::sort(nearest.begin(), nearest.end(),
              [&](const auto& a, const auto& b) { return distance(a) < distance(b); });
    for (size_t i = 1; i < nearest.size(); ++i) {
      if (std::optional<double> batch = through(nearest[0], nearest[i], usable, kNoGrowthBytes)) {
        return *batch;
      }
    }
    if (above != points.begin()) {
      if (std::optional<double> batch = through(*std::prev(above), *above, usable, 0)) {
        return *batch;
      }
    }
  } else if (points.size() >= 3) {
    if (std::optional<double> batch =
            through(points[points.size() - 2], points.back(), usable, kSlopeBytes)) {
      return *batch;
    }
  }
  return predicted(model, usable);
}

// A prediction far beyond the batches measured is aimed short of: a curve that bends a little
// is far off there, and a batch that fits near it measures the slope where it matters.
double aimed(double predicted, const std::vector<std::pair<int, uint64_t>>& points) {
  int largest = std::max_element(points.begin(), points.end())->first;
  if (predicted <= static_cast<double>(largest) * kFarBeyond) return predicted;
  return largest + std::floor((predicted - largest) * kShortOfFar);
}

// Whether a meter's peaks grow with the batch over the batches measured.
bool grows(const MemoryModel& model, const std::vector<std::pair<int, uint64_t>>& points) {
  auto [low, high] = std::minmax_element(points.begin(), points.end());
  return model.per_sample_bytes * (high->first - low->first) >= kNoGrowthBytes;
}

SearchStep ended(SearchStep step, SearchEnd end, int answer = 0) {
  step.end = end;
  step.answer = answer;
  return step;
}

// The next trial where the first one (--min) did not fit: one more, twice as large, only where
// both can be measured, to tell the fixed cost.
SearchStep after_min_failed(const SearchLimits& limits, const std::vector<Trial>& trials,
                            SearchStep step) {
  const Trial& first = trials.front();
  if (first.outcome == TrialOutcome::kOverBudget && trials.size() == 1) {
    step.next_batch = first.batch * 2;
    return step;
  }
  for (const auto& [meter, model] : step.models) {
    auto usable = limits.usable.find(meter);
    if (usable != limits.usable.end() && model.fixed_bytes >= static_cast<double>(usable->second)) {
      step.limiting = meter;
      return ended(step, SearchEnd::kBelowFixed);
    }
  }
  return ended(step, SearchEnd::kMinFails);
}

}  // namespace

const char* to_string(TrialOutcome outcome) {
  switch (outcome) {
    case TrialOutcome::kFits:
      return "fits";
    case TrialOutcome::kOverBudget:
      return "over budget";
    case TrialOutcome::kOutOfMemory:
      return "out of memory";
    case TrialOutcome::kFailed:
      return "failed";
  }
  return "failed";
}

int largest_fit(const std::vector<Trial>& trials) {
  int largest = 0;
  for (const Trial& trial : trials) {
    if (trial.outcome == TrialOutcome::kFits) largest = std::max(largest, trial.batch);
  }
  return largest;
}

std::optional<MemoryModel> fit_memory(const std::vector<std::pair<int, uint64_t>>& points) {
  std::vector<double> slopes;
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      if (points[i].first == points[j].first) continue;
      slopes.push_back(
          (static_cast<double>(points[j].second) - static_cast<double>(points[i].second)) /
          (points[j].first - points[i].first));
    }
  }
  if (slopes.empty()) return std::nullopt;
  MemoryModel model;
  model.per_sample_bytes = median(slopes);
  std::vector<double> intercepts;
  intercepts.reserve(points.size());
  for (const auto& [batch, peak] : points) {
    intercepts.push_back(static_cast<double>(peak) - model.per_sample_bytes * batch);
  }
  model.fixed_bytes = median(intercepts);
  return model;
}

SearchStep next_search_step(const SearchLimits& limits, const std::vector<Trial>& trials) {
  SearchStep step;
  if (trials.empty()) {
    step.next_batch = limits.min_batch;
    return step;
  }
  if (trials.back().outcome == TrialOutcome::kFailed) return ended(step, SearchEnd::kTrialFailed);
  std::map<std::string, std::vector<std::pair<int, uint64_t>>> points = measured(trials);
  for (const auto& [meter, meter_points] : points) {
    if (std::optional<MemoryModel> model = fit_memory(meter_points)) step.models[meter] = *model;
  }
  // The smallest prediction over the meters that grow with the batch, and the meter that makes
  // it, told with every answer.
  double best = static_cast<double>(INT_MAX);
  bool any_grows = false;
  for (const auto& [meter, model] : step.models) {
    auto usable = limits.usable.find(meter);
    if (usable == limits.usable.end() || !grows(model, points[meter])) continue;
    any_grows = true;
    double batch = predicted(points[meter], model, usable->second);
    batch -= std::floor(
        std::min(kPeakSpreadBytes / 2 / model.per_sample_bytes, batch * kSpreadAimShare));
    if (batch < best) {
      best = batch;
      step.limiting = meter;
    }
  }
  Bracket bracket = bracket_of(trials);
  if (bracket.fits == 0) return after_min_failed(limits, trials, step);
  int ceiling = std::min(bracket.fails, limits.max_batch ? *limits.max_batch + 1 : INT_MAX);
  if (bracket.fits + 1 >= ceiling || static_cast<int>(trials.size()) >= limits.max_trials ||
      (bracket.fails != INT_MAX && bracket.fails - 1 <= bracket.fits * (1 + kEnoughGain))) {
    return ended(step, SearchEnd::kFound, bracket.fits);
  }
  int next = 0;
  if (step.models.empty()) {
    // One batch measured: go far enough for a slope, or halfway to what failed.
    next = bracket.fails == INT_MAX
               ? static_cast<int>(std::min<int64_t>(
                     static_cast<int64_t>(bracket.fits) * kSecondTrialFactor, INT_MAX - 1))
               : bracket.fits + (bracket.fails - bracket.fits) / 2;
  } else if (!any_grows) {
    // Nothing grows: only a --max that fits is an answer; a model of noise is none.
    if (!limits.max_batch || bracket.fails != INT_MAX) return ended(step, SearchEnd::kNoGrowth);
    next = *limits.max_batch;
  } else if (best < bracket.fits + std::max(1.0, std::ceil(bracket.fits * kEnoughPredictedGain)) ||
             (best <= bracket.fits * (1 + kEnoughGain) &&
              (best - bracket.fits) * step.models[step.limiting].per_sample_bytes <
                  kPeakSpreadBytes)) {
    return ended(step, SearchEnd::kFound, bracket.fits);
  } else {
    // The model's batch, unless a failure at or below it (a crash, which measured nothing)
    // shows the model wrong there: then just below that failure, where a model that was nearly
    // right puts the answer, and halfway once that failed too.
    bool failed_twice =
        trials.size() >= 2 && trials[trials.size() - 2].outcome != TrialOutcome::kFits;
    double toward = failed_twice ? 0.5 : kBelowFailure;
    next = best < bracket.fails
               ? static_cast<int>(std::min<double>(aimed(best, points[step.limiting]), ceiling - 1))
               : bracket.fits + static_cast<int>((bracket.fails - bracket.fits) * toward);
  }
  next = std::min(next, ceiling - 1);
  if (next <= bracket.fits) return ended(step, SearchEnd::kFound, bracket.fits);
  step.next_batch = next;
  return step;
}

}  // namespace traindoc::analysis
