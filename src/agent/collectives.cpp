// The per-group call counters and the collective record writer of the agent, in every job
// process (LD_PRELOAD), called from the job's threads inside collective calls (Python hook and
// NCCL interposers). Lock-free, no allocation: a fixed open-addressed table of groups.
#include "agent/collectives.h"

#include <atomic>

#include "agent/agent.h"
#include "common/clock.h"
#include "common/collective_ring.h"

namespace traindoc::agent {
namespace {

// Groups a process uses at once: the world, a few data/model-parallel subgroups, pair groups of
// point-to-point calls. Beyond this, calls go unnumbered (number 0) and are not compared.
constexpr uint32_t kGroupTable = 1024;

struct GroupCounter {
  std::atomic<uint64_t> group{0};  // 0: free
  std::atomic<uint64_t> calls{0};
};

GroupCounter g_groups[kGroupTable];

}  // namespace

uint64_t identity_hash(const void* data, uint64_t size, uint64_t seed) {
  uint64_t hash = 0xcbf29ce484222325ULL ^ seed;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (uint64_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint64_t next_collective_number(uint64_t group) {
  uint64_t key = group == 0 ? 1 : group;
  for (uint32_t probe = 0; probe < kGroupTable; ++probe) {
    GroupCounter& entry = g_groups[(key + probe) % kGroupTable];
    uint64_t seen = entry.group.load(std::memory_order_acquire);
    if (seen == 0 && entry.group.compare_exchange_strong(seen, key, std::memory_order_acq_rel)) {
      seen = key;
    }
    if (seen == key) return entry.calls.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  return 0;
}

void write_collective(common::CollectiveCall& call) {
  common::CollectiveRing* ring = current_collective_ring();
  if (ring == nullptr) return;
  call.time_ns = common::realtime_ns();
  common::append_collective(*ring, call);
}

void write_collective_exit(uint64_t group, uint64_t number, common::CollectiveSource source) {
  common::CollectiveRing* ring = current_collective_ring();
  if (ring == nullptr) return;
  common::CollectiveCall call{};
  call.group = group;
  call.number = number;
  call.event = static_cast<uint8_t>(common::CollectiveEvent::kExit);
  call.source = static_cast<uint8_t>(source);
  call.peer = -1;
  call.time_ns = common::realtime_ns();
  common::append_collective(*ring, call);
}

}  // namespace traindoc::agent
