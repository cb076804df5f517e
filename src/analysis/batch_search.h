// The batch-size search of `traindoc fit`: a linear model of each meter's peak memory in the
// batch size (fixed + per sample x batch), fitted to the trials that ran, predicts the largest
// batch that fits; a trial confirms it, and the search bisects only where the model was wrong.
// Pure: the caller runs the trials (cli/fit_command.cpp) or replays measured curves (bench/).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace traindoc::analysis {

// How one trial ended.
enum class TrialOutcome {
  kFits,         // ran its steps (or to its end) with every peak within its meter's usable memory
  kOverBudget,   // ran, but a measured peak went above a meter's usable memory
  kOutOfMemory,  // failed for memory: GPU out of memory, host OOM kill, an allocation refused
  kFailed,       // failed for another reason: the search stops there
};

const char* to_string(TrialOutcome outcome);

struct Trial {
  int batch = 0;
  TrialOutcome outcome = TrialOutcome::kFits;
  // By meter ("rank 0 GPU", "rank 1 memory", "job host memory"): the peak bytes the trial
  // measured; a meter it could not measure (a crash before any sample) is absent.
  std::map<std::string, uint64_t> peaks = {};  // = {}: brace lists may leave it out
  double seconds = 0;
};

// peak = fixed + per_sample x batch.
struct MemoryModel {
  double fixed_bytes = 0;
  double per_sample_bytes = 0;

  double at(int batch) const { return fixed_bytes + per_sample_bytes * batch; }
};

// Theil-Sen over (batch, peak): the median of the pairwise slopes and the median intercept, so
// that one peak rounded up by an allocator's block does not tilt the line. Empty under two
// distinct batches.
std::optional<MemoryModel> fit_memory(const std::vector<std::pair<int, uint64_t>>& points);

struct SearchLimits {
  int min_batch = 1;             // the first trial
  std::optional<int> max_batch;  // never recommend more
  int max_trials = 8;
  // By meter: the memory a peak may reach, capacity x (1 - headroom).
  std::map<std::string, uint64_t> usable;
};

// Why the search is over, or kNone while it goes on.
enum class SearchEnd {
  kNone,
  kFound,        // `answer` is the largest batch that fit
  kMinFails,     // the first trial (--min) does not fit
  kBelowFixed,   // the memory without any sample (the model's fixed part) is above the usable
  kNoGrowth,     // the peaks do not grow with the batch: the parameter is not the batch size
  kTrialFailed,  // a trial failed for a reason other than memory
};

struct SearchStep {
  SearchEnd end = SearchEnd::kNone;
  std::optional<int> next_batch;  // while end is kNone: the batch of the next trial
  int answer = 0;                 // kFound: the largest batch that fit
  // The models of the meters with two measured batches or more, and the meter whose prediction
  // is smallest (the one that limits the batch); "" where no model predicts yet.
  std::map<std::string, MemoryModel> models;
  std::string limiting;
};

// The largest batch of the trials that fit; 0 when none did.
int largest_fit(const std::vector<Trial>& trials);

// The next trial, or the end of the search, from the trials so far (in the order they ran).
SearchStep next_search_step(const SearchLimits& limits, const std::vector<Trial>& trials);

}  // namespace traindoc::analysis
