// What PyTorch's caching allocator held on a device when a process ran out of GPU memory there,
// as the Python hook read it at that moment (torch.cuda.memory_stats and the segment list of
// torch.cuda.memory_snapshot): typed numbers for analysis. Written by the supervisor through
// StoreWriter, read back by read_evidence (run.db schema 15).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace traindoc::store {

// A Python line whose allocations were live at the OOM (allocation history on): the innermost
// frame of the job's own code in each live block's stack, its blocks summed.
struct AllocationSite {
  std::string file;
  int64_t line = 0;
  std::string function;
  uint64_t bytes = 0;  // live bytes allocated there
  uint64_t blocks = 0;
  uint64_t largest = 0;  // the largest and smallest of those blocks
  uint64_t smallest = 0;

  bool operator==(const AllocationSite&) const = default;
};

// One out-of-memory error of one process (its `number`-th, counted from 0). Bytes; nullopt
// where the process's PyTorch did not give the figure (= {}: brace lists may leave them out).
struct AllocatorState {
  int64_t t_ns = 0;
  int pid = 0;
  int number = 0;
  int device = 0;                            // the CUDA device index, in the process's numbering
  std::optional<uint64_t> requested = {};    // the request that failed (rounded as PyTorch does)
  std::optional<uint64_t> device_free = {};  // what the driver had free on the device then
  // memory_stats: tensors' blocks, what the allocator holds from the driver, the free parts of
  // split blocks, the cache flushes and retries before this error, the OOMs so far.
  std::optional<uint64_t> allocated = {};
  std::optional<uint64_t> reserved = {};
  std::optional<uint64_t> inactive_split = {};
  std::optional<uint64_t> alloc_retries = {};
  std::optional<uint64_t> ooms = {};
  // The segment list, on this device: how many segments, the bytes of blocks by state (live
  // tensors; freed but still in use by another stream; free and cached), the largest free block.
  std::optional<uint64_t> segments = {};
  std::optional<uint64_t> active_allocated = {};
  std::optional<uint64_t> pending_free = {};
  std::optional<uint64_t> inactive = {};
  std::optional<uint64_t> largest_free = {};
  bool history = false;  // allocation history was being recorded (traindoc run --memory-history)
  std::string snapshot = {};  // the snapshot pickle, relative to the run folder; "" when none saved
  std::vector<AllocationSite> sites = {};  // largest first; empty without history

  bool operator==(const AllocatorState&) const = default;
};

}  // namespace traindoc::store
