// The shared-memory contract between the agent (in every job process) and the supervisor.
// Both map <run>/agent/slots: the supervisor creates it, each job process claims one slot.
// Header-only; everything here is async-signal-safe (plain loads, stores, atomics, fallocate).
#pragma once

#include <fcntl.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace traindoc::common {

inline constexpr uint32_t kAgentMagic = 0x54444147;  // "TDAG"
inline constexpr uint32_t kAgentVersion = 6;
inline constexpr uint32_t kSlotCount = 8192;  // a fork then exec takes two
inline constexpr uint32_t kRingRecords = 120;
inline constexpr uint32_t kCmdlineSize = 256;
inline constexpr const char* kAgentFileName = "agent/slots";
// A process that starts with a file as its stdout or stderr, or opens a log file, hands that
// file to the supervisor on a socket (common/output_socket.h): the kernel vouches for the sender's
// pid (SO_PEERCRED) and the file is the one the process holds, nothing is taken on its word.
// Space the supervisor holds while the job runs, given back for run.db's last records when the
// disk fills up; removed at the end of the run (and by the guard).
inline constexpr const char* kReserveFileName = "reserve";
inline constexpr const char* kRunDirEnv = "TRAINDOC_RUN_DIR";
// The parameters DDP's error names by index, by the process that raised it (printf: its pid).
inline constexpr const char* kDdpParametersFile = "agent/ddp-parameters-%d.tsv";
// The caching allocator's state at a process's out-of-memory error (printf: its pid, the error's
// number in the process), and the allocator's snapshot pickle saved then with allocation history.
inline constexpr const char* kAllocatorStateFile = "agent/allocator-%d-%d.tsv";
inline constexpr const char* kAllocatorSnapshotFile = "allocator/oom-%d-%d.pickle";
// Set in the job by `traindoc run --memory-history`: the allocator's history entries to keep.
inline constexpr const char* kMemoryHistoryEnv = "TRAINDOC_MEMORY_HISTORY";

// How a process obtained its slot.
enum class SlotOrigin : uint32_t { kExec = 1, kFork = 2 };

enum class SlotState : uint32_t { kFree = 0, kClaimed = 1, kReady = 2 };

enum class RecordType : uint32_t {
  kNone = 0,
  kChildReaped = 1,         // this process reaped a child: a = child pid, b = wait status
  kHandlerReplaced = 2,     // the program installed its own handler for a crash signal: a = signal,
                            // b = the handler's address (kept second in the chain, after ours)
  kStep = 3,                // the Python hook counted training steps: a = StepKind, b = how many of
                            // that kind this process has run so far (cumulative, so a record lost
                            // to a ring overrun costs resolution, never the count)
  kLabelOutOfRange = 4,     // a loss function rejected a target label (Python hook): a = the label,
                            // b = the number of classes of the loss's input, c = the largest
                            // label of its targets (kNoValue: unknown)
  kScriptFinished = 5,      // the Python program and its atexit handlers finished (Python hook):
                            // what follows is the interpreter's and the libraries' teardown
  kProcessGroupJoined = 6,  // init_process_group returned (Python hook): a = the rank, b = the
                            // world size, the truth where no launcher's variable says it
                            // (torch.multiprocessing.spawn, a rank passed in code)
  kSpawned = 7,             // torch.multiprocessing.spawn started this process (Python hook):
                            // a = the index it gave, the process's rank by convention until
                            // init_process_group says otherwise
  kThreadDied = 8,          // an exception ended a thread (Python hook), just before Python
                            // prints its traceback; a, b: the first 16 bytes of its name
  kStopSignal = 9,          // a stop signal (SIGINT, SIGTERM, SIGHUP) reached the program's own
                            // handler: a = the signal, b = its sender's pid (0: the kernel)
  kKillSent = 10,           // this process sent SIGKILL, which leaves no trace in its target:
                            // a = the target as kill() takes it (a pid, 0, -1, -pgid)
  kProcessGroupInit = 11,   // init_process_group was called (Python hook): a = the rank and
                            // b = the world size the call passed, -1 where it left them to the
                            // launcher's variables; they may disagree with what the launcher set
  kWorkerStarted = 12,      // a DataLoader started this process as its worker (Python hook):
                            // a = the worker's number in its DataLoader
  kProcessGroupInitFailed = 13,  // init_process_group raised (Python hook): the process is out
                                 // of it, though it may catch the error and go on
  kDdpParameters = 14,  // DDP's unused-parameter error ended the program (Python hook), which wrote
                        // the names of the parameters it lists to kDdpParametersFile: a = how
                        // many lines (index, name, module's class)
  kBatchSize = 15,      // the process stepped its optimizer on batches of a DataLoader whose
                        // batch size differs from the one it last told (Python hook): a = it
  kNcclNotVisible = 16,  // the process ends having loaded NCCL, but none of its NCCL calls was
                         // seen: a = NcclNotVisible, why they could not be
  kAllocatorState = 17,  // the process ran out of GPU memory (Python hook), which wrote the
                         // caching allocator's state then to kAllocatorStateFile: a = the error's
                         // number in the process
};

// Why a process's NCCL calls could not be seen (kNcclNotVisible).
enum class NcclNotVisible : int64_t {
  // NCCL functions taken with dlsym are seen only through the audit library (LD_AUDIT), which was
  // not active: left out of the environment, removed from it, or ignored by the process's loader.
  kNoAudit = 1,
};

// What a kStep record counts (src/agent/step_abi.cpp, python/traindoc_hook/steps.py).
enum class StepKind : int64_t {
  kOptimizer = 1,   // optimizer.step() of any torch.optim.Optimizer
  kBackward = 2,    // torch.autograd.backward, which Tensor.backward calls
  kDdpForward = 3,  // DistributedDataParallel.forward
};

inline constexpr uint32_t kCrashFrames = 128;
inline constexpr uint32_t kThreadNameSize = 16;

enum class CrashState : uint32_t {
  kNone = 0,
  kWriting = 1,   // the handler is filling the record
  kWritten = 2,   // complete: the process waits (bounded) for the supervisor to read its maps
  kReleased = 3,  // the supervisor has what it needs, or the wait timed out
};

// The first fatal signal of a process, written by the agent's handler on the faulting thread.
// While `state` is kWritten the process waits up to kCrashWaitMs for the supervisor to copy
// /proc/<pid>/maps (gone once the process dies) and set `state` to kReleased (futex wake).
inline constexpr uint32_t kCrashWaitMs = 1000;

struct CrashRecord {
  std::atomic<uint32_t> state;
  int32_t signo;
  int32_t code;  // si_code
  int32_t tid;
  uint64_t fault_addr;     // si_addr
  int64_t time_ns;         // CLOCK_REALTIME
  int32_t sender_pid;      // si_pid for signals sent by a process (si_code <= 0)
  uint32_t python_dumped;  // 1: Python traceback written to agent/python-<pid>.txt
  char thread_name[kThreadNameSize];
  uint64_t pc;
  uint64_t sp;
  uint64_t fp;
  uint64_t stack_lo;  // the faulting thread's stack [lo, hi), 0 when unknown
  uint64_t stack_hi;
  uint64_t gregs[23];  // ucontext general registers (x86-64 REG_* order; zero elsewhere)
  uint32_t frame_count;
  uint32_t other_crashes;         // further threads that crashed while this record was written
  uint64_t frames[kCrashFrames];  // return addresses, innermost first; frames[0] is the pc
};

// One fixed-size record of a slot's ring. `seq` is pos + 1 once the record at ring position `pos`
// is complete; while a writer fills it, the kSeqWriting bit is set. Writers claim with
// compare-and-swap, so a writer that was lapped never overwrites or hides a newer record.
inline constexpr uint64_t kSeqWriting = uint64_t{1} << 63;

// How long a writer waits for an older one to finish the entry it needs, in pause instructions
// (a few microseconds).
inline constexpr int kClaimSpins = 1000;

// Claims the entry whose sequence word is `seq` for the record at ring position mine - 1. Fails
// when a newer writer holds it (this one was lapped), or an older one still fills it past a short
// wait: two writers never fill one entry at once, which would mix their fields under the newer
// one's seq. The older writer may be this very thread, interrupted by a signal whose handler
// appends; the record is then lost, and the reader counts it once later records are out.
// Async-signal-safe, never blocks.
inline bool claim_entry(std::atomic<uint64_t>& seq, uint64_t mine) {
  uint64_t seen = seq.load(std::memory_order_relaxed);
  for (int spins = 0;;) {
    if ((seen & ~kSeqWriting) >= mine) return false;
    if ((seen & kSeqWriting) != 0) {
      if (++spins > kClaimSpins) return false;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      asm volatile("yield");
#endif
      seen = seq.load(std::memory_order_relaxed);
      continue;
    }
    if (seq.compare_exchange_weak(seen, mine | kSeqWriting, std::memory_order_acquire,
                                  std::memory_order_relaxed)) {
      return true;
    }
  }
}

// Publishes an entry claimed with claim_entry: the reader sees all of it or none. Only its
// claimer may touch an entry being filled, so a plain store does it.
inline void publish_entry(std::atomic<uint64_t>& seq, uint64_t mine) {
  seq.store(mine, std::memory_order_release);
}

// A record's number that is not known (none of a record's numbers is ever this).
inline constexpr int64_t kNoValue = INT64_MIN;

struct Record {
  std::atomic<uint64_t> seq;
  uint32_t type;
  uint32_t reserved;
  int64_t time_ns;  // CLOCK_REALTIME
  int64_t a;
  int64_t b;
  uint64_t pos;  // the ring position written, checked by the reader against the one it expects
  int64_t c;     // a third number, for the record types that say so
  uint8_t payload[8];  // room for later record types
};
static_assert(sizeof(Record) == 64);

// Identity of a process, written once when the slot is claimed (before state = kReady), and how
// it ended.
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
  // 0 while running; 1 + the status the process passed to exit() or _exit(), written as it
  // ends (exit_ns first). A slot's own word: unlike the parent's reap record, never overwritten.
  std::atomic<uint32_t> exited;
  int64_t exit_ns;                    // CLOCK_REALTIME of that exit
  char cmdline[kCmdlineSize];         // argv joined by spaces, cut to fit
  std::atomic<uint64_t> next_record;  // records claimed so far (multi-producer)
  alignas(64) Record ring[kRingRecords];
  alignas(64) CrashRecord crash;
};
static_assert(sizeof(Slot) % 64 == 0);

// Which launcher's variables gave the rank.
enum class RankSource : uint32_t {
  kNone = 0,
  kTorch = 1,
  kOpenMpi = 2,
  kPmi = 3,
  kSlurm = 4,
  kProcessGroup = 5,  // not a variable: the rank init_process_group gave (kProcessGroupJoined)
  kSpawn = 6,         // not a variable: torch.multiprocessing.spawn's index (kSpawned)
};

struct AgentHeader {
  uint32_t magic;
  uint32_t version;
  uint32_t slot_count;
  uint32_t slot_size;
  std::atomic<uint32_t> slots_claimed;  // may exceed slot_count: the excess found no slot
  // The abstract name (without its leading NUL) of the socket that takes OutputNotes; empty when
  // the supervisor has none.
  char outputs_socket[40];
  uint32_t reserved[1];
};
static_assert(sizeof(AgentHeader) == 64);

// Stack dumps on request: the supervisor queues this real-time signal (sigqueue, to the main
// thread, or another whose wait it spares) with kStackDumpValue; the agent writes
// <run>/agent/stack-<pid>.txt: "thread: <receiving tid>", "main thread: 0x<its pthread_self>",
// "python:", every thread's Python stack, "native:", the receiving thread's return addresses in
// hex, then "end".
// SIGRTMAX - 3: glibc takes the lowest ones, and libraries that use one take SIGRTMIN + n.
inline int stack_dump_signal() {
  return SIGRTMAX - 3;
}
inline constexpr int kStackDumpValue = 0x54445354;  // "TDST"
// How the stack of a process the supervisor did not ask, so as not to cut its wait short, begins;
// it ends so where the Python hook told that the process waits in init_process_group.
inline constexpr std::string_view kStackSpared = "not asked for its stack: ";
inline constexpr std::string_view kStackSparedInInit = ", inside init_process_group";

// --- Collectives ---------------------------------------------------------------------------------
// Every collective and point-to-point call of a process (Python hook or NCCL interposer) goes into
// its slot's collective ring, a second ring of larger records after all the slots (so that the
// identity pages of the slots stay together and untouched rings cost no disk).

inline constexpr uint32_t kCollectiveRecords = 512;
inline constexpr uint32_t kCollectiveTensors = 4;
inline constexpr uint32_t kCollectiveDims = 6;
inline constexpr uint32_t kCallSiteSize = 68;

// Operations, numbered for the file format: never renumber.
enum class CollectiveOp : uint16_t {
  kNone = 0,
  kAllReduce = 1,
  kBroadcast = 2,
  kReduce = 3,
  kAllGather = 4,
  kReduceScatter = 5,
  kAllToAll = 6,
  kGather = 7,
  kScatter = 8,
  kBarrier = 9,
  kMonitoredBarrier = 10,
  kSend = 11,  // on the pair group sender -> receiver (see docs/collectives.md)
  kRecv = 12,
  kAllGatherObject = 13,
  kBroadcastObject = 14,
  kGatherObject = 15,
  kScatterObject = 16,
  kAllReduceCoalesced = 17,
  kBroadcastCoalesced = 18,  // DistributedDataParallel's broadcast of buffers (in forward) and
                             // of parameters and buffers (when built): dist._broadcast_coalesced
  // DistributedDataParallel's all-reduce of the gradients in backward (its Reducer, in C++), as
  // the Python hook records it: one per backward, of all the gradients, where NCCL's own
  // records are absent (a gloo or MPI group).
  kDdpGradientAllReduce = 19,
  kGroupStart = 32,  // NCCL group calls and communicator lifetime: recorded, never compared
  kGroupEnd = 33,
  kCommInit = 34,
  kCommSplit = 35,
  kCommDestroy = 36,
  kCommAbort = 37,
  kCommShrink = 38,
};

enum class CollectiveEvent : uint8_t {
  kEnter = 1,  // the call started (NCCL: issued; the call returns at once)
  kExit = 2,   // the call returned; only group, number, time and flags are meaningful
};

enum class CollectiveSource : uint8_t { kPython = 1, kNccl = 2 };

// Where a tensor lives (NCCL's records do not say).
enum class CollectiveDevice : uint8_t { kUnknown = 0, kCpu = 1, kCuda = 2, kOther = 3 };

// Element types: NCCL's ncclDataType_t numbering, then the ones NCCL lacks.
inline constexpr uint8_t kDtypeUnknown = 255;
// Reduce ops: NCCL's ncclRedOp_t numbering (0 sum .. 4 avg), then the ones NCCL lacks.
inline constexpr uint8_t kRedOpNone = 255;

inline constexpr uint8_t kCollectiveAsync = 1;      // async_op=True, isend/irecv: exit when issued
inline constexpr uint8_t kCollectiveInGroup = 2;    // inside ncclGroupStart/End
inline constexpr uint8_t kCollectiveTruncated = 4;  // more tensors or dims than recorded
// The backend returns once the op is queued (NCCL, CUDA tensors): exit when issued.
inline constexpr uint8_t kCollectiveQueued = 8;
inline constexpr uint8_t kCollectiveRaised = 16;  // exit records: the call raised (a timeout...)
// The process's default group (torch.distributed's world), as the Python hook knows it.
inline constexpr uint8_t kCollectiveDefaultGroup = 32;
// Made through join()'s code (torch.distributed.algorithms.join), as the Python hook knows it:
// for a rank that ran out of inputs, shadowing the others' calls from its exit of the `with`.
inline constexpr uint8_t kCollectiveJoinShadow = 64;

// One call, as the recorders fill it.
struct CollectiveCall {
  uint64_t group;   // the group's identity, the same on every rank (docs/collectives.md)
  uint64_t number;  // this rank's call index in the group, from 1
  int64_t time_ns;  // CLOCK_REALTIME
  uint64_t count;   // elements: NCCL's count as passed; Python: numel of the first tensor
  uint64_t step;    // the process's training step when known, else 0
  int32_t group_rank;
  int32_t group_size;
  int32_t peer;  // root (rooted ops), peer (send/recv); -1 for none
  int32_t line;  // call site line, 0 when unknown
  uint16_t op;   // CollectiveOp
  uint8_t event;
  uint8_t source;
  uint8_t dtype;
  uint8_t redop;
  uint8_t tensor_count;  // tensors described below
  uint8_t flags;
  uint8_t ndims[kCollectiveTensors];
  uint8_t tensor_dtypes[kCollectiveTensors];
  uint8_t tensor_devices[kCollectiveTensors];          // CollectiveDevice
  uint32_t dims[kCollectiveTensors][kCollectiveDims];  // saturated at 2^32 - 1
  char site[kCallSiteSize];  // call site file (its tail when long), NUL-terminated
};
static_assert(sizeof(CollectiveCall) == 240);

// A ring entry. Published like Record (seq = pos + 1 once complete, kSeqWriting while filled).
struct CollectiveRecord {
  std::atomic<uint64_t> seq;
  uint64_t pos;
  CollectiveCall call;
};
static_assert(sizeof(CollectiveRecord) == 256);

struct CollectiveRing {
  std::atomic<uint64_t> next;  // records claimed so far (multi-producer)
  uint64_t reserved[7];
  CollectiveRecord records[kCollectiveRecords];
};
static_assert(sizeof(CollectiveRing) % 64 == 0);

inline constexpr size_t agent_file_size() {
  return sizeof(AgentHeader) + size_t{kSlotCount} * (sizeof(Slot) + sizeof(CollectiveRing));
}

inline size_t slot_offset(uint32_t index) {
  return sizeof(AgentHeader) + size_t{index} * sizeof(Slot);
}

inline size_t collective_ring_offset(uint32_t index) {
  return sizeof(AgentHeader) + size_t{kSlotCount} * sizeof(Slot) +
         size_t{index} * sizeof(CollectiveRing);
}

inline Slot* slot_at(void* base, uint32_t index) {
  return reinterpret_cast<Slot*>(static_cast<char*>(base) + slot_offset(index));
}

inline CollectiveRing* collective_ring_at(void* base, uint32_t index) {
  return reinterpret_cast<CollectiveRing*>(static_cast<char*>(base) +
                                           collective_ring_offset(index));
}

// The file is sparse, and a page of a mapping that the disk cannot back (a full disk, a full
// tmpfs) is SIGBUS at its first touch, read or write. So each side gives a range its blocks
// before it first touches it, and leaves a range alone where the disk has no room (ENOSPC).
// A filesystem that cannot allocate ahead (EOPNOTSUPP) is touched as before. Async-signal-safe;
// errno is changed.
inline bool allocate_range(int fd, size_t offset, size_t length) {
  return fallocate(fd, 0, static_cast<off_t>(offset), static_cast<off_t>(length)) == 0 ||
         errno == EOPNOTSUPP;
}

// A slot's blocks and its collective ring's.
inline bool allocate_slot(int fd, uint32_t index) {
  return allocate_range(fd, slot_offset(index), sizeof(Slot)) &&
         allocate_range(fd, collective_ring_offset(index), sizeof(CollectiveRing));
}

}  // namespace traindoc::common
