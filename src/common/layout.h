// The shared-memory contract between the agent (in every job process) and the supervisor.
// Both map <run>/agent/slots: the supervisor creates it, each job process claims one slot.
// Header-only; everything here is async-signal-safe (plain loads, stores and atomics).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace traindoc::common {

inline constexpr uint32_t kAgentMagic = 0x54444147;  // "TDAG"
inline constexpr uint32_t kAgentVersion = 1;
inline constexpr uint32_t kSlotCount = 16384;  // a fork then exec takes two
inline constexpr uint32_t kRingRecords = 120;
inline constexpr uint32_t kCmdlineSize = 256;
inline constexpr const char* kAgentFileName = "agent/slots";
inline constexpr const char* kRunDirEnv = "TRAINDOC_RUN_DIR";

// How a process obtained its slot.
enum class SlotOrigin : uint32_t { kExec = 1, kFork = 2 };

enum class SlotState : uint32_t { kFree = 0, kClaimed = 1, kReady = 2 };

enum class RecordType : uint32_t {
  kNone = 0,
  kChildReaped = 1,  // this process reaped a child: a = child pid, b = wait status
};

// One fixed-size record of a slot's ring. `seq` is written last (release) and equals the
// record's ring position + 1, so a reader can tell a complete record from a torn or stale one.
struct Record {
  std::atomic<uint64_t> seq;
  uint32_t type;
  uint32_t reserved;
  int64_t time_ns;  // CLOCK_REALTIME
  int64_t a;
  int64_t b;
  uint8_t payload[24];  // room for later record types
};
static_assert(sizeof(Record) == 64);

// Identity of a process, written once when the slot is claimed (before state = kReady).
struct Slot {
  std::atomic<uint32_t> state;
  uint32_t origin;
  int32_t pid;
  int32_t ppid;
  uint64_t start_ticks;  // field 22 of /proc/<pid>/stat: with pid, unique for the boot
  int64_t start_ns;      // CLOCK_REALTIME at registration
  int32_t rank;          // -1 where unknown
  int32_t local_rank;
  int32_t world_size;
  int32_t node_rank;
  uint32_t rank_source;  // RankSource
  uint32_t reserved;
  char cmdline[kCmdlineSize];         // argv joined by spaces, cut to fit
  std::atomic<uint64_t> next_record;  // records claimed so far (multi-producer)
  alignas(64) Record ring[kRingRecords];
};
static_assert(sizeof(Slot) % 64 == 0);

// Which launcher's variables gave the rank.
enum class RankSource : uint32_t { kNone = 0, kTorch = 1, kOpenMpi = 2, kPmi = 3, kSlurm = 4 };

struct AgentHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint32_t slot_size;
  std::atomic<uint32_t> slots_claimed;  // may exceed slot_count: the excess found no slot
  uint32_t reserved[11];
};
static_assert(sizeof(AgentHeader) == 64);

inline constexpr size_t agent_file_size() {
  return sizeof(AgentHeader) + size_t{kSlotCount} * sizeof(Slot);
}

inline Slot* slot_at(void* base, uint32_t index) {
  return reinterpret_cast<Slot*>(static_cast<char*>(base) + sizeof(AgentHeader) +
                                 size_t{index} * sizeof(Slot));
}

}  // namespace traindoc::common
