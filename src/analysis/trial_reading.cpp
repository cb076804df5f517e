// What one trial of `traindoc fit` measured and how it ended (trial_reading.h). Pure.
#include "analysis/trial_reading.h"

#include <algorithm>
#include <vector>

namespace traindoc::analysis {
namespace {

bool for_memory(FindingKind kind) {
  return kind == FindingKind::kGpuOom || kind == FindingKind::kGpuFragmentation ||
         kind == FindingKind::kHostOomKilled || kind == FindingKind::kHostAllocFailed;
}

// The processes that trained: those that counted steps, else the ranks, else the one that held
// the most memory (a job the hook cannot count the steps of).
std::vector<const ProcessSummary*> trainers(const Diagnosis& diagnosis) {
  std::vector<const ProcessSummary*> found;
  for (const ProcessSummary& p : diagnosis.processes) {
    if (p.step_count()) found.push_back(&p);
  }
  if (found.empty()) {
    for (const ProcessSummary& p : diagnosis.processes) {
      if (p.role.role == Role::kRank) found.push_back(&p);
    }
  }
  if (found.empty() && !diagnosis.processes.empty()) {
    found.push_back(&*std::max_element(diagnosis.processes.begin(), diagnosis.processes.end(),
                                       [](const ProcessSummary& a, const ProcessSummary& b) {
                                         return a.peak_rss.value_or(0) < b.peak_rss.value_or(0);
                                       }));
  }
  std::sort(found.begin(), found.end(), [](const ProcessSummary* a, const ProcessSummary* b) {
    return a->record.rank.value_or(-1) < b->record.rank.value_or(-1);
  });
  return found;
}

uint64_t kept_usable(uint64_t capacity, double headroom) {
  return static_cast<uint64_t>(static_cast<double>(capacity) * (1 - headroom));
}

void add_meter(TrialReading& reading, const std::string& meter, uint64_t peak, uint64_t capacity,
               double headroom) {
  reading.peaks[meter] = peak;
  reading.capacity[meter] = capacity;
  reading.usable[meter] = kept_usable(capacity, headroom);
}

// A trainer's GPU, where NVML saw it hold memory: its peak there and the device's size.
std::optional<std::pair<uint64_t, uint64_t>> gpu_of(const Diagnosis& diagnosis,
                                                    const ProcessSummary& trainer) {
  for (const GpuSummary& gpu : diagnosis.gpus) {
    for (const GpuSummary::Holder& holder : gpu.holders) {
      if (holder.in_job && holder.pid == trainer.record.pid) {
        return std::pair{holder.peak, gpu.device.memory_total};
      }
    }
  }
  return std::nullopt;
}

// The job's host memory: the sum of its processes' peaks, which counts the pages they share once
// for each (so errs on the safe side), against the memory cgroup's limit or what the host had
// available as the job began.
void add_host_meter(TrialReading& reading, const store::Evidence& evidence,
                    const Diagnosis& diagnosis, double headroom) {
  if (evidence.host_samples.empty()) return;
  const store::HostSample& first = evidence.host_samples.front();
  uint64_t capacity = first.mem_available;
  if (first.cgroup_max) capacity = std::min(capacity, *first.cgroup_max);
  uint64_t sum = 0;
  for (const ProcessSummary& p : diagnosis.processes) sum += p.peak_rss.value_or(0);
  if (capacity > 0 && sum > 0) add_meter(reading, "host memory", sum, capacity, headroom);
}

void add_meters(TrialReading& reading, const store::Evidence& evidence, const Diagnosis& diagnosis,
                const TrialLimits& limits) {
  std::vector<const ProcessSummary*> found = trainers(diagnosis);
  reading.world = std::max<int>(1, static_cast<int>(found.size()));
  for (size_t i = 0; i < found.size(); ++i) {
    const ProcessSummary& trainer = *found[i];
    std::string rank = "rank " + std::to_string(trainer.record.rank.value_or(static_cast<int>(i)));
    if (std::optional<std::pair<uint64_t, uint64_t>> gpu = gpu_of(diagnosis, trainer)) {
      add_meter(reading, rank + " GPU", gpu->first,
                limits.budget ? std::min(*limits.budget, gpu->second) : gpu->second,
                limits.headroom);
    } else if (limits.budget && trainer.peak_rss) {
      add_meter(reading, rank + " memory", *trainer.peak_rss, *limits.budget, limits.headroom);
    }
  }
  add_host_meter(reading, evidence, diagnosis, limits.headroom);
}

}  // namespace

TrialReading read_trial(const store::Evidence& evidence, const Diagnosis& diagnosis,
                        const TrialLimits& limits) {
  TrialReading reading;
  reading.ended_by_traindoc =
      std::any_of(evidence.events.begin(), evidence.events.end(),
                  [](const store::Event& e) { return e.kind == store::EventKind::kTrialEnded; });
  add_meters(reading, evidence, diagnosis, limits);
  const std::vector<Finding>& findings = diagnosis.findings;
  for (size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].severity == Severity::kError && for_memory(findings[i].kind)) {
      reading.outcome = TrialOutcome::kOutOfMemory;
      reading.finding = static_cast<int>(i);
      return reading;
    }
  }
  const store::RunInfo& run = diagnosis.run;
  bool failed = run.exit_signal.has_value() || run.exit_code.value_or(1) != 0;
  if (failed && !reading.ended_by_traindoc) {
    reading.outcome = TrialOutcome::kFailed;
    auto root = std::find_if(findings.begin(), findings.end(),
                             [](const Finding& f) { return f.root_cause; });
    if (root != findings.end()) reading.finding = static_cast<int>(root - findings.begin());
    return reading;
  }
  bool over = std::any_of(reading.peaks.begin(), reading.peaks.end(), [&](const auto& entry) {
    return entry.second > reading.usable.at(entry.first);
  });
  reading.outcome = over ? TrialOutcome::kOverBudget : TrialOutcome::kFits;
  return reading;
}

}  // namespace traindoc::analysis
