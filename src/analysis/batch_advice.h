// The batch-size advice of an out-of-memory finding (gpu-oom, host-oom-killed, host-alloc-failed)
// whose process told its batch size (the Python hook's batch-size event): its peak at that batch,
// the memory a sample takes by the run's own samples, a smaller batch that fits with the gradient
// accumulation that keeps the effective batch, and the `traindoc fit` command that confirms it.
// Facts first (batch_facts), then one function that makes their words (batch_advice). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/rule_context.h"

namespace traindoc::analysis {

// The memory a batch has to fit in.
enum class BatchMemory {
  kGpu,      // the GPU the process ran out of
  kCgroup,   // the host memory of its memory cgroup, whose limit is below the machine's
  kMachine,  // the machine's host memory
};

struct BatchFacts {
  int64_t batch = 0;   // the batch size the process stepped on (its DataLoader's)
  int world_size = 1;  // the ranks that each step on such a batch
  BatchMemory memory = BatchMemory::kGpu;
  std::optional<uint64_t> peak;      // the process's peak at that batch (GPU, or host RSS)
  bool without_files = false;        // host RSS less the pages of mapped files
  std::optional<uint64_t> before;    // its memory before its first training step, where sampled
  std::optional<uint64_t> capacity;  // the memory it must fit in (the GPU, the limit)
  std::vector<std::string> command;  // the job's command, as traindoc ran it

  // (peak - before) / batch: what one sample adds; none where the run does not show it.
  std::optional<double> per_sample_bytes() const;
  // The largest batch below `batch` whose estimate fits in 90% of the capacity; none where
  // there is no estimate, no capacity, or none fits (before >= 90% of the capacity, or the
  // estimate says `batch` itself fits).
  std::optional<int64_t> fitting_batch() const;
};

// The fraction of the capacity a batch may fill: room for the allocator's blocks and the spikes
// that samples miss.
inline constexpr double kBatchHeadroom = 0.9;

// What the failure itself says of the memory, where the caller knows it.
struct FailureMemory {
  BatchMemory memory = BatchMemory::kGpu;  // kGpu, or any host kind (the limit is looked up)
  int64_t t_ns = 0;                        // when it ran out
  // = {}: brace lists may leave them out, warning-free.
  std::optional<int> device = {};          // the NVML device of a GPU failure
  std::optional<uint64_t> capacity = {};   // the GPU's, as the error or NVML gives it
  std::optional<uint64_t> in_use = {};     // the process's memory at the failure, by the error
  std::optional<uint64_t> requested = {};  // the allocation refused, where the error says
};

// The facts for process `p`'s failure; none where it told no batch size before `failure.t_ns`.
std::optional<BatchFacts> batch_facts(const RuleContext& context, const ProcessSummary& p,
                                      const FailureMemory& failure);

// `command` with the argument that sets the batch size (`--batch-size 16`, `--batch_size=16`,
// `-b 16`, `bs=16`, `data.batch_size=16`, also inside a shell's `-c` string: an option whose name
// has "batch" in it or is "bs", or `-b`, whose value is `batch`) holding `{batch}` in place of the
// value; an evaluation loader's option only where no other one matches. None where no argument
// holds it.
std::optional<std::vector<std::string>> with_batch_placeholder(
    const std::vector<std::string>& command, int64_t batch);

// The words of a command as a POSIX shell reads them back: each argument quoted where it needs.
std::string shell_words(const std::vector<std::string>& command);

// The sentences the fix gains: the peak and the estimate, the batch that fits with its
// accumulation, and the `traindoc fit` command line.
std::string batch_advice(const BatchFacts& facts);

// batch_advice of `p`'s facts appended to `fix`; the fix as it was where the batch is unknown,
// and where one request was larger than all the memory (a shape bug, not a batch to tune).
std::string with_batch_advice(const RuleContext& context, const ProcessSummary& p,
                              const FailureMemory& failure, std::string fix);

}  // namespace traindoc::analysis
