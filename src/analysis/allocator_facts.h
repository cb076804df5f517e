// What PyTorch's caching allocator held at an out-of-memory error (the Python hook's reading,
// store::AllocatorState): whether live tensors filled the memory or free cached blocks too
// small for the request (fragmentation), and the words the gpu-oom and gpu-fragmentation
// findings cite. Pure; used by rule_gpu_oom.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "store/evidence.h"

namespace traindoc::analysis {

enum class AllocatorVerdict {
  kUnknown,      // the reading lacks the numbers to tell
  kLiveTensors,  // the free cached blocks together could not hold the request: tensors filled it
  kFragmented,   // they could, but no single free block was large enough
};

AllocatorVerdict allocator_verdict(const store::AllocatorState& state);

// Evidence lines: live tensors, free cached blocks and the largest, blocks waiting on other
// streams, segments, retries, the driver's free memory; the top allocation sites; the snapshot.
// `where`: the device in words ("GPU 0 (00000000:06:00.0)", "CUDA device 0").
std::vector<std::string> allocator_evidence(const store::AllocatorState& state,
                                            const std::string& where);

// What to add to the fragmentation fix: when to call torch.cuda.empty_cache().
inline constexpr const char* kEmptyCacheTiming =
    " Where shapes change between phases (training, then evaluation), call "
    "torch.cuda.empty_cache() between them, not in every step (each call gives the cache back "
    "and the next step allocates it again).";

// The reading of process `pid`'s error printed at `t_ns`: its latest one from before then (the
// observer runs before the error is raised), not in `taken`; nullptr when there is none.
const store::AllocatorState* allocator_state_before(
    const store::Evidence& evidence, int pid, int64_t t_ns,
    const std::set<const store::AllocatorState*>& taken);

}  // namespace traindoc::analysis
