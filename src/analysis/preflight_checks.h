// The preflight checks: the facts of the machine and the command (store/preflight.h) in, the
// traps they set out, each with what was measured, one function per check; and the words of each
// result, which `traindoc check`, the start of `traindoc run` and the report's preflight findings
// all use. Pure. The thresholds are documented in docs/check.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/preflight.h"

namespace traindoc::analysis {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

// /dev/shm: what the DataLoader workers of every local rank need, a safe minimum where the
// command names no workers: its batches in flight (prefetch_factor 2 per worker), at an allowance
// for a batch, since a batch's size in bytes cannot be read off the command line.
inline constexpr uint64_t kShmMinimum = 512 * kMiB;
inline constexpr uint64_t kShmBatchAllowance = 32 * kMiB;
inline constexpr int kPrefetchFactor = 2;
// Less than this free: not even one batch of images fits.
inline constexpr uint64_t kShmNearlyFull = 16 * kMiB;
// Other processes' memory on a GPU above this (and above kGpuTakenShare of it): may fail;
// above kGpuFullShare of it: will fail.
inline constexpr uint64_t kGpuTakenBytes = 1 * kGiB;
inline constexpr double kGpuTakenShare = 0.05;
inline constexpr double kGpuFullShare = 0.95;
// Host memory: MemAvailable under this or under kHostLowShare of MemTotal.
inline constexpr uint64_t kHostMinimum = 2 * kGiB;
inline constexpr double kHostLowShare = 0.10;
// The memory cgroup: what is left under its limit, under this or kCgroupLowShare of the limit.
inline constexpr uint64_t kCgroupMinimum = 1 * kGiB;
inline constexpr double kCgroupLowShare = 0.10;
// RLIMIT_NOFILE's soft limit: under kNofileMinimum may fail with DataLoader workers (torch's
// file_descriptor sharing strategy keeps a descriptor per tensor in flight); under what a rank
// and its named workers take with the smallest batches, will fail: kNofileBase + kNofilePerWorker
// per worker, as measured with torch 1.13 (2 workers failed at 20 and ran at 24, 4 at 32 and
// 40, 8 at 56 and 60).
inline constexpr uint64_t kNofileMinimum = 4096;
inline constexpr uint64_t kNofileBase = 12;
inline constexpr uint64_t kNofilePerWorker = 6;
// RLIMIT_MEMLOCK where InfiniBand is present: NCCL registers its buffers with the NIC.
inline constexpr uint64_t kMemlockMinimum = 1 * kGiB;
// RLIMIT_STACK: glibc's default for a thread's stack too.
inline constexpr uint64_t kStackMinimum = 8 * kMiB;
// RLIMIT_CORE above this (or unlimited) with a core_pattern that writes files.
inline constexpr uint64_t kCoreLarge = 1 * kGiB;

// Every check that finds a trap in `facts`, will-fail first, in the order of the checks.
std::vector<store::PreflightResult> preflight_checks(const store::PreflightFacts& facts);

// The NVML indices of the GPUs the job will see, in CUDA's order: CUDA_VISIBLE_DEVICES's
// entries up to the first that names none (CUDA ignores the rest), every GPU when unset.
// `invalid`: that entry, "" when none.
std::vector<int> visible_gpus(const store::PreflightFacts& facts, std::string& invalid);

// The ranks the command starts on this node: torchrun's --nproc_per_node (the visible GPUs for
// "gpu" and "auto"), else 1.
int local_ranks(const store::PreflightFacts& facts);

struct PreflightWords {
  std::string title;  // the measured fact and what it does to the job: one short line
  std::string fix;
};

PreflightWords describe(const store::PreflightResult& result);

// "3.11" of 311; "12.4" of 12040.
std::string python_version_text(int64_t version);
std::string cuda_version_text(int64_t version);

}  // namespace traindoc::analysis
