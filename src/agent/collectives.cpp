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

// Written only by processes that make collectives: apart from the page every process writes at
// start-up (CMakeLists.txt).
alignas(4096) GroupCounter g_groups[kGroupTable];

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

namespace {

// This rank's next call index in `group` (1, 2, ...), counted per group across threads; 0 when
// the fixed table of groups is full.
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

}  // namespace

uint64_t write_collective_enter(const common::CollectiveCall& call, common::CollectiveSource source,
                                bool numbered) {
  uint64_t number = numbered ? next_collective_number(call.group) : 0;
  common::CollectiveRing* ring = current_collective_ring();
  uint64_t pos = 0;
  common::CollectiveCall* entry = ring ? common::claim_collective(*ring, pos) : nullptr;
  if (entry == nullptr) return number;
  *entry = call;
  entry->number = number;
  entry->event = static_cast<uint8_t>(common::CollectiveEvent::kEnter);
  entry->source = static_cast<uint8_t>(source);
  entry->time_ns = common::coarse_realtime_ns();
  common::publish_collective(*ring, pos);
  return number;
}

void write_collective_exit(const common::CollectiveCall& call, uint64_t number) {
  common::CollectiveRing* ring = current_collective_ring();
  uint64_t pos = 0;
  common::CollectiveCall* entry = ring ? common::claim_collective(*ring, pos) : nullptr;
  if (entry == nullptr) return;
  entry->group = call.group;
  entry->group_rank = call.group_rank;
  entry->group_size = call.group_size;
  entry->number = number;
  entry->event = static_cast<uint8_t>(common::CollectiveEvent::kExit);
  entry->source = call.source;
  entry->flags = call.flags;
  entry->time_ns = common::coarse_realtime_ns();
  common::publish_collective(*ring, pos);
}

}  // namespace traindoc::agent
