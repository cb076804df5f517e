// Replays `traindoc fit`'s batch-size search (analysis/batch_search.h) and Lightning's
// BatchSizeFinder (mode "binsearch": doubling, then bisecting) on the memory curves measured by
// bench/fit_curves.py, for several budgets per model: trials, seconds, answers, side by side.
// Usage: fit_search [CSV] [--budgets N] [--trials]. Benchmark program, not part of the tests.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/batch_search.h"

namespace traindoc::analysis {
namespace {

constexpr const char* kMeter = "rank 0 memory";
constexpr double kMiB = 1 << 20;
// Lightning's defaults (BatchSizeFinder, 2.x): the first batch, the largest it tries, and the
// cut its 2.6 applies to the answer of "binsearch".
constexpr int kLightningInit = 2;
constexpr int kLightningMaxVal = 8192;
constexpr double kLightningMargin = 0.05;
// The budgets' truths go from this batch to near the top of the curve's grid.
constexpr int kSmallestTruth = 10;
// A search that has not ended after this many trials is stuck: the replay stops it.
constexpr int kTrialCap = 64;
// An answer worth a look: above the truth, under 90 % of it, or after more than 5 trials.
constexpr double kPoorRatio = 0.9;
constexpr int kPoorTrials = 5;

// One trial process as measured: peak RSS, its whole seconds, and its 1 + 3 steps' alone.
struct Sample {
  double peak = 0;
  double seconds = 0;
  double step_seconds = 0;
};

// A model's measured curve, by batch (ascending); between two measured batches the linear
// interpolation of the two, beyond the ends the line through the last two.
struct Curve {
  std::string model;
  std::vector<std::pair<int, Sample>> points;

  int smallest() const { return points.front().first; }
  int largest() const { return points.back().first; }

  Sample at(int batch) const {
    auto upper = std::lower_bound(points.begin(), points.end(), batch,
                                  [](const auto& point, int b) { return point.first < b; });
    if (upper != points.end() && upper->first == batch) return upper->second;
    if (upper == points.begin()) ++upper;
    if (upper == points.end()) --upper;
    const auto& [low, a] = *std::prev(upper);
    const auto& [high, b] = *upper;
    double t = static_cast<double>(batch - low) / (high - low);
    auto lerp = [t](double x, double y) { return std::max(0.0, x + (y - x) * t); };
    return {lerp(a.peak, b.peak), lerp(a.seconds, b.seconds), lerp(a.step_seconds, b.step_seconds)};
  }

  // The largest batch up to the grid's top whose peak fits: what a search should find.
  int truth(double budget) const {
    for (int batch = largest(); batch >= smallest(); --batch) {
      if (at(batch).peak <= budget) return batch;
    }
    return 0;
  }
};

std::vector<Curve> read_curves(const std::string& path) {
  std::ifstream in(path);
  std::vector<Curve> curves;
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string model;
    std::string cell;
    std::vector<double> values;
    std::getline(fields, model, ',');
    while (std::getline(fields, cell, ',')) values.push_back(std::stod(cell));
    if (values.size() != 4) continue;
    if (curves.empty() || curves.back().model != model) curves.push_back({model, {}});
    curves.back().points.emplace_back(static_cast<int>(values[0]),
                                      Sample{values[1], values[2], values[3]});
  }
  for (Curve& curve : curves) {
    std::sort(curve.points.begin(), curve.points.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return curves;
}

// A trial that crashed for memory (a GPU out of memory) dies in its first step, where the
// peak is reached: it costs its start-up and one of its four steps.
double crash_seconds(const Sample& sample) {
  return sample.seconds - sample.step_seconds * 3 / 4;
}

// One search's replay.
struct Search {
  int trials = 0;
  double seconds = 0;     // each trial a process of its own, start-up included
  double in_process = 0;  // one start-up, then the trials' steps (Lightning's way)
  int answer = 0;
  std::string end = "found";
  std::string log;  // "1 fits, 8 over, ..."

  void add(int batch, const Sample& sample, const char* outcome, bool crashed) {
    double steps = crashed ? sample.step_seconds / 4 : sample.step_seconds;
    if (trials++ == 0) in_process = sample.seconds - sample.step_seconds;
    seconds += crashed ? crash_seconds(sample) : sample.seconds;
    in_process += steps;
    log += fmt::format("{}{} {}", log.empty() ? "" : ", ", batch, outcome);
  }
};

const char* end_name(SearchEnd end) {
  switch (end) {
    case SearchEnd::kNone:
      return "none";
    case SearchEnd::kFound:
      return "found";
    case SearchEnd::kMinFails:
      return "min fails";
    case SearchEnd::kBelowFixed:
      return "below fixed";
    case SearchEnd::kNoGrowth:
      return "no growth";
    case SearchEnd::kTrialFailed:
      return "trial failed";
  }
  return "none";
}

// traindoc's search: `measured` trials that go over still report their peak (a host memory
// budget, --memory-budget); otherwise they crash without one (a GPU out of memory).
Search replay_traindoc(const Curve& curve, double budget, bool measured) {
  SearchLimits limits;
  limits.min_batch = curve.smallest();
  limits.usable = {{kMeter, static_cast<uint64_t>(budget)}};
  std::vector<Trial> trials;
  Search search;
  while (search.trials < kTrialCap) {
    SearchStep step = next_search_step(limits, trials);
    if (step.end != SearchEnd::kNone) {
      search.end = end_name(step.end);
      search.answer = step.end == SearchEnd::kFound ? step.answer : 0;
      return search;
    }
    Trial trial{*step.next_batch};
    Sample sample = curve.at(trial.batch);
    bool fits = sample.peak <= budget;
    trial.outcome = fits       ? TrialOutcome::kFits
                    : measured ? TrialOutcome::kOverBudget
                               : TrialOutcome::kOutOfMemory;
    if (fits || measured) trial.peaks[kMeter] = static_cast<uint64_t>(sample.peak);
    trial.seconds = fits || measured ? sample.seconds : crash_seconds(sample);
    search.add(trial.batch, sample, fits ? "fits" : measured ? "over" : "oom", !fits && !measured);
    trials.push_back(trial);
  }
  search.end = "stuck";
  return search;
}

// Lightning's "binsearch" as its _run_binsearch_scaling does it: from init_val, double while the
// batch fits; after the first failure bisect between the last that fit (`low`, 1 before any)
// and the smallest that failed, until they are adjacent. A failure is an out-of-memory error,
// so a trial over the budget crashes.
Search replay_lightning(const Curve& curve, double budget) {
  int low = 1;
  std::optional<int> high;
  int size = kLightningInit;
  Search search;
  while (size < kLightningMaxVal && search.trials < kTrialCap) {
    Sample sample = curve.at(size);
    bool fits = sample.peak <= budget;
    search.add(size, sample, fits ? "fits" : "oom", !fits);
    if (fits) {
      low = size;
      if (high && *high - low <= 1) break;
      size = high ? (*high + low) / 2 : std::min(size * 2, kLightningMaxVal);
    } else {
      high = size;
      size = (*high + low) / 2;
      if (*high - low <= 1) break;
    }
  }
  search.answer = size;
  return search;
}

struct Options {
  std::string csv = TRAINDOC_FIT_CURVES;
  int budgets = 5;
  bool trials = false;  // every search's trials, not only the poor ones'
};

// Budgets whose truths go from kSmallestTruth to near the grid's top, evenly on a log scale:
// each halfway between the peaks of its truth and of the batch above.
std::vector<double> budgets_of(const Curve& curve, int count) {
  double top = curve.largest() * 0.95;
  std::vector<double> budgets;
  for (int i = 0; i < count; ++i) {
    double share = count == 1 ? 1.0 : static_cast<double>(i) / (count - 1);
    int truth =
        static_cast<int>(std::lround(kSmallestTruth * std::pow(top / kSmallestTruth, share)));
    budgets.push_back((curve.at(truth).peak + curve.at(truth + 1).peak) / 2);
  }
  return budgets;
}

// The answer and its ratio to the truth, or how the search ended without one.
std::string answer_text(const Search& search, int truth) {
  if (search.end != "found") return search.end;
  return fmt::format("{} {:.2f}", search.answer, static_cast<double>(search.answer) / truth);
}

bool poor(const Search& search, int truth) {
  return search.end != "found" || search.answer > truth || search.answer < kPoorRatio * truth ||
         search.trials > kPoorTrials;
}

using Row = std::vector<std::string>;

// Prints rows under their header, columns aligned, the first to the left.
void print_table(const std::vector<Row>& rows) {
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const Row& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < widths.size(); ++i) {
      line += i == 0 ? fmt::format("{:<{}}", rows[r][i], widths[i])
                     : fmt::format("  {:>{}}", rows[r][i], widths[i]);
    }
    std::puts(line.c_str());
    if (r == 0) std::puts(std::string(line.size(), '-').c_str());
  }
}

std::string ratio(double a, double b) {
  return b > 0 ? fmt::format("{:.2f}", a / b) : "-";
}

// The searches of one budget, and the sums over all of them.
struct Replays {
  Search budget;  // traindoc, trials over the budget measured
  Search oom;     // traindoc, trials over the budget crashed
  Search lightning;
};

void accumulate(Search& sum, const Search& search) {
  sum.trials += search.trials;
  sum.seconds += search.seconds;
  sum.in_process += search.in_process;
}

Row row_of(const std::string& model, const std::string& budget, const std::string& truth,
           const Replays& replays, const std::vector<std::string>& answers) {
  const auto& [on_budget, oom, lightning] = replays;
  return {model,
          budget,
          truth,
          std::to_string(on_budget.trials),
          fmt::format("{:.0f}", on_budget.seconds),
          answers[0],
          std::to_string(oom.trials),
          fmt::format("{:.0f}", oom.seconds),
          answers[1],
          std::to_string(lightning.trials),
          fmt::format("{:.0f}", lightning.seconds),
          fmt::format("{:.0f}", lightning.in_process),
          answers[2],
          answers[3],
          ratio(on_budget.trials, lightning.trials),
          ratio(oom.trials, lightning.trials),
          ratio(on_budget.seconds, lightning.seconds),
          ratio(oom.seconds, lightning.seconds),
          ratio(on_budget.seconds, lightning.in_process)};
}

Row header() {
  return {"model",      "budget MiB", "truth",    "B trials", "B s",         "B answer", "O trials",
          "O s",        "O answer",   "L trials", "L s",      "L 1-proc s",  "L answer", "L -5%",
          "trials B/L", "trials O/L", "s B/L",    "s O/L",    "s B/L 1-proc"};
}

// What the rows add up to: the sums of the trials and seconds, the smallest answer / truth, how
// many of traindoc's answers are poor and why, and the trials worth a look.
class Tally {
 public:
  explicit Tally(bool all_trials) : m_all_trials(all_trials) {}

  Row add(const Curve& curve, double budget) {
    int truth = curve.truth(budget);
    Replays replays{replay_traindoc(curve, budget, true), replay_traindoc(curve, budget, false),
                    replay_lightning(curve, budget)};
    Search cut = replays.lightning;
    cut.answer = std::max(1, static_cast<int>(cut.answer * (1 - kLightningMargin)));
    const std::pair<const char*, const Search*> searches[] = {
        {"B", &replays.budget}, {"O", &replays.oom}, {"L", &replays.lightning}, {"L-5%", &cut}};
    for (size_t i = 0; i < std::size(searches); ++i) {
      const auto& [mode, search] = searches[i];
      m_worst[i] = std::min(m_worst[i], static_cast<double>(search->answer) / truth);
      bool traindoc = i < 2;
      if (traindoc) count_poor(m_poor[i], *search, truth);
      if ((m_all_trials && i < 3) || (traindoc && poor(*search, truth))) {
        m_lines.push_back(fmt::format("{}{} {} {:.0f} MiB (truth {}): {}",
                                      traindoc && poor(*search, truth) ? "POOR " : "", mode,
                                      curve.model, budget / kMiB, truth, search->log));
      }
    }
    accumulate(m_sum.budget, replays.budget);
    accumulate(m_sum.oom, replays.oom);
    accumulate(m_sum.lightning, replays.lightning);
    return row_of(curve.model, fmt::format("{:.0f}", budget / kMiB), std::to_string(truth), replays,
                  {answer_text(replays.budget, truth), answer_text(replays.oom, truth),
                   answer_text(replays.lightning, truth), answer_text(cut, truth)});
  }

  Row total() const {
    std::vector<std::string> worst;
    for (double ratio : m_worst) worst.push_back(fmt::format("min {:.2f}", ratio));
    return row_of("all", "", "", m_sum, worst);
  }

  void print_poor() const {
    const char* modes[] = {"B", "O"};
    std::puts("");
    for (size_t i = 0; i < std::size(m_poor); ++i) {
      const Poor& poor = m_poor[i];
      std::printf(
          "%s: poor answers %d of %d (%d above the truth, %d below %.0f %% of it, %d after more "
          "than %d trials, %d not found)\n",
          modes[i], poor.any, poor.searches, poor.above, poor.below, kPoorRatio * 100, poor.long_,
          kPoorTrials, poor.not_found);
    }
    if (!m_lines.empty()) std::puts("");
    for (const std::string& line : m_lines) std::puts(line.c_str());
  }

 private:
  struct Poor {
    int searches = 0;
    int any = 0;
    int above = 0;
    int below = 0;
    int long_ = 0;
    int not_found = 0;
  };

  static void count_poor(Poor& count, const Search& search, int truth) {
    ++count.searches;
    count.any += poor(search, truth);
    count.not_found += search.end != "found";
    count.above += search.end == "found" && search.answer > truth;
    count.below += search.end == "found" && search.answer < kPoorRatio * truth;
    count.long_ += search.trials > kPoorTrials;
  }

  bool m_all_trials;
  Replays m_sum;
  double m_worst[4] = {2, 2, 2, 2};  // the smallest answer / truth of B, O, L and L -5 %
  Poor m_poor[2];                    // of B and O
  std::vector<std::string> m_lines;
};

int run(const Options& options) {
  std::vector<Curve> curves = read_curves(options.csv);
  if (curves.empty()) {
    std::fprintf(stderr, "fit_search: no curve in %s (run bench/fit_curves.py)\n",
                 options.csv.c_str());
    return 1;
  }
  std::printf("curves: %s (%zu models), %d budgets each\n", options.csv.c_str(), curves.size(),
              options.budgets);
  std::puts(
      "B: traindoc, a trial over the budget measured (host memory); O: traindoc, a trial over it\n"
      "crashes (GPU out of memory); L: Lightning's binsearch from 2. s: the trials' seconds, each\n"
      "a process of its own; L 1-proc s: one start-up, then the trials' steps, as Lightning runs\n"
      "them; L -5%: Lightning 2.6's answer after its margin. An answer: batch, ratio to the "
      "truth.\n");
  Tally tally(options.trials);
  std::vector<Row> rows = {header()};
  for (const Curve& curve : curves) {
    for (double budget : budgets_of(curve, options.budgets))
      rows.push_back(tally.add(curve, budget));
  }
  rows.push_back(tally.total());
  print_table(rows);
  tally.print_poor();
  return 0;
}

}  // namespace
}  // namespace traindoc::analysis

int main(int argc, char** argv) {
  traindoc::analysis::Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--budgets" && i + 1 < argc) {
      options.budgets = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--trials") {
      options.trials = true;
    } else if (arg.starts_with("-")) {
      std::fprintf(stderr, "usage: fit_search [CSV] [--budgets N] [--trials]\n");
      return 2;
    } else {
      options.csv = arg;
    }
  }
  return traindoc::analysis::run(options);
}
