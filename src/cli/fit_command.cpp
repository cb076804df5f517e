// `traindoc fit --param NAME -- CMD ... {NAME} ...`: the largest batch that fits on every rank.
// Each trial is a real supervised run of CMD (`traindoc run`, its folder under the fit folder),
// ended after --steps optimizer steps past the first; the search is analysis/batch_search.h.
// Supervisor process, main thread.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "analysis/batch_advice.h"
#include "analysis/batch_search.h"
#include "analysis/diagnosis.h"
#include "analysis/trial_reading.h"
#include "cli/commands.h"
#include "report/safe_text.h"
#include "report/terminal.h"
#include "store/forwarded_signal.h"
#include "store/store_reader.h"
#include "supervisor/launcher.h"

namespace traindoc::cli {
namespace fs = std::filesystem;
using analysis::SearchEnd;
using analysis::Trial;
using analysis::TrialOutcome;
using json = nlohmann::json;

namespace {

// The batch sizes traindoc fit tries at most.
constexpr int kMaxTrials = 8;
// A trial's samples, this often: a trial lasts seconds.
constexpr double kTrialIntervalS = 0.25;

// A trial as it ran: its search entry, what its run showed, and where.
struct TrialRun {
  Trial trial;
  analysis::TrialReading reading;
  analysis::Diagnosis diagnosis;
  std::string dir;
  // A stop asked of the trial's job from outside (a Ctrl-C, a scheduler): the fit stops too.
  std::optional<store::Event> stop;
};

std::string placeholder(const FitArgs& args) {
  return "{" + args.param + "}";
}

std::vector<std::string> with_batch(const FitArgs& args, int batch) {
  std::vector<std::string> command = args.command;
  const std::string mark = placeholder(args);
  for (std::string& arg : command) {
    for (size_t at = arg.find(mark); at != std::string::npos; at = arg.find(mark, at)) {
      arg.replace(at, mark.size(), std::to_string(batch));
    }
  }
  return command;
}

// The command as a shell reads it back, safe to print on a terminal.
std::string shell_line(const std::vector<std::string>& command) {
  return report::terminal_safe(analysis::shell_words(command));
}

// The job's output goes to its trial's logs, not the terminal, where fit's table is told; the
// terminal comes back when the trial ends.
class QuietTerminal {
 public:
  QuietTerminal() {
    fflush(stdout);
    fflush(stderr);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    m_out = dup(1);
    m_err = dup(2);
    if (null >= 0) {
      dup2(null, 1);
      dup2(null, 2);
      close(null);
    }
  }
  ~QuietTerminal() {
    if (m_out >= 0) dup2(m_out, 1);
    if (m_err >= 0) dup2(m_err, 2);
    if (m_out >= 0) close(m_out);
    if (m_err >= 0) close(m_err);
  }
  QuietTerminal(const QuietTerminal&) = delete;
  QuietTerminal& operator=(const QuietTerminal&) = delete;

 private:
  int m_out = -1;
  int m_err = -1;
};

TrialRun run_trial(const FitArgs& args, const fs::path& fit_dir, size_t index, int batch,
                   const analysis::TrialLimits& limits) {
  TrialRun run;
  char name[64];
  snprintf(name, sizeof(name), "trial-%02zu-batch-%d", index + 1, batch);
  run.dir = (fit_dir / name).string();
  RunArgs trial;
  trial.command = with_batch(args, batch);
  trial.out = run.dir;
  trial.flags.silent = true;
  trial.trial_steps = args.steps + 1;
  trial.trial_flat_s = args.flat_s;
  trial.interval_s = kTrialIntervalS;
  if (!args.env.empty()) setenv(args.env.c_str(), std::to_string(batch).c_str(), 1);
  auto start = std::chrono::steady_clock::now();
  {
    QuietTerminal quiet;
    run_command(trial);
  }
  run.trial.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  store::Evidence evidence = store::read_evidence(run.dir + "/run.db");
  run.diagnosis = analysis::diagnose(evidence);
  run.reading = analysis::read_trial(evidence, run.diagnosis, limits);
  for (const store::Event& event : evidence.events) {
    if (event.kind == store::EventKind::kSignalForwarded && !run.stop) run.stop = event;
  }
  run.trial.batch = batch;
  run.trial.outcome = run.reading.outcome;
  run.trial.peaks = run.reading.peaks;
  return run;
}

std::string mib(double bytes) {
  char text[32];
  snprintf(text, sizeof(text), "%.0f MiB", bytes / (1 << 20));
  return text;
}

// "rank 0 memory 612 MiB, host memory 1.9 GiB"
std::string peaks_line(const std::map<std::string, uint64_t>& peaks) {
  std::string line;
  for (const auto& [meter, peak] : peaks) {
    line += (line.empty() ? "" : ", ") + meter + " " + analysis::format_bytes(peak);
  }
  return line.empty() ? "no peak measured" : line;
}

// With --target-batch: the batch per rank and the accumulation steps that give the target as
// batch x steps x world, exactly where a batch that fits allows it, else the least above it.
struct Plan {
  int target = 0;
  int batch = 0;
  int steps = 1;
  int world = 1;
  int effective() const { return batch * steps * world; }
};

Plan accumulation(int target, int largest, int world) {
  Plan plan{target, 0, 1, world};
  int64_t per_step = int64_t{largest} * world;
  plan.steps = static_cast<int>(std::max<int64_t>(1, (target + per_step - 1) / per_step));
  for (int steps = plan.steps; steps <= plan.steps * 4; ++steps) {
    if (target % (steps * world) == 0 && target / (steps * world) <= largest) {
      plan.steps = steps;
      plan.batch = target / (steps * world);
      return plan;
    }
  }
  plan.batch = std::max(1, (target + plan.steps * world - 1) / (plan.steps * world));
  return plan;
}

struct FitResult {
  analysis::SearchStep step;
  std::vector<TrialRun> runs;
  std::map<std::string, uint64_t> usable;
  std::map<std::string, uint64_t> capacity;
  std::optional<Plan> plan;
  std::string error;    // why there is no answer; "" when there is one
  int stop_signal = 0;  // the signal that stopped the fit from outside; 0: none
};

std::string over_usable(const FitResult& result, const TrialRun& run) {
  std::string line;
  for (const auto& [meter, peak] : run.trial.peaks) {
    uint64_t usable = result.usable.at(meter);
    if (peak <= usable) continue;
    line += (line.empty() ? "" : ", ") + meter + " " + analysis::format_bytes(peak) +
            " above the " + analysis::format_bytes(usable) + " it may use";
  }
  return line;
}

std::string min_fails(const FitResult& result) {
  const TrialRun& first = result.runs.front();
  std::string why = first.reading.finding >= 0
                        ? first.diagnosis.findings[first.reading.finding].title
                        : over_usable(result, first);
  return "batch " + std::to_string(first.trial.batch) + " (--min) does not fit: " + why;
}

std::string below_fixed(const FitResult& result) {
  const std::string& meter = result.step.limiting;
  return "no batch fits: " + meter + " holds about " +
         analysis::format_bytes(
             static_cast<uint64_t>(std::max(0.0, result.step.models.at(meter).fixed_bytes))) +
         " without any sample (the fixed part of its memory), above the " +
         analysis::format_bytes(result.usable.at(meter)) + " it may use";
}

std::string no_growth(const FitArgs& args, const FitResult& result) {
  std::string seen;
  for (const TrialRun& run : result.runs) {
    seen += (seen.empty() ? "" : "; ") + std::string("batch ") + std::to_string(run.trial.batch) +
            ": " + peaks_line(run.trial.peaks);
  }
  return "memory does not grow with " + placeholder(args) + " (" + seen + "): is " +
         placeholder(args) + " the batch size? (--max N takes N where it fits)";
}

std::string error_of(const FitArgs& args, const FitResult& result) {
  switch (result.step.end) {
    case SearchEnd::kMinFails:
      return min_fails(result);
    case SearchEnd::kBelowFixed:
      return below_fixed(result);
    case SearchEnd::kNoGrowth:
      return no_growth(args, result);
    case SearchEnd::kTrialFailed: {
      const TrialRun& last = result.runs.back();
      return "trial " + std::to_string(result.runs.size()) + " (batch " +
             std::to_string(last.trial.batch) +
             ") failed for a reason other than memory; no batch size is told from it";
    }
    case SearchEnd::kFound:
    case SearchEnd::kNone:
      break;
  }
  return "";
}

json model_json(const std::string& meter, const analysis::MemoryModel& model) {
  return {{"meter", meter},
          {"fixed_bytes", std::llround(model.fixed_bytes)},
          {"per_sample_bytes", std::llround(model.per_sample_bytes)}};
}

json fit_json(const FitArgs& args, const FitResult& result, const fs::path& fit_dir) {
  json out = {{"schema", "traindoc.fit/1"},  {"command", args.command},
              {"param", args.param},         {"steps", args.steps},
              {"flat_seconds", args.flat_s}, {"headroom_pct", args.headroom_pct},
              {"fit_dir", fit_dir.string()}};
  out["recommended_batch"] = result.error.empty() ? json(result.step.answer) : json(nullptr);
  out["error"] = result.error.empty() ? json(nullptr) : json(result.error);
  json trials = json::array();
  for (const TrialRun& run : result.runs) {
    trials.push_back({{"batch", run.trial.batch},
                      {"outcome", analysis::to_string(run.trial.outcome)},
                      {"peaks", run.trial.peaks},
                      {"seconds", std::round(run.trial.seconds * 10) / 10},
                      {"run_dir", run.dir}});
  }
  out["trials"] = trials;
  json meters = json::object();
  for (const auto& [meter, usable] : result.usable) {
    meters[meter] = {{"capacity_bytes", result.capacity.at(meter)}, {"usable_bytes", usable}};
  }
  out["meters"] = meters;
  auto limiting = result.step.models.find(result.step.limiting);
  out["model"] = limiting == result.step.models.end()
                     ? json(nullptr)
                     : model_json(limiting->first, limiting->second);
  json models = json::array();
  for (const auto& [meter, model] : result.step.models) models.push_back(model_json(meter, model));
  out["models"] = models;
  out["world_size"] = result.runs.empty() ? 1 : result.runs.back().reading.world;
  out["accumulation"] = nullptr;
  if (result.plan) {
    const Plan& plan = *result.plan;
    out["accumulation"] = {{"target_batch", plan.target},
                           {"batch", plan.batch},
                           {"steps", plan.steps},
                           {"world_size", plan.world},
                           {"effective_batch", plan.effective()},
                           {"command", with_batch(args, plan.batch)}};
  }
  return out;
}

std::string cell(const std::string& text, size_t width) {
  return std::string(width > text.size() ? width - text.size() : 0, ' ') + text;
}

std::string trial_table(const FitResult& result) {
  std::vector<std::string> meters;
  for (const auto& [meter, usable] : result.usable) meters.push_back(meter);
  std::string table = "trial  batch  outcome        seconds";
  for (const std::string& meter : meters) table += "  " + cell(meter, 13);
  table += "\n";
  for (size_t i = 0; i < result.runs.size(); ++i) {
    const Trial& trial = result.runs[i].trial;
    char row[96];
    snprintf(row, sizeof(row), "%5zu  %5d  %-13s  %7.1f", i + 1, trial.batch,
             analysis::to_string(trial.outcome), trial.seconds);
    table += row;
    for (const std::string& meter : meters) {
      auto peak = trial.peaks.find(meter);
      table += "  " + cell(peak == trial.peaks.end() ? "-" : analysis::format_bytes(peak->second),
                           std::max<size_t>(13, meter.size()));
    }
    table += "\n";
  }
  return table;
}

std::string plan_lines(const FitArgs& args, const Plan& plan) {
  std::string lines = "for a global batch of " + std::to_string(plan.target) + ": batch " +
                      std::to_string(plan.batch) + " x " + std::to_string(plan.steps) +
                      " accumulation step(s) x " + std::to_string(plan.world) +
                      " rank(s) = " + std::to_string(plan.effective()) +
                      (plan.effective() == plan.target ? "" : " (the nearest above it)") + "\n";
  lines += "  run: " + shell_line(with_batch(args, plan.batch)) + "\n";
  if (plan.steps > 1) {
    lines += "  and accumulate gradients over " + std::to_string(plan.steps) +
             " steps (optimizer.step() every " + std::to_string(plan.steps) +
             " batches; Lightning: accumulate_grad_batches=" + std::to_string(plan.steps) +
             "; Hugging Face: --gradient_accumulation_steps " + std::to_string(plan.steps) + ")\n";
  }
  return lines;
}

std::string summary(const FitArgs& args, const FitResult& result, const fs::path& fit_dir) {
  std::string text = "traindoc fit: " + shell_line(args.command) + "\n\n" + trial_table(result);
  auto limiting = result.step.models.find(result.step.limiting);
  if (limiting != result.step.models.end()) {
    const analysis::MemoryModel& model = limiting->second;
    text += "\nmodel (" + limiting->first + "): " + mib(std::max(0.0, model.fixed_bytes)) +
            " fixed + " + mib(model.per_sample_bytes) + " per sample; it may use " +
            analysis::format_bytes(result.usable.at(limiting->first)) + " of " +
            analysis::format_bytes(result.capacity.at(limiting->first)) + " (" +
            std::to_string(static_cast<int>(args.headroom_pct)) + " % headroom)\n";
  }
  if (!result.error.empty()) {
    text += "\ntraindoc fit: " + report::terminal_safe(result.error) + "\n";
  } else {
    text += "\nrecommended batch: " + std::to_string(result.step.answer) + " (" +
            placeholder(args) + ")\n";
    if (result.plan) text += plan_lines(args, *result.plan);
  }
  return text + "trials in " + report::terminal_safe(fit_dir.string()) + "\n";
}

void progress(size_t index, const TrialRun& run) {
  fprintf(stderr, "traindoc fit: trial %zu, batch %d: %s (%s) in %.1f s\n", index + 1,
          run.trial.batch, analysis::to_string(run.trial.outcome),
          peaks_line(run.trial.peaks).c_str(), run.trial.seconds);
}

// Sizes as people write them: 1200MiB, 1.5GiB, 800M (binary), 2GB (decimal), or bytes.
std::optional<uint64_t> parse_size(const std::string& text) {
  char* end = nullptr;
  double value = strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value <= 0) return std::nullopt;
  static const std::map<std::string, double> kUnits = {{"", 1},
                                                       {"B", 1},
                                                       {"K", 1024.0},
                                                       {"KiB", 1024.0},
                                                       {"KB", 1e3},
                                                       {"M", 1048576.0},
                                                       {"MiB", 1048576.0},
                                                       {"MB", 1e6},
                                                       {"G", 1073741824.0},
                                                       {"GiB", 1073741824.0},
                                                       {"GB", 1e9},
                                                       {"T", 1099511627776.0},
                                                       {"TiB", 1099511627776.0},
                                                       {"TB", 1e12}};
  auto unit = kUnits.find(end);
  if (unit == kUnits.end() || value * unit->second > 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(value * unit->second);
}

// A stop from outside: during a trial (its job was passed the signal), or before one (the stop
// signals stay blocked from fit's start, so that one between trials waits here rather than
// ending fit before fit.json).
bool stopped(FitResult& result, const std::vector<Trial>& trials,
             const std::optional<store::Event>& during) {
  int before = during ? 0 : supervisor::take_pending_stop();
  if (!during && before == 0) return false;
  result.error =
      "stopped by " +
      (during
           ? store::forwarded_request(*during) + " during trial " + std::to_string(trials.size())
           : analysis::signal_name(before) + " before trial " + std::to_string(trials.size() + 1));
  if (int fit = analysis::largest_fit(trials); fit > 0) {
    result.error += "; the largest batch that fit so far: " + std::to_string(fit);
  }
  result.stop_signal = during ? static_cast<int>(during->a.value_or(SIGINT)) : before;
  return true;
}

FitResult search(const FitArgs& args, const fs::path& fit_dir,
                 const analysis::TrialLimits& limits) {
  analysis::SearchLimits search{args.min_batch, args.max_batch, kMaxTrials, {}};
  FitResult result;
  std::vector<Trial> trials;
  while ((result.step = analysis::next_search_step(search, trials)).next_batch) {
    if (stopped(result, trials, std::nullopt)) return result;
    TrialRun run = run_trial(args, fit_dir, trials.size(), *result.step.next_batch, limits);
    for (const auto& [meter, usable] : run.reading.usable) {
      search.usable[meter] = usable;
      result.usable[meter] = usable;
      result.capacity[meter] = run.reading.capacity.at(meter);
    }
    progress(trials.size(), run);
    bool unmeasured = run.trial.peaks.empty() && run.trial.outcome != TrialOutcome::kFailed &&
                      run.trial.outcome != TrialOutcome::kOutOfMemory;
    trials.push_back(run.trial);
    std::optional<store::Event> stop = run.stop;
    result.runs.push_back(std::move(run));
    if (stop && stopped(result, trials, stop)) return result;
    if (unmeasured) {
      result.error = "trial " + std::to_string(trials.size()) +
                     " measured no memory: its job ended before its first sample";
      return result;
    }
  }
  result.error = error_of(args, result);
  if (result.error.empty() && args.target_batch) {
    result.plan =
        accumulation(*args.target_batch, result.step.answer, result.runs.back().reading.world);
  }
  return result;
}

int usage(const std::string& message) {
  fprintf(stderr, "traindoc fit: %s\n", message.c_str());
  return kUsageError;
}

}  // namespace

int fit_command(const FitArgs& args) {
  bool marked = std::any_of(args.command.begin(), args.command.end(), [&](const std::string& arg) {
    return arg.find(placeholder(args)) != std::string::npos;
  });
  if (!marked && args.env.empty()) {
    return usage("the command holds no " + placeholder(args) + ": put it where the command sets " +
                 "the batch size (--batch-size " + placeholder(args) +
                 "), or give --env NAME for a job that reads it from a variable");
  }
  analysis::TrialLimits limits;
  limits.headroom = args.headroom_pct / 100;
  if (!args.memory_budget.empty()) {
    limits.budget = parse_size(args.memory_budget);
    if (!limits.budget) {
      return usage("--memory-budget " + report::terminal_safe(args.memory_budget) +
                   ": not a size (write it as 1200MiB, 1.5GiB or 800M)");
    }
  }
  if (args.max_batch && *args.max_batch < args.min_batch) {
    return usage("--max is below --min");
  }
  supervisor::block_supervisor_signals();
  fs::path fit_dir = claim_folder(args.out, "fit-");
  FitResult result = search(args, fit_dir, limits);
  json document = fit_json(args, result, fit_dir);
  std::ofstream(fit_dir / "fit.json")
      << document.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  if (result.step.end == SearchEnd::kTrialFailed) {
    const TrialRun& last = result.runs.back();
    report::TerminalOptions options;
    options.colour = report::wants_colour(2);
    fputs(report::render_summary(last.diagnosis, last.dir, options).c_str(), stderr);
  }
  if (args.json) {
    fputs((document.dump(2, ' ', false, json::error_handler_t::replace) + "\n").c_str(), stdout);
  } else {
    fputs(summary(args, result, fit_dir).c_str(), stdout);
  }
  // Stopped from outside: as a shell tells a command a signal ended, 130 for a Ctrl-C.
  if (result.stop_signal != 0) return 128 + result.stop_signal;
  return result.error.empty() ? 0 : kOwnFailure;
}

}  // namespace traindoc::cli
