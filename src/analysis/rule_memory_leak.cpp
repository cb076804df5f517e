// Rule: memory that grows steadily with the training steps (or, without step counts, with time)
// in a process: a leak; the same after its last training step, per DDP forward pass (evaluation
// with autograd on) or per minute; per minute before its first training step (data
// preparation); and DataLoader workers whose private memory grows while their
// RSS stays flat: copy-on-access of the parent's Python objects. Pure.
// Every per-process memory series goes through grown_in() and leak_finding(): host RSS (without
// the pages of mapped files), and the GPU memory NVML saw the process hold (all its devices
// together).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "analysis/gpu_facts.h"
#include "analysis/growth.h"
#include "analysis/oom_facts.h"
#include "analysis/rules.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kNsPerMinute = 60e9;
// A worker's RSS may grow by this part of its USS growth and still count as flat.
constexpr double kFlatRss = 0.5;
// Spans of growth too short to call a leak of RSS: a process that spends its short life
// importing libraries and loading data grows steadily too. Copy-on-access in workers needs no
// such floor: its RSS stays flat, which loading does not.
constexpr double kMinSteps = 10;
constexpr double kMinMinutes = 2;

// The counts of `kind` that process `p` reported, by time.
std::vector<std::pair<int64_t, double>> counts_of(const RuleContext& context,
                                                  const ProcessSummary& p,
                                                  std::optional<store::StepKind> kind) {
  std::vector<std::pair<int64_t, double>> out;
  for (const store::StepSample& s : context.evidence.steps) {
    if (s.kind == kind && s.pid == p.record.pid && s.start_ticks == p.record.start_ticks) {
      out.emplace_back(s.t_ns, static_cast<double>(s.count));
    }
  }
  std::stable_sort(out.begin(), out.end());
  return out;
}

// Where a process stands in its training at a sample time: its step count (linear between the
// counts the hook reported; none outside the span they cover), or minutes since its first
// sample where the hook counted nothing. After its last training step, its DDP forward passes,
// or minutes since that step; before its first, minutes since its first sample.
class Axis {
 public:
  enum class Phase { kTraining, kBeforeFirstStep, kAfterLastStep };

  Axis() = default;  // minutes
  // The steps `counter` counted: `p` itself, or the rank a DataLoader worker makes batches for.
  Axis(const RuleContext& context, const ProcessSummary& p, const ProcessSummary& counter) {
    m_kind = counter.step_kind();
    m_counts = counts_of(context, counter, m_kind);
    if (&counter != &p) m_rank = context.name(counter);
  }
  // The phase of `p` after `from_ns`, when its training step count reached `last_step` (its
  // last training step): by the DDP forwards counted after then, or without them by minutes.
  // The hook counts no other forward pass: a wrapper of every module call would cost every
  // model's step (docs/python-hook.md).
  static Axis after(const RuleContext& context, const ProcessSummary& p, int64_t from_ns,
                    double last_step) {
    Axis out;
    out.m_from_ns = from_ns;
    out.m_phase = Phase::kAfterLastStep;
    out.m_last_step = last_step;
    out.m_trained = p.step_kind();
    std::vector<std::pair<int64_t, double>> backward =
        counts_of(context, p, store::StepKind::kBackward);
    auto start = std::lower_bound(backward.begin(), backward.end(),
                                  std::pair<int64_t, double>{from_ns, -1e300});
    if (start != backward.end()) out.m_backwards_after = backward.back().second - start->second;
    std::vector<std::pair<int64_t, double>> forwards =
        counts_of(context, p, store::StepKind::kDdpForward);
    // Counted from the phase's start: the count reported there or last before it (the
    // training's forwards), else the first one after it.
    auto first = std::upper_bound(forwards.begin(), forwards.end(),
                                  std::pair<int64_t, double>{from_ns, 1e300});
    if (first == forwards.begin() && first == forwards.end()) return out;
    double base = first == forwards.begin() ? first->second : std::prev(first)->second;
    if (first != forwards.begin()) out.m_counts.emplace_back(from_ns, 0);
    for (auto it = first; it != forwards.end(); ++it) {
      out.m_counts.emplace_back(it->first, it->second - base);
    }
    if (out.m_counts.size() < 2 || out.m_counts.back().second == 0) {
      out.m_counts.clear();
    } else {
      out.m_kind = store::StepKind::kDdpForward;
    }
    return out;
  }

  // The span of `p` before `to_ns`, when it reported its first training step: by minutes, the
  // hook counts nothing there.
  static Axis before(const ProcessSummary& p, int64_t to_ns) {
    Axis out;
    out.m_to_ns = to_ns;
    out.m_phase = Phase::kBeforeFirstStep;
    out.m_trained = p.step_kind();
    return out;
  }

  bool per_step() const { return m_counts.size() >= 2; }
  // By the forward passes of the phase after training.
  bool forwards() const { return m_phase == Phase::kAfterLastStep && per_step(); }
  // A span before or after training rather than training itself; the training step it came
  // after, and the backward calls in it.
  bool phase() const { return m_phase != Phase::kTraining; }
  Phase phase_kind() const { return m_phase; }
  double last_step() const { return m_last_step; }
  double backwards_after() const { return m_backwards_after; }
  // What the process's training steps were: "optimizer steps".
  const char* trained() const { return words(m_trained); }
  int64_t from_ns() const { return m_from_ns; }
  int64_t to_ns() const { return m_to_ns; }
  const char* unit() const { return !per_step() ? "minute" : forwards() ? "forward pass" : "step"; }
  const char* units() const {
    return !per_step() ? "minutes" : forwards() ? "forward passes" : "steps";
  }
  // The rank whose steps they are, for a DataLoader worker; "" for the process's own steps.
  const std::string& rank() const { return m_rank; }
  // What a step is: "optimizer steps", "backward calls", "DDP forwards".
  const char* steps() const { return words(m_kind); }

  static const char* words(std::optional<store::StepKind> kind) {
    switch (kind.value_or(store::StepKind::kOptimizer)) {
      case store::StepKind::kBackward:
        return "backward calls";
      case store::StepKind::kDdpForward:
        return "DDP forwards";
      case store::StepKind::kOptimizer:
        break;
    }
    return "optimizer steps";
  }
  GrowthLimits limits() const {
    GrowthLimits out;
    out.min_span = per_step() ? kMinSteps : kMinMinutes;
    return out;
  }

  std::optional<double> at(int64_t t_ns, int64_t first_sample_ns) const {
    if (t_ns < m_from_ns || t_ns > m_to_ns) return std::nullopt;
    if (!per_step()) {
      if (m_phase == Phase::kAfterLastStep) first_sample_ns = m_from_ns;
      // A sample whose time tells no duration since the first (a clock far off, a damaged file)
      // has no place on the axis: the span in words stays a duration.
      std::optional<int64_t> since = store::duration_ns(first_sample_ns, t_ns);
      if (!since) return std::nullopt;
      return static_cast<double>(*since) / kNsPerMinute;
    }
    if (t_ns < m_counts.front().first || t_ns > m_counts.back().first) return std::nullopt;
    auto after = std::lower_bound(m_counts.begin(), m_counts.end(),
                                  std::pair<int64_t, double>{t_ns, -1e300});
    if (after->first == t_ns || after == m_counts.begin()) return after->second;
    auto before = std::prev(after);
    double part = static_cast<double>(store::elapsed_ns(before->first, t_ns)) /
                  static_cast<double>(store::elapsed_ns(before->first, after->first));
    return before->second + part * (after->second - before->second);
  }

  // The steps counted between two times (each kept within the counted span).
  double counted_between(int64_t from_ns, int64_t to_ns) const {
    if (!per_step()) return 0;
    auto clamp = [&](int64_t t) {
      return *at(std::clamp(t, m_counts.front().first, m_counts.back().first), 0);
    };
    return clamp(to_ns) - clamp(from_ns);
  }

  // Steps per minute over the counted span, for turning steps into time.
  double steps_per_minute() const {
    if (!per_step() || m_counts.back().first == m_counts.front().first) return 0;
    return (m_counts.back().second - m_counts.front().second) /
           (static_cast<double>(store::elapsed_ns(m_counts.front().first, m_counts.back().first)) /
            kNsPerMinute);
  }

 private:
  std::optional<store::StepKind> m_kind;
  std::vector<std::pair<int64_t, double>> m_counts;
  std::string m_rank;
  int64_t m_from_ns = std::numeric_limits<int64_t>::min();
  int64_t m_to_ns = std::numeric_limits<int64_t>::max();
  Phase m_phase = Phase::kTraining;
  double m_last_step = 0;
  std::optional<store::StepKind> m_trained;
  double m_backwards_after = 0;
};

// The phases of process `p` outside its training, where it trained: before its first training
// step (loading and preparing data, building the model; the training's axis starts at that
// step), and after its last. None for a DataLoader worker, which runs no model.
std::vector<Axis> outside_training(const RuleContext& context, const ProcessSummary& p) {
  std::optional<store::StepKind> kind = p.step_kind();
  if (p.role.role == Role::kWorker || !kind) return {};
  std::vector<std::pair<int64_t, double>> counts = counts_of(context, p, kind);
  if (counts.empty()) return {};
  std::vector<Axis> out;
  // With a single count the training is measured by minutes from the process's start already.
  if (counts.size() >= 2) out.push_back(Axis::before(p, counts.front().first));
  // The first report of the last count: the last step had begun by then.
  auto last = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& c) { return c.second == counts.back().second; });
  out.push_back(Axis::after(context, p, last->first, last->second));
  return out;
}

// The process whose steps measure `p`'s growth: its own, or for a DataLoader worker, which counts
// none, its rank's: the worker makes the rank's batches, about one per step (gradient
// accumulation takes several).
const ProcessSummary& step_counter(const RuleContext& context, const ProcessSummary& p) {
  if (p.role.role != Role::kWorker || p.step_kind()) return p;
  const ProcessSummary* rank = rank_above(context, p);
  return rank != nullptr && rank->step_kind() ? *rank : p;
}

// One process's series of one measure, with the sample times beside the points.
struct Series {
  std::vector<SeriesPoint> points;
  std::vector<int64_t> t_ns;

  // The time the fitted span starts: when the growth was first seen.
  int64_t time_at(double x) const {
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].x >= x) return t_ns[i];
    }
    return t_ns.empty() ? 0 : t_ns.back();
  }
};

Series series_of(const RuleContext& context, const ProcessSummary& p, const Axis& axis,
                 const std::function<std::optional<uint64_t>(const store::ProcSample&)>& measure) {
  Series out;
  std::optional<int64_t> first;
  for (const store::ProcSample& s : context.evidence.proc_samples) {
    if (s.pid != p.record.pid || s.start_ticks != p.record.start_ticks) continue;
    if (!first) first = s.t_ns;
    std::optional<uint64_t> bytes = measure(s);
    std::optional<double> x = axis.at(s.t_ns, *first);
    if (!bytes || !x) continue;
    out.points.push_back({*x, static_cast<double>(*bytes)});
    out.t_ns.push_back(s.t_ns);
  }
  return out;
}

// The GPU memory NVML saw process `p` hold at each GPU sample, summed over its devices.
Series gpu_series_of(const RuleContext& context, const ProcessSummary& p, const Axis& axis) {
  std::map<int64_t, std::optional<uint64_t>> by_time;
  for (const store::GpuProcessSample& s : context.evidence.gpu.process_samples) {
    if (s.pid != p.record.pid || s.start_ticks != p.record.start_ticks) continue;
    auto it = by_time.try_emplace(s.t_ns, 0).first;
    // A device that cannot say makes the whole sample unknown, not smaller.
    it->second =
        it->second && s.used_bytes ? std::optional(*it->second + *s.used_bytes) : std::nullopt;
  }
  Series out;
  for (const auto& [t_ns, bytes] : by_time) {
    std::optional<double> x = axis.at(t_ns, by_time.begin()->first);
    if (!bytes || !x) continue;
    out.points.push_back({*x, static_cast<double>(*bytes)});
    out.t_ns.push_back(t_ns);
  }
  return out;
}

// Three significant digits, without an exponent: "0.512 MiB", "10.4 MiB", "1045 MiB".
std::string mib(double bytes) {
  double value = bytes / kMiB;
  int decimals = std::fabs(value) >= 100  ? 0
                 : std::fabs(value) >= 10 ? 1
                 : std::fabs(value) >= 1  ? 2
                                          : 3;
  return fmt::format("{:.{}f} MiB", value, decimals);
}

std::string duration(double minutes) {
  return minutes < 2 ? fmt::format("{:.0f} s", minutes * 60)
                     : fmt::format("{:.1f} minutes", minutes);
}

std::string amount(double x) {
  return fmt::format("{:.0f}", x);
}

// What is left before the host (or the memory cgroup of process `p`) runs out, at the last
// samples up to `t_ns`, and what that is. The cgroup is p's own (or its parent's, which it
// started in); traindoc's own only for a run that recorded no process's cgroup (before schema 12).
std::optional<std::pair<double, std::string>> host_headroom(const store::Evidence& evidence,
                                                            const ProcessSummary& p, int64_t t_ns) {
  const store::HostSample* last = nullptr;
  for (const store::HostSample& h : evidence.host_samples) {
    if (h.t_ns <= t_ns || last == nullptr) last = &h;
  }
  if (last == nullptr || last->mem_total == 0) return std::nullopt;
  std::pair<double, std::string> out{static_cast<double>(last->mem_available),
                                     "available on the host (MemAvailable)"};
  std::optional<uint64_t> current;
  std::optional<uint64_t> max;
  std::string words;
  std::string whose;
  if (const store::ProcessCgroup* member = memory_cgroup_at(evidence, p.record, t_ns, whose)) {
    for (const store::CgroupSample& s : evidence.cgroup_samples) {
      if (s.dir != member->dir || member->dir.empty()) continue;
      if (s.t_ns > t_ns && current) break;
      current = s.current;
      max = s.max;
    }
    words = "left under the limit of " + whose + " memory cgroup " + member->dir;
  } else if (evidence.process_cgroups.empty()) {
    current = last->cgroup_current;
    max = last->cgroup_max;
    words = "left under the limit of traindoc's own memory cgroup";
  }
  if (max && current && *max > *current) {
    auto left = static_cast<double>(*max - *current);
    if (left < out.first) out = {left, words};
  }
  return out;
}

// What is left on the GPUs that process `p` holds memory on, at the last GPU samples up to
// `t_ns`: the smallest free memory among them.
std::optional<std::pair<double, std::string>> gpu_headroom(const store::GpuEvidence& gpu,
                                                           const ProcessSummary& p, int64_t t_ns) {
  std::set<int> held;
  for (const store::GpuProcessSample& s : gpu.process_samples) {
    if (s.pid == p.record.pid && s.start_ticks == p.record.start_ticks && s.t_ns <= t_ns) {
      held.insert(s.device);
    }
  }
  std::optional<std::pair<double, std::string>> out;
  for (int device : held) {
    const store::GpuDevice* d = find_device(gpu, device);
    const store::GpuSample* last = nullptr;
    for (const store::GpuSample& g : gpu.samples) {
      if (g.device == device && g.t_ns <= t_ns && g.memory_used) last = &g;
    }
    if (d == nullptr || last == nullptr || *last->memory_used > d->memory_total) continue;
    auto free = static_cast<double>(d->memory_total - *last->memory_used);
    if (!out || free < out->first) out = {free, fmt::format("free on GPU {}", device)};
  }
  return out;
}

// A failure that running out of memory explains, found by an earlier rule after `since_ns`, in
// the growing process or next to it: the OOM killer picks the largest process, which may be the
// growing rank's parent or one of its workers (they share its pages) rather than the rank.
const TimedFinding* exhaustion_of(const RuleContext& context,
                                  const std::vector<TimedFinding>& found, const ProcessSummary& p,
                                  int64_t since_ns, const std::set<FindingKind>& kinds) {
  const ProcessSummary* rank = rank_above(context, p);
  for (const TimedFinding& f : found) {
    if (!kinds.contains(f.finding.kind) || f.t_ns < since_ns) continue;
    const ProcessSummary* failed = context.process(f.pid);
    if (f.pid == p.record.pid || f.pid == p.record.ppid ||
        (rank != nullptr && f.pid == rank->record.pid) ||
        (failed != nullptr && failed->record.ppid == p.record.pid)) {
      return &f;
    }
  }
  return nullptr;
}

std::string ran_out(const TimedFinding& end) {
  return fmt::format("then {} ({}): memory ran out", end.finding.title,
                     to_string(end.finding.kind));
}

// What leaks, and in what: "host memory (RSS)", with the failures it ends in and its headroom.
struct Measure {
  std::string memory;  // "host memory"
  std::string name;    // "RSS"
  std::set<FindingKind> exhausted_kinds;
  // Of the first process of a finding.
  std::function<std::optional<std::pair<double, std::string>>(const ProcessSummary& p,
                                                              int64_t t_ns)>
      headroom;
};

constexpr const char* kLeakFix =
    "Find what keeps each step's tensors alive. The usual culprits: a running total of a tensor "
    "that requires grad (`total_loss += loss` keeps every step's autograd graph: write "
    "`total_loss += loss.item()` or `float(loss)`); outputs, predictions or losses kept in a "
    "list without `.detach()` (and `.cpu()` for GPU tensors); caches and dicts that grow with "
    "the steps (bound them, clear them each epoch). To see what grows, compare "
    "`len(gc.get_objects())` or tracemalloc snapshots between steps.";

constexpr const char* kWorkerLeakFix =
    "A DataLoader worker keeps what the dataset's code holds on to between samples: a cache that "
    "grows with every sample read (each worker fills a copy of its own, num_workers times the "
    "memory: bound it, with functools.lru_cache(maxsize=...), or fill it before the DataLoader "
    "starts its workers), lists or dicts appended to in __getitem__, a transform or collate_fn, "
    "files or images opened and never closed. With persistent_workers=True the workers, and "
    "what they keep, live from epoch to epoch. To see what grows, take tracemalloc snapshots in "
    "the dataset's code, or run with num_workers=0 and watch the main process.";

constexpr const char* kForwardLeakFix =
    "Memory that grows with forward passes and no backward (evaluation, validation, inference) "
    "keeps each batch's autograd graph or outputs. The usual culprits: no `with "
    "torch.no_grad():` (or `torch.inference_mode()`) around the evaluation loop, so every "
    "output holds the graph of its forward pass; a running total of a loss or metric as a "
    "tensor (`total_loss += loss`: write `total_loss += loss.item()`); outputs or predictions "
    "kept in a list without `.detach()` (and `.cpu()` for GPU tensors); a metric object that "
    "stores every batch. Wrap evaluation in `with torch.no_grad():` after `model.eval()`.";

// Without DDP forwards the phase may be an evaluation through the model itself, which the hook
// does not count, as well as post-processing: the culprits of both.
constexpr const char* kAfterTrainingLeakFix =
    "Memory that grows after the last training step: what the program does after training "
    "(evaluation, inference, post-processing) keeps what it makes. The usual culprits: no "
    "`with torch.no_grad():` (or `torch.inference_mode()`) around an evaluation loop, so every "
    "output holds the graph of its forward pass; a loss or metric summed as a tensor "
    "(`total_loss += loss`: write `total_loss += loss.item()`); results or predictions appended "
    "to lists without `.detach()` (and `.cpu()`); caches and dicts that grow with the data. "
    "Bound or clear them, or stream them to disk; to see what grows, compare tracemalloc "
    "snapshots.";

// What a process prepares before its first training step keeps growing.
constexpr const char* kBeforeTrainingLeakFix =
    "Memory that grows before the first training step: what the program prepares (reading, "
    "decoding or tokenizing the dataset, building the model) keeps what it makes. The usual "
    "culprits: a whole dataset read into Python lists, dicts or a pandas frame (read it lazily "
    "in the Dataset's __getitem__, or preprocess it once into numpy or Arrow files and memory-map "
    "them); every sample tokenized or decoded up front and kept (do it in the Dataset or the "
    "DataLoader's workers); a cache of decoded images filled for every file; state_dicts or "
    "model copies kept after loading them (`del` them once loaded). The memory held there stays "
    "held through training: to see what holds it, take a tracemalloc snapshot before the first "
    "step.";

// " after its last training step", " before its first training step", or "" for training.
std::string phase_words(const Axis& axis) {
  switch (axis.phase_kind()) {
    case Axis::Phase::kBeforeFirstStep:
      return " before its first training step";
    case Axis::Phase::kAfterLastStep:
      return " after its last training step";
    case Axis::Phase::kTraining:
      break;
  }
  return "";
}

// Seconds from the run's start to `t_ns`, as evidence says it: ", 40.0 s into the run".
std::string into_the_run(const RuleContext& context, int64_t t_ns) {
  std::optional<int64_t> at = store::duration_ns(context.evidence.run.start_ns, t_ns);
  return at ? fmt::format(", {:.1f} s into the run", static_cast<double>(*at) / 1e9) : "";
}

// When the phase began (or ended, before training) and what ran in it.
std::string phase_evidence(const RuleContext& context, const Axis& axis) {
  if (axis.phase_kind() == Axis::Phase::kBeforeFirstStep) {
    return fmt::format(
        "the growth came before the process's first training step (its {} were first counted{}): "
        "while it prepared its data and model, growth per minute of the phase",
        axis.trained(), into_the_run(context, axis.to_ns()));
  }
  std::string out = fmt::format(
      "the growth came after the process's last training step ({} {}{}): ", axis.trained(),
      amount(axis.last_step()), into_the_run(context, axis.from_ns()));
  if (!axis.per_step()) {
    return out +
           "no DDP forward was counted after it (the Python hook counts forward passes through "
           "DistributedDataParallel only), growth per minute of the phase instead";
  }
  out += fmt::format(
      "{} forward passes through DistributedDataParallel followed",
      amount(axis.counted_between(axis.from_ns(), std::numeric_limits<int64_t>::max())));
  if (axis.backwards_after() == 0) {
    return out +
           " and no backward call: evaluation or inference with autograd recording "
           "(outside torch.no_grad())";
  }
  return out +
         fmt::format(" and {} backward calls but no training step", amount(axis.backwards_after()));
}

// A process's steady growth in one measure.
struct Grown {
  const ProcessSummary* process;
  Growth growth;
  int64_t start_ns;  // when the growth was first seen
  int64_t last_ns;   // the last sample
};

std::optional<Grown> grown_in(const ProcessSummary& p, const Axis& axis, const Series& series) {
  std::optional<Growth> g = steady_growth(series.points, axis.limits());
  if (!g) return std::nullopt;
  return Grown{&p, *g, series.time_at(g->from_x), series.t_ns.back()};
}

// What x is: the steps (whose, counted how), the phase after training, or minutes.
std::string axis_evidence(const RuleContext& context, const Axis& axis, size_t processes) {
  if (axis.phase()) return phase_evidence(context, axis);
  if (!axis.per_step()) {
    return "no training steps were counted in this process (the Python hook counts PyTorch "
           "optimizer steps, backward calls and DDP forwards): growth per minute instead";
  }
  return std::string("a step is one of the ") + (axis.rank().empty() ? "process's " : "") +
         axis.steps() +
         (axis.rank().empty() ? ""
          : processes == 1    ? " of its rank, " + axis.rank() + ", whose batches it makes"
                              : " of their rank, " + axis.rank() + ", whose batches they make") +
         ", counted by traindoc's Python hook";
}

// When `headroom` runs out at `slope` bytes per unit of x, from `to_x` on.
std::string projection(const Axis& axis, const std::pair<double, std::string>& headroom,
                       double slope, double to_x) {
  double units_left = headroom.first / slope;
  std::string when = fmt::format("after about {} more {}", amount(units_left), axis.units());
  if (axis.per_step()) {
    when += fmt::format(", near {} {}{}", axis.unit(), amount(to_x + units_left),
                        axis.phase() ? " of the phase" : "");
    if (double rate = axis.steps_per_minute(); rate > 0) {
      when += fmt::format(" (about {:.0f} minutes at {:.0f} {} per minute)", units_left / rate,
                          rate, axis.units());
    }
  }
  return fmt::format("at this rate the {} {} runs out {}",
                     format_bytes(static_cast<uint64_t>(headroom.first)), headroom.second, when);
}

// The leak of `grown`, one process or the DataLoader workers of one rank (the same dataset code
// in each), appended to `out`.
void leak_finding(const RuleContext& context, const std::vector<Grown>& grown, const Axis& axis,
                  const Measure& measure, std::vector<TimedFinding>& out) {
  const ProcessSummary& first = *grown.front().process;
  const std::string unit = axis.unit();
  Finding f;
  f.kind = FindingKind::kMemoryLeak;
  double slope = 0;
  double to_x = 0;
  int64_t start_ns = grown.front().start_ns;
  int64_t last_ns = 0;
  const TimedFinding* end = nullptr;
  for (const Grown& one : grown) {
    const ProcessSummary& p = *one.process;
    const Growth& g = one.growth;
    slope += g.slope;
    to_x = std::max(to_x, g.to_x);
    start_ns = std::min(start_ns, one.start_ns);
    last_ns = std::max(last_ns, one.last_ns);
    f.pids.push_back(p.record.pid);
    add_ranks(f.ranks, context.ranks_of(p));
    std::string span = axis.per_step()
                           ? fmt::format("{} {} and {}{}", axis.units(), amount(g.from_x),
                                         amount(g.to_x), axis.phase() ? " of the phase" : "")
                           : fmt::format("minutes {:.1f} and {:.1f} of the {}", g.from_x, g.to_x,
                                         axis.phase() ? "phase" : "process");
    f.evidence.push_back(fmt::format(
        "{} of {} grew from {} to {} between {} (+{}): {} per {}, a robust (Theil-Sen) fit of {} "
        "samples after warm-up, growing in {} of 4 quarters",
        measure.name, context.name(p), mib(g.from_bytes), mib(g.to_bytes), span,
        mib(g.growth_bytes()), mib(g.slope), unit, g.points, g.growing_quarters));
    // Memory that grew before the first step and then stayed flat through training did not
    // run out in that phase: a later failure is told by the phase it came in.
    if (end == nullptr && axis.phase_kind() != Axis::Phase::kBeforeFirstStep) {
      end = exhaustion_of(context, out, p, one.start_ns, measure.exhausted_kinds);
    }
  }
  // An epoch's workers long gone did not run the memory out of a kill that came later.
  constexpr int64_t kEndSlackNs = 10'000'000'000;
  if (end != nullptr && grown.size() > 1 && end->t_ns > store::shifted_ns(last_ns, kEndSlackNs) &&
      std::find(f.pids.begin(), f.pids.end(), end->pid) == f.pids.end()) {
    end = nullptr;
  }
  if (grown.size() == 1) {
    f.title = fmt::format("{}: {} grows {} per {}{}", context.name(first), measure.memory,
                          mib(slope), unit, phase_words(axis));
  } else {
    f.title =
        fmt::format("{} DataLoader workers of {}: {} grows {} per {} together", grown.size(),
                    context.name(*rank_above(context, first)), measure.memory, mib(slope), unit);
  }
  f.evidence.push_back(axis_evidence(context, axis, grown.size()));
  if (end != nullptr) {
    // The leak came first and the failure is its consequence: the rules order errors by time,
    // and the leak's time is when the growth was first seen.
    f.severity = Severity::kError;
    f.confidence = 0.85;
    f.evidence.push_back(ran_out(*end));
  } else if (axis.phase_kind() == Axis::Phase::kBeforeFirstStep) {
    // The growth ended as training began: what it holds stays held, but grows no more.
    f.severity = Severity::kInfo;
    f.confidence = 0.6;
  } else {
    f.severity = Severity::kWarning;
    f.confidence = axis.per_step() ? 0.8 : 0.7;
    if (auto headroom = measure.headroom(first, last_ns)) {
      f.evidence.push_back(projection(axis, *headroom, slope, to_x));
    }
  }
  f.fix = first.role.role == Role::kWorker                     ? kWorkerLeakFix
          : !axis.phase()                                      ? kLeakFix
          : axis.phase_kind() == Axis::Phase::kBeforeFirstStep ? kBeforeTrainingLeakFix
          : axis.forwards()                                    ? kForwardLeakFix
                                                               : kAfterTrainingLeakFix;
  out.push_back({std::move(f), start_ns, first.record.pid});
}

// A DataLoader worker's private memory (USS) growing while its RSS stays flat: pages it shares
// with its rank becoming its own copies as it reads them.
struct WorkerGrowth {
  const ProcessSummary* process;
  Growth uss;
  double rss = 0;
};

std::optional<WorkerGrowth> copy_on_access(const RuleContext& context, const ProcessSummary& p) {
  Axis minutes;
  Series uss = series_of(context, p, minutes, [](const store::ProcSample& s) { return s.uss; });
  std::optional<Growth> g = steady_growth(uss.points);
  if (!g) return std::nullopt;
  Series rss = series_of(context, p, minutes,
                         [](const store::ProcSample& s) { return std::optional<uint64_t>(s.rss); });
  std::erase_if(rss.points, [&](const SeriesPoint& s) { return s.x < g->from_x; });
  if (rss.points.empty()) return std::nullopt;
  double rss_growth = rss.points.back().bytes - rss.points.front().bytes;
  if (rss_growth > kFlatRss * g->growth_bytes()) return std::nullopt;
  return WorkerGrowth{&p, *g, rss.points.back().bytes};
}

void copy_on_access_finding(const RuleContext& context, const std::vector<WorkerGrowth>& workers,
                            std::vector<TimedFinding>& out) {
  if (workers.empty()) return;
  Finding f;
  f.kind = FindingKind::kMemoryLeak;
  f.severity = Severity::kWarning;
  f.confidence = 0.75;
  double total = 0;
  int64_t start_ns = 0;
  std::map<const ProcessSummary*, int> workers_of;  // rank -> its workers
  for (const ProcessSummary& p : context.processes) {
    if (p.role.role == Role::kWorker) ++workers_of[rank_above(context, p)];
  }
  for (const WorkerGrowth& w : workers) {
    const ProcessSummary& p = *w.process;
    f.pids.push_back(p.record.pid);
    add_ranks(f.ranks, context.ranks_of(p));
    total += w.uss.growth_bytes();
    f.evidence.push_back(fmt::format(
        "{}: private memory (USS) grew from {} to {} in {} (+{}, {} per minute) while its RSS "
        "stayed near {}",
        context.name(p), mib(w.uss.from_bytes), mib(w.uss.to_bytes),
        duration(w.uss.to_x - w.uss.from_x), mib(w.uss.growth_bytes()), mib(w.uss.slope),
        mib(w.rss)));
    int64_t t = p.record.start_ns;
    if (start_ns == 0 || t < start_ns) start_ns = t;
    const TimedFinding* end = exhaustion_of(context, out, p, t, {FindingKind::kHostOomKilled});
    if (end != nullptr && f.severity != Severity::kError) {
      f.severity = Severity::kError;
      f.evidence.push_back(ran_out(*end));
    }
  }
  const ProcessSummary& first = *workers.front().process;
  int num_workers = workers_of[rank_above(context, first)];
  f.title = fmt::format(
      "DataLoader workers copy the Python objects they read: private memory grows in {} "
      "worker(s), +{} together",
      workers.size(), mib(total));
  f.evidence.push_back(fmt::format(
      "each worker holds its own copy of every page of the dataset it has touched: with {} "
      "workers per rank the job's memory grows toward the dataset's size × {} (num_workers)",
      num_workers, num_workers));
  f.fix =
      "Copy-on-access: reading a Python object (list, dict, str, a pandas object column) in a "
      "forked worker writes its reference count, so each page read is copied into that worker; "
      "RSS hides it, USS/PSS show it. Hold the dataset in numpy arrays, pyarrow tables or torch "
      "tensors, or a memory-mapped file (np.memmap, Arrow/HDF5 on disk), not in Python lists or "
      "dicts; or use fewer workers.";
  out.push_back({std::move(f), start_ns, first.record.pid});
}

// How to measure `p`'s growth: by its steps, its rank's (a DataLoader worker), or its minutes;
// a worker that made no training batches (a validation loader's, between the rank's steps)
// grows by its own minutes.
Axis axis_for(const RuleContext& context, const ProcessSummary& p) {
  const ProcessSummary& counter = step_counter(context, p);
  Axis axis(context, p, counter);
  if (&counter == &p) return axis;
  std::optional<int64_t> first;
  int64_t last = 0;
  for (const store::ProcSample& s : context.evidence.proc_samples) {
    if (s.pid != p.record.pid || s.start_ticks != p.record.start_ticks) continue;
    if (!first) first = s.t_ns;
    last = s.t_ns;
  }
  if (first && axis.counted_between(*first, last) >= kMinSteps) return axis;
  return Axis(context, p, p);
}

// The growing DataLoader workers of each rank, by the rank's pid and the process whose steps
// measure them (0: minutes).
using WorkerLeaks = std::map<std::pair<int, int>, std::pair<Axis, std::vector<Grown>>>;

// One finding for the workers alive together: each epoch's, when the DataLoader starts new ones.
void worker_leak_findings(const RuleContext& context, WorkerLeaks& worker_leaks,
                          const Measure& host, std::vector<TimedFinding>& out) {
  for (auto& [key, group] : worker_leaks) {
    auto& [axis, grown] = group;
    std::sort(grown.begin(), grown.end(),
              [](const Grown& a, const Grown& b) { return a.start_ns < b.start_ns; });
    std::vector<Grown> together;
    for (const Grown& g : grown) {
      bool overlaps = std::any_of(together.begin(), together.end(),
                                  [&](const Grown& t) { return g.start_ns <= t.last_ns; });
      if (!together.empty() && !overlaps) {
        leak_finding(context, together, axis, host, out);
        together.clear();
      }
      together.push_back(g);
    }
    leak_finding(context, together, axis, host, out);
  }
}

}  // namespace

void rule_memory_leak(const RuleContext& context, std::vector<TimedFinding>& out) {
  // A dataset read through np.memmap or Arrow fills RSS with pages of its file, which the kernel
  // drops and reads again as it needs: growth, but no leak. Runs before schema 6 did not say.
  const std::vector<store::ProcSample>& samples = context.evidence.proc_samples;
  bool file_pages = std::any_of(samples.begin(), samples.end(),
                                [](const store::ProcSample& s) { return s.rss_file.has_value(); });
  Measure host{
      "host memory",
      file_pages ? "RSS without the pages of mapped files" : "RSS",
      {FindingKind::kHostOomKilled, FindingKind::kHostAllocFailed},
      [&](const ProcessSummary& p, int64_t t_ns) {
        return host_headroom(context.evidence, p, t_ns);
      },
  };
  std::vector<WorkerGrowth> workers;
  WorkerLeaks worker_leaks;
  for (const ProcessSummary& p : context.processes) {
    Axis axis = axis_for(context, p);
    Measure gpu{
        "GPU memory",
        "GPU memory held (NVML, all its GPUs)",
        {FindingKind::kGpuOom, FindingKind::kGpuFragmentation},
        [&](const ProcessSummary&, int64_t t_ns) {
          return gpu_headroom(context.evidence.gpu, p, t_ns);
        },
    };
    if (std::optional<Grown> g = grown_in(p, axis, gpu_series_of(context, p, axis))) {
      leak_finding(context, {*g}, axis, gpu, out);
    }
    // A sample whose status read failed (the process was ending) has no file pages to take off.
    auto rss_of = [&](const store::ProcSample& s) {
      return s.rss_file || !file_pages
                 ? std::optional<uint64_t>(s.rss - std::min(s.rss, s.rss_file.value_or(0)))
                 : std::nullopt;
    };
    // Growth before and after the training (data preparation; evaluation, inference, what the
    // program does next), which the steps do not measure: by the DDP forward passes after it,
    // or by minutes.
    for (const Axis& phase : outside_training(context, p)) {
      if (std::optional<Grown> g = grown_in(p, phase, gpu_series_of(context, p, phase))) {
        leak_finding(context, {*g}, phase, gpu, out);
      }
      if (std::optional<Grown> g = grown_in(p, phase, series_of(context, p, phase, rss_of))) {
        leak_finding(context, {*g}, phase, host, out);
      }
    }
    Series rss = series_of(context, p, axis, rss_of);
    const ProcessSummary* rank = rank_above(context, p);
    if (std::optional<Grown> g = grown_in(p, axis, rss)) {
      if (p.role.role == Role::kWorker && rank != nullptr) {
        int counter = axis.per_step() ? step_counter(context, p).record.pid : 0;
        auto& [group_axis, group] = worker_leaks[{rank->record.pid, counter}];
        group_axis = axis;
        group.push_back(*g);
      } else {
        leak_finding(context, {*g}, axis, host, out);
      }
      continue;
    }
    if (p.role.role != Role::kWorker) continue;
    if (std::optional<WorkerGrowth> w = copy_on_access(context, p)) workers.push_back(*w);
  }
  worker_leak_findings(context, worker_leaks, host, out);
  copy_on_access_finding(context, workers, out);
}

}  // namespace traindoc::analysis
