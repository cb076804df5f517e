// What one trial of `traindoc fit` measured and how it ended, read from its run's evidence and
// diagnosis: each meter's peak (a rank's GPU, a rank's share of a memory budget, the job's host
// memory) and the memory that meter may use. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "analysis/batch_search.h"
#include "analysis/diagnosis.h"

namespace traindoc::analysis {

struct TrialLimits {
  std::optional<uint64_t> budget;  // --memory-budget: what each rank may use
  double headroom = 0.1;           // of each capacity, kept free
};

struct TrialReading {
  TrialOutcome outcome = TrialOutcome::kFits;
  std::map<std::string, uint64_t> peaks;   // by meter
  std::map<std::string, uint64_t> usable;  // by meter: capacity x (1 - headroom)
  std::map<std::string, uint64_t> capacity;
  int world = 1;  // the processes that trained
  // The finding that ended it where it failed (kOutOfMemory, kFailed); -1: none.
  int finding = -1;
  bool ended_by_traindoc = false;  // it ran its steps, and traindoc ended it
};

TrialReading read_trial(const store::Evidence& evidence, const Diagnosis& diagnosis,
                        const TrialLimits& limits);

}  // namespace traindoc::analysis
