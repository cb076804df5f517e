// Interposed NCCL entry points, in every job process (LD_PRELOAD), called from the job's threads
// (PyTorch's, JAX's or the program's own) wherever it calls NCCL through the dynamic linker. Each
// records the call into the collective ring, then calls the real NCCL with the same arguments and
// returns its result untouched. The functions and NCCL's declarations are in nccl_functions.h, our
// own (no build dependency on NCCL).
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "agent/agent.h"
#include "agent/collectives.h"
#include "agent/nccl_functions.h"
#include "common/collective_ring.h"
#include "common/layout.h"
#include "common/nccl_library.h"

namespace traindoc::agent {
namespace {

constexpr ncclResult_t kNcclSuccess = 0;
constexpr ncclResult_t kNcclInternalError = 3;
constexpr ncclResult_t kNcclInProgress = 7;  // nonblocking communicators: valid, not yet ready
constexpr int kNcclSplitNoColor = -1;
constexpr int kShrinkColor = -2;    // the derivation's color for a shrink: no split's color
constexpr int kNcclBuiltinOps = 5;  // sum, prod, max, min, avg; above: PreMulSum handles
constexpr uint8_t kRedOpPreMulSum = 5;

using common::CollectiveCall;
using common::CollectiveOp;

// A communicator this process created, with the identity that its peers compute the same way.
struct Comm {
  std::atomic<ncclComm_t> handle{nullptr};  // nullptr: free
  uint64_t id = 0;
  std::atomic<int> rank{-1};
  // 0 while a nonblocking split is still in progress: NCCL answers no query about the new
  // communicator before it is ready (it warns on stderr), so its rank and size are asked later.
  std::atomic<int> size{0};
  std::atomic<uint32_t> splits{0};  // children split off so far (every rank counts every split)
};

constexpr uint32_t kCommTable = 512;
Comm g_comms[kCommTable];
std::atomic<uint64_t> g_init_all_calls{0};

// Set by the audit library's first call: dlsym's NCCL functions reach the agent.
std::atomic<bool> g_audited{false};
// Whether a communicator was made through an interposer: NCCL was seen (note_nccl_unseen).
std::atomic<bool> g_nccl_seen{false};

// Nesting inside NCCL (ncclBcast calls ncclBroadcast, ncclCommInitAll calls ncclGetUniqueId and
// the init of each rank through the exported symbols): only the outermost call is recorded.
__attribute__((tls_model("initial-exec"))) thread_local int t_depth = 0;
// ncclGroupStart/End nesting of this thread: calls inside are issued at the outermost End.
__attribute__((tls_model("initial-exec"))) thread_local int t_group = 0;

uint32_t comm_slot(ncclComm_t comm) {
  return static_cast<uint32_t>((reinterpret_cast<uintptr_t>(comm) >> 4) % kCommTable);
}

Comm* find_comm(ncclComm_t comm) {
  if (comm == nullptr) return nullptr;
  for (uint32_t probe = 0; probe < kCommTable; ++probe) {
    Comm& entry = g_comms[(comm_slot(comm) + probe) % kCommTable];
    ncclComm_t seen = entry.handle.load(std::memory_order_acquire);
    if (seen == comm) return &entry;
    if (seen == nullptr) return nullptr;
  }
  return nullptr;
}

// Registers a new communicator; a handle NCCL reuses after a destroy replaces the old entry.
// The entry is published (handle stored) only once its fields are written.
void add_comm(ncclComm_t comm, uint64_t id, int rank, int size) {
  if (comm == nullptr) return;
  g_nccl_seen.store(true, std::memory_order_relaxed);
  Comm* entry = find_comm(comm);
  if (entry == nullptr) {
    for (uint32_t probe = 0; probe < kCommTable && entry == nullptr; ++probe) {
      Comm& candidate = g_comms[(comm_slot(comm) + probe) % kCommTable];
      ncclComm_t expected = nullptr;
      // Claimed with a sentinel so that lookups never see a half-written entry as this comm.
      // NOLINTNEXTLINE(performance-no-int-to-ptr): a marker value, never dereferenced
      auto* sentinel = reinterpret_cast<ncclComm_t>(uintptr_t{1});
      if (candidate.handle.compare_exchange_strong(expected, sentinel)) entry = &candidate;
    }
    if (entry == nullptr) return;  // table full: this communicator's calls go unrecorded
  }
  entry->id = id;
  entry->rank.store(rank, std::memory_order_relaxed);
  entry->size.store(size, std::memory_order_release);
  entry->splits.store(0, std::memory_order_relaxed);
  entry->handle.store(comm, std::memory_order_release);
}

CollectiveCall base_call(CollectiveOp op, const Comm& comm) {
  CollectiveCall call{};
  call.op = static_cast<uint16_t>(op);
  call.group = comm.id;
  call.group_size = comm.size.load(std::memory_order_acquire);
  call.group_rank = comm.rank.load(std::memory_order_relaxed);
  call.peer = -1;
  call.redop = common::kRedOpNone;
  call.dtype = common::kDtypeUnknown;
  if (t_group > 0) call.flags |= common::kCollectiveInGroup;
  return call;
}

bool resolved(Comm& comm);

// The communicator of a call, with its rank and size; nullptr when unknown or not ready.
Comm* ready_comm(ncclComm_t handle) {
  Comm* comm = find_comm(handle);
  return comm != nullptr && resolved(*comm) ? comm : nullptr;
}

// A collective of `comm` (count, datatype, op, root); nothing for an unknown communicator.
void record(CollectiveOp op, ncclComm_t handle, size_t count, int datatype, int redop, int root) {
  if (t_depth > 1 || !active()) return;
  Comm* comm = ready_comm(handle);
  if (comm == nullptr) return;
  CollectiveCall call = base_call(op, *comm);
  call.count = count;
  call.dtype = static_cast<uint8_t>(datatype);
  if (redop >= 0)
    call.redop = redop < kNcclBuiltinOps ? static_cast<uint8_t>(redop) : kRedOpPreMulSum;
  call.peer = root;
  write_collective_enter(call, common::CollectiveSource::kNccl);
}

// Point-to-point calls are compared on the pair group sender -> receiver, where the sender is
// rank 0 and the receiver rank 1: the k-th send of A to B meets the k-th receive of B from A.
void record_p2p(bool send, ncclComm_t handle, size_t count, int datatype, int peer) {
  if (t_depth > 1 || !active()) return;
  Comm* comm = ready_comm(handle);
  if (comm == nullptr) return;
  CollectiveCall call = base_call(send ? CollectiveOp::kSend : CollectiveOp::kRecv, *comm);
  int32_t pair[2] = {send ? call.group_rank : peer, send ? peer : call.group_rank};
  call.group = identity_hash(pair, sizeof(pair), comm->id);
  call.group_rank = send ? 0 : 1;
  call.group_size = 2;
  call.peer = peer;
  call.count = count;
  call.dtype = static_cast<uint8_t>(datatype);
  write_collective_enter(call, common::CollectiveSource::kNccl);
}

// Lifetime and group calls: kept as evidence, never compared (number 0), except a split, which
// every rank of the parent takes part in.
void record_event(CollectiveOp op, const Comm& comm, bool numbered) {
  if (t_depth > 1 || !active()) return;
  write_collective_enter(base_call(op, comm), common::CollectiveSource::kNccl, numbered);
}

// The start or end of a communicator's life, as evidence (init, destroy, abort).
void record_lifetime(CollectiveOp op, ncclComm_t handle) {
  if (Comm* comm = find_comm(handle)) record_event(op, *comm, false);
}

// ncclGroupStart/End: the calls between them are marked as issued together.
void enter_group() {
  ++t_group;
}
void leave_group() {
  if (t_group > 0) --t_group;
}

// What an interposer records that only forwards its call (it still keeps errno and the caller).
void record_nothing() {}

// The code that called the interposer running on this thread: the real function is the one that
// caller would have reached without the agent.
__attribute__((tls_model("initial-exec"))) thread_local uintptr_t t_caller = 0;

// 1 + the NCCL library, among those the program looked its functions up in (g_looked_up), whose
// function this thread's interposed call forwards to; 0: the one its caller reaches (t_caller).
// A looked-up function's hook sets t_pending_library for the interposer it calls.
__attribute__((tls_model("initial-exec"))) thread_local int t_library = 0;
__attribute__((tls_model("initial-exec"))) thread_local int t_pending_library = 0;

// Depth guard for one interposed call, given its caller (the hook's return address); errno is
// kept across our own work.
struct Enter {
  int saved_errno = errno;
  uintptr_t outer_caller = t_caller;
  int outer_library = t_library;
  explicit Enter(const void* caller) {
    ++t_depth;
    t_caller = reinterpret_cast<uintptr_t>(caller);
    t_library = t_pending_library;
    t_pending_library = 0;
  }
  ~Enter() {
    --t_depth;
    t_caller = outer_caller;
    t_library = outer_library;
  }
  Enter(const Enter&) = delete;
  Enter& operator=(const Enter&) = delete;
  void done() { errno = saved_errno; }
};

// The library whose dependencies gave a real NCCL definition to a caller that could not be
// placed: the next ones for such callers are looked up there first.
std::atomic<void*> g_nccl_library{nullptr};

// A growing '\0'-separated copy of names: an object may be unloaded before its name is used.
// Plain malloc, as the agent carries no C++ runtime.
struct Names {
  char* text = nullptr;
  size_t used = 0;
  size_t capacity = 0;
  Names() = default;
  Names(const Names&) = delete;
  Names& operator=(const Names&) = delete;
  ~Names() { free(text); }
  bool add(const char* name) {
    size_t length = strlen(name) + 1;
    if (used + length > capacity) {
      size_t grown_capacity = capacity * 2 + length + 4096;
      auto* grown = static_cast<char*>(realloc(text, grown_capacity));
      if (grown == nullptr) return false;
      text = grown;
      capacity = grown_capacity;
    }
    memcpy(text + used, name, length);
    used += length;
    return true;
  }
};

int add_loaded(dl_phdr_info* info, size_t /*size*/, void* data) {
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  return static_cast<Names*>(data)->add(info->dlpi_name) ? 0 : 1;  // else the names so far
}

// The loaded object whose segments hold an address: its name and their span.
struct Caller {
  uintptr_t address = 0;
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  Names name;
};

int find_caller(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* caller = static_cast<Caller*>(data);
  uintptr_t lo = UINTPTR_MAX;
  uintptr_t hi = 0;
  bool holds = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    uintptr_t end = start + segment.p_memsz;
    lo = start < lo ? start : lo;
    hi = end > hi ? end : hi;
    holds = holds || (caller->address >= start && caller->address < end);
  }
  if (!holds) return 0;
  // The main program has no name to open it by; its lookups are the global scope's.
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' &&
      caller->name.add(info->dlpi_name)) {
    caller->lo = lo;
    caller->hi = hi;
  }
  return 1;
}

// `name` as `handle`'s object or its dependencies define it, unless that is the agent's own.
void* not_ours(void* handle, const char* name, const void* agent_base) {
  void* fn = dlsym(handle, name);
  Dl_info where{};
  return fn != nullptr && dladdr(fn, &where) != 0 && where.dli_fbase != agent_base ? fn : nullptr;
}

// `name` as the loaded object `path` and its dependencies define it.
void* defined_from(const char* path, const char* name, const void* agent_base) {
  void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return nullptr;
  void* fn = not_ours(handle, name, agent_base);
  dlclose(handle);  // the calling object keeps it loaded
  return fn;
}

// The first loaded object that reaches a definition of `name` other than ours.
void* any_loaded_nccl(const char* name, const void* agent_base) {
  if (void* library = g_nccl_library.load(std::memory_order_acquire)) {
    if (void* fn = not_ours(library, name, agent_base)) return fn;
  }
  Names loaded;
  dl_iterate_phdr(add_loaded, &loaded);  // names first: no dlopen under the loader's list lock
  for (size_t at = 0; at < loaded.used; at += strlen(loaded.text + at) + 1) {
    void* handle = dlopen(loaded.text + at, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    void* found = not_ours(handle, name, agent_base);
    void* none = nullptr;
    // Kept open where NCCL was found, for the other entry points.
    if (found == nullptr || !g_nccl_library.compare_exchange_strong(none, handle)) {
      dlclose(handle);
    }
    if (found != nullptr) return found;
  }
  return nullptr;
}

// Where one entry point leads for the callers in [lo, hi): every caller where the global scope
// defines it, else those of one loaded object.
struct Binding {
  std::atomic<uintptr_t> lo{0};
  std::atomic<uintptr_t> hi{0};
  std::atomic<void*> fn{nullptr};
};

// The NCCLs one process reaches are few (PyTorch's libnccl, a framework that bundles its own);
// callers past this many objects are looked up at every call.
constexpr int kBindings = 4;

struct Slot {
  std::atomic<int> used{0};
  Binding bindings[kBindings];
};

void* bound(Slot& slot, uintptr_t caller) {
  int used = slot.used.load(std::memory_order_acquire);
  for (int i = 0; i < used && i < kBindings; ++i) {
    Binding& binding = slot.bindings[i];
    void* fn = binding.fn.load(std::memory_order_acquire);
    if (fn != nullptr && caller >= binding.lo.load(std::memory_order_relaxed) &&
        caller < binding.hi.load(std::memory_order_relaxed)) {
      return fn;
    }
  }
  return nullptr;
}

void bind(Slot& slot, uintptr_t lo, uintptr_t hi, void* fn) {
  if (slot.used.load(std::memory_order_relaxed) >= kBindings) return;
  int i = slot.used.fetch_add(1, std::memory_order_acq_rel);
  if (i >= kBindings) return;
  slot.bindings[i].lo.store(lo, std::memory_order_relaxed);
  slot.bindings[i].hi.store(hi, std::memory_order_relaxed);
  slot.bindings[i].fn.store(fn, std::memory_order_release);
}

// The real NCCL's `name` for `caller`, as the loader would have bound it: the next definition
// after the agent where NCCL is in the global scope (the program links it, or it was opened
// RTLD_GLOBAL); else the one the calling object reaches through its own dependencies. PyTorch's
// NCCL is a dependency of its extension module, which Python opens RTLD_LOCAL: out of
// RTLD_NEXT's sight, yet its callers' lookups still find ours. A framework that bundles another
// NCCL and exports it reaches its own, never PyTorch's. (A caller that jumps to NCCL as its last
// act, a tail call, is known by its own caller's address.)
void* real_nccl(Slot& slot, const char* name, uintptr_t caller) {
  if (void* fn = dlsym(RTLD_NEXT, name)) {
    bind(slot, 0, UINTPTR_MAX, fn);
    return fn;
  }
  Dl_info agent{};
  if (dladdr(reinterpret_cast<void*>(&add_loaded), &agent) == 0) return nullptr;  // ours unknown
  Caller object;
  object.address = caller;
  if (caller != 0) dl_iterate_phdr(find_caller, &object);  // names first, as below
  void* fn = nullptr;
  if (object.name.used > 0) {
    fn = defined_from(object.name.text, name, agent.dli_fbase);
    if (fn != nullptr) bind(slot, object.lo, object.hi, fn);
  }
  if (fn == nullptr) {
    // A caller outside every named object (the main program, generated code) keeps, call site
    // by call site, what the first loaded NCCL gave it.
    fn = any_loaded_nccl(name, agent.dli_fbase);
    if (fn != nullptr && caller != 0) bind(slot, caller, caller + 1, fn);
  }
  dlerror();  // the program's next dlerror() is about its own calls
  return fn;
}

// The real definition of `name` for this thread's caller, found at its first call: NCCL is
// loaded after the agent starts (with the framework), so it cannot be resolved in the
// constructor.
template <typename F>
F next_nccl(Slot& slot, const char* name) {
  uintptr_t caller = t_caller;
  void* fn = bound(slot, caller);
  if (fn == nullptr) {
    int saved_errno = errno;
    fn = real_nccl(slot, name, caller);
    errno = saved_errno;
  }
  return reinterpret_cast<F>(fn);
}

// The functions' numbers and names, from the table.
#define TRAINDOC_NCCL_NUMBER(name, ...) k##name,
enum Fn : int {
  TRAINDOC_NCCL_FUNCTIONS(TRAINDOC_NCCL_NUMBER, TRAINDOC_NCCL_NUMBER, TRAINDOC_NCCL_NUMBER,
                          TRAINDOC_NCCL_NUMBER) kFnCount
};
#define TRAINDOC_NCCL_NAME(name, ...) "nccl" #name,
constexpr const char* kNames[kFnCount] = {TRAINDOC_NCCL_FUNCTIONS(
    TRAINDOC_NCCL_NAME, TRAINDOC_NCCL_NAME, TRAINDOC_NCCL_NAME, TRAINDOC_NCCL_NAME)};

// The type of each real function, as the table declares it.
template <Fn>
struct Real;
#define TRAINDOC_NCCL_REAL(name, params, ...) \
  template <>                                 \
  struct Real<k##name> {                      \
    using Type = ncclResult_t(*) params;      \
  };
TRAINDOC_NCCL_FUNCTIONS(TRAINDOC_NCCL_REAL, TRAINDOC_NCCL_REAL, TRAINDOC_NCCL_REAL,
                        TRAINDOC_NCCL_REAL)

// Written only by processes that load NCCL: apart from the page every process writes at start-up
// (CMakeLists.txt).
alignas(4096) Slot g_next[kFnCount];

// An NCCL library whose functions the program looked up by name (dlsym), as the audit library
// tells them (src/agent/audit): each looked-up function is bound to a hook of its own, which
// forwards to the very function looked up, whatever scope NCCL was opened in.
struct LookedUp {
  std::atomic<const link_map*> map{nullptr};  // nullptr: free
  std::atomic<void*> fn[kFnCount] = {};
  std::atomic<void*> handle{nullptr};  // opened for the functions the program did not look up
};
// The NCCLs a process looks up are few (the framework's own): past these, a looked-up function is
// left as it is, unrecorded.
constexpr int kLookedUpLibraries = 4;
alignas(64) LookedUp g_looked_up[kLookedUpLibraries];

// The looked-up library's `name`; those the program did not look up (the agent's queries) are
// looked up there on their first call.
void* looked_up(LookedUp& library, Fn f) {
  if (void* fn = library.fn[f].load(std::memory_order_acquire)) return fn;
  int saved_errno = errno;
  void* handle = library.handle.load(std::memory_order_acquire);
  if (handle == nullptr) {
    const link_map* map = library.map.load(std::memory_order_acquire);
    handle = map != nullptr ? dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    void* none = nullptr;
    // Kept open: the program keeps it loaded, and it is asked again.
    if (handle != nullptr && !library.handle.compare_exchange_strong(none, handle)) {
      dlclose(handle);
      handle = none;
    }
  }
  void* fn = handle != nullptr ? dlsym(handle, kNames[f]) : nullptr;
  dlerror();  // the program's next dlerror() is about its own calls
  if (fn != nullptr) library.fn[f].store(fn, std::memory_order_release);
  errno = saved_errno;
  return fn;
}

// Calls the real function, or fails as NCCL would on an internal error when there is none (the
// program called our symbol without NCCL loaded).
template <Fn F, typename... Args>
ncclResult_t call_next(Args... args) {
  using Next = typename Real<F>::Type;
  auto next = t_library > 0 ? reinterpret_cast<Next>(looked_up(g_looked_up[t_library - 1], F))
                            : next_nccl<Next>(g_next[F], kNames[F]);
  if (next == nullptr) return kNcclInternalError;
  return next(args...);
}

// Asks NCCL for a communicator's rank and size; false when it does not answer.
bool query(ncclComm_t handle, int& rank, int& size) {
  return call_next<kCommUserRank>(handle, &rank) == kNcclSuccess &&
         call_next<kCommCount>(handle, &size) == kNcclSuccess;
}

// Whether the communicator's rank and size are known, asking NCCL once it says the communicator
// is ready (a nonblocking split returns before; its state is the one query NCCL allows then).
bool resolved(Comm& comm) {
  if (comm.size.load(std::memory_order_acquire) != 0) return true;
  ncclComm_t handle = comm.handle.load(std::memory_order_acquire);
  int state = kNcclInProgress;
  int rank = -1;
  int size = 0;
  if (call_next<kCommGetAsyncError>(handle, &state) != kNcclSuccess || state != kNcclSuccess ||
      !query(handle, rank, size)) {
    return false;
  }
  comm.rank.store(rank, std::memory_order_relaxed);
  comm.size.store(size, std::memory_order_release);
  return true;
}

// Whether an init or split gave a communicator handle.
bool created(ncclResult_t result) {
  return result == kNcclSuccess || result == kNcclInProgress;
}

// Registers a communicator made by ncclCommInitRank{,Config,Scalable}: every rank passes the same
// unique ids (several spread the bootstrap in NCCL 2.23+), so their hash is the communicator's
// identity on all of them.
void add_initialized(ncclResult_t result, ncclComm_t* comm, const ncclUniqueId* ids, int count,
                     int rank, int nranks) {
  if (!created(result) || comm == nullptr || ids == nullptr || count < 1) return;
  add_comm(*comm, identity_hash(ids, sizeof(ncclUniqueId) * static_cast<uint64_t>(count)), rank,
           nranks);
  record_lifetime(CollectiveOp::kCommInit, *comm);
}

// Registers the communicators of ncclCommInitAll, where one process drives every device: the
// clique exists in this process only, so its identity is this process's and the call's ordinal.
void add_clique(ncclResult_t result, ncclComm_t* comms, int ndev) {
  if (!created(result) || comms == nullptr) return;
  uint64_t key[2] = {static_cast<uint64_t>(getpid()),
                     g_init_all_calls.fetch_add(1, std::memory_order_relaxed)};
  uint64_t id = identity_hash(key, sizeof(key));
  for (int i = 0; i < ndev; ++i) add_comm(comms[i], id, i, ndev);
}

// A split or shrink of `parent` begins: its number among the parent's children, and the record
// of the call on the parent (a split is compared across the parent's ranks; a shrink, which the
// ranks it drops never make, is not).
uint32_t begin_child(Comm* parent, CollectiveOp op) {
  if (parent == nullptr) return 0;
  uint32_t split = parent->splits.fetch_add(1, std::memory_order_relaxed) + 1;
  record_event(op, *parent, op == CollectiveOp::kCommSplit);
  return split;
}

// Registers the child a split or shrink made, its identity derived from the parent's.
void add_child(ncclResult_t result, const Comm* parent, uint32_t split, int color,
               const ncclComm_t* child) {
  if (!created(result) || parent == nullptr || child == nullptr || *child == nullptr) return;
  uint64_t derived[3] = {parent->id, split, static_cast<uint64_t>(static_cast<int64_t>(color))};
  int rank = -1;
  int size = 0;
  // In progress (nonblocking): rank and size are asked at the first call on it.
  if (result != kNcclSuccess || !query(*child, rank, size)) size = 0;
  add_comm(*child, identity_hash(derived, sizeof(derived)), rank, size);
}

}  // namespace

#define TRAINDOC_EXPORT extern "C" __attribute__((visibility("default")))

// The interposers, under NCCL's own names, exported as NCCL exports them (C linkage: one global
// symbol each, wherever declared). Each keeps errno for the real function, and its caller, which
// tells where the real function is (real_nccl).
// NOLINTBEGIN(readability-identifier-naming)
// NOLINTBEGIN(bugprone-macro-parentheses): `params` and `args` are parenthesized lists.
#define TRAINDOC_NCCL_BEFORE(name, params, args, what) \
  TRAINDOC_EXPORT ncclResult_t nccl##name params {     \
    Enter guard(__builtin_return_address(0));          \
    what;                                              \
    guard.done();                                      \
    return call_next<k##name> args;                    \
  }
#define TRAINDOC_NCCL_AFTER(name, params, args, what) \
  TRAINDOC_EXPORT ncclResult_t nccl##name params {    \
    Enter guard(__builtin_return_address(0));         \
    ncclResult_t result = call_next<k##name> args;    \
    guard.saved_errno = errno;                        \
    what;                                             \
    guard.done();                                     \
    return result;                                    \
  }
// NOLINTEND(bugprone-macro-parentheses)
#define TRAINDOC_NCCL_DECLARE(name, params) TRAINDOC_EXPORT ncclResult_t nccl##name params;
#define TRAINDOC_NCCL_NONE(...)
TRAINDOC_NCCL_FUNCTIONS(TRAINDOC_NCCL_BEFORE, TRAINDOC_NCCL_AFTER, TRAINDOC_NCCL_DECLARE,
                        TRAINDOC_NCCL_NONE)

// As NCCL derives a child's hash (2.26+): from the parent's identity, the parent's split count
// (which every parent rank advances, NOCOLOR included) and the color.
TRAINDOC_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                           ncclConfig_t* config) {
  Enter guard(__builtin_return_address(0));
  Comm* parent = find_comm(comm);
  uint32_t split = begin_child(parent, CollectiveOp::kCommSplit);
  guard.done();
  ncclResult_t result = call_next<kCommSplit>(comm, color, key, newcomm, config);
  guard.saved_errno = errno;
  if (color != kNcclSplitNoColor) add_child(result, parent, split, color, newcomm);
  guard.done();
  return result;
}

// NCCL 2.27+: the ranks that remain make a child without the excluded ones, every remaining rank
// in the same order of splits and shrinks, so the child is derived as a split's is, under a
// color no split takes.
TRAINDOC_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int exclude_count,
                                            ncclComm_t* newcomm, ncclConfig_t* config, int flags) {
  Enter guard(__builtin_return_address(0));
  Comm* parent = find_comm(comm);
  uint32_t split = begin_child(parent, CollectiveOp::kCommShrink);
  guard.done();
  ncclResult_t result =
      call_next<kCommShrink>(comm, exclude, exclude_count, newcomm, config, flags);
  guard.saved_errno = errno;
  add_child(result, parent, split, kShrinkColor, newcomm);
  guard.done();
  return result;
}

// NOLINTEND(readability-identifier-naming)

namespace {

// The hook bound in place of a function the program looked up in the L-th looked-up library:
// the interposer of that name, told to forward to the L-th library's function.
template <auto Interposer, int L, typename = decltype(Interposer)>
struct LookedUpHook;
template <auto Interposer, int L, typename... Args>
struct LookedUpHook<Interposer, L, ncclResult_t (*)(Args...)> {
  static ncclResult_t call(Args... args) {
    t_pending_library = L + 1;
    return Interposer(args...);
  }
};

template <auto Interposer, int... L>
void* hook_at(int library, std::integer_sequence<int, L...> /*libraries*/) {
  void* hook = nullptr;
  ((hook = library == L ? reinterpret_cast<void*>(&LookedUpHook<Interposer, L>::call) : hook), ...);
  return hook;
}

// The hook for function `f` of the `library`-th looked-up library; nullptr for one not interposed.
void* looked_up_hook(Fn f, int library) {
  switch (f) {
#define TRAINDOC_NCCL_HOOK(name, ...) \
  case k##name:                       \
    return hook_at<&nccl##name>(library, std::make_integer_sequence<int, kLookedUpLibraries>{});
    TRAINDOC_NCCL_FUNCTIONS(TRAINDOC_NCCL_HOOK, TRAINDOC_NCCL_HOOK, TRAINDOC_NCCL_HOOK,
                            TRAINDOC_NCCL_NONE)
    default:
      return nullptr;
  }
}

// The entry of `library` in g_looked_up, claimed for it if new; nullptr when all are taken.
LookedUp* looked_up_library(const link_map* library) {
  for (LookedUp& entry : g_looked_up) {
    const link_map* none = nullptr;
    if (entry.map.compare_exchange_strong(none, library) || none == library) return &entry;
  }
  return nullptr;
}

int add_loaded_nccl(dl_phdr_info* info, size_t /*size*/, void* data) {
  *static_cast<bool*>(data) = common::is_nccl_library(info->dlpi_name);
  return *static_cast<bool*>(data) ? 1 : 0;
}

}  // namespace

// Called by the audit library from inside the dynamic linker (its lock may be held), at each
// binding of the program's to an NCCL function: no loader call here, no allocation.
TRAINDOC_EXPORT void* traindoc_nccl_bound(const char* name, void* real, const void* library) {
  if (name == nullptr) {
    g_audited.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  if (!active() || real == nullptr || library == nullptr) return nullptr;
  int f = 0;
  while (f < kFnCount && strcmp(kNames[f], name) != 0) ++f;
  if (f == kFnCount) return nullptr;  // not one the agent knows: left as it is
  LookedUp* entry = looked_up_library(static_cast<const link_map*>(library));
  if (entry == nullptr) return nullptr;
  // Queries are kept for the agent's own calls; the program's go straight to NCCL.
  entry->fn[f].store(real, std::memory_order_release);
  void* hook = looked_up_hook(static_cast<Fn>(f), static_cast<int>(entry - g_looked_up));
  return hook;
}

void start_nccl_audit() {
  // Its own lookup, which the audit library sees (and answers) where it is active.
  static_cast<void>(dlsym(RTLD_DEFAULT, common::kNcclBoundSymbol));
  dlerror();
}

void note_nccl_unseen() {
  if (g_audited.load(std::memory_order_relaxed) || g_nccl_seen.load(std::memory_order_relaxed)) {
    return;
  }
  bool loaded = false;
  dl_iterate_phdr(add_loaded_nccl, &loaded);
  if (loaded) {
    append_record(common::RecordType::kNcclNotVisible,
                  static_cast<int64_t>(common::NcclNotVisible::kNoAudit), 0, 0);
  }
}

}  // namespace traindoc::agent
