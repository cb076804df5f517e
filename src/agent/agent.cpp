// The agent's start-up and its one writer of records, in every job process (LD_PRELOAD).
// Start-up runs as a library constructor (exec) and as a fork child handler (fork without exec):
// it claims a slot in <run>/agent/slots and writes the process's identity there.
#include "agent/agent.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "agent/crash.h"
#include "common/clock.h"
#include "common/rank_env.h"

namespace traindoc::agent {
namespace {

using common::AgentHeader;
using common::Slot;

void* g_base = nullptr;
// The run folder, copied at start-up: a job may write over its environment's strings (as
// setproctitle does). A page of its own (CMakeLists.txt: the variables every process writes
// share one page).
alignas(4096) char g_run_dir[kMaxRunDir + 1];
size_t g_run_dir_length = 0;
Slot* g_slot = nullptr;
// Whether the blocks of g_slot's collective ring are allocated: 0 not yet, 1 yes, 2 no room.
// Allocated at the first collective, as most processes make none.
std::atomic<uint32_t> g_ring_backed{0};
// This process's pid as its start-up or its fork handler saw it: a vfork child, for which
// neither runs, has another.
pid_t g_pid = 0;

// Reads a whole small /proc file with raw syscalls. Async-signal-safe.
ssize_t read_small_file(const char* path, char* buffer, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t used = 0;
  while (used < size) {
    ssize_t n = read(fd, buffer + used, size - used);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    used += static_cast<size_t>(n);
  }
  close(fd);
  return static_cast<ssize_t>(used);
}

// Field 22 of /proc/self/stat, counted after the ')' that closes the command name, which may
// itself hold spaces and parentheses. Async-signal-safe.
uint64_t read_start_ticks() {
  char text[1024];
  ssize_t n = read_small_file("/proc/self/stat", text, sizeof(text) - 1);
  if (n <= 0) return 0;
  text[n] = '\0';
  char* p = strrchr(text, ')');
  if (p == nullptr) return 0;
  int field = 2;
  for (; *p != '\0'; ++p) {
    if (*p != ' ') continue;
    if (++field == 22) {
      uint64_t value = 0;
      for (++p; *p >= '0' && *p <= '9'; ++p) value = value * 10 + static_cast<uint64_t>(*p - '0');
      return value;
    }
  }
  return 0;
}

// Makes the arguments of a /proc/self/cmdline image (`n` bytes, each argument ended by a NUL)
// one line joined by spaces. Async-signal-safe.
void join_arguments(char* out, ssize_t n) {
  while (n > 0 && out[n - 1] == '\0') --n;
  for (ssize_t i = 0; i < n; ++i) {
    if (out[i] == '\0') out[i] = ' ';
  }
  out[n] = '\0';
}

// Async-signal-safe.
void read_cmdline(char* out, size_t size) {
  ssize_t n = read_small_file("/proc/self/cmdline", out, size - 1);
  join_arguments(out, n > 0 ? n : 0);
}

// The same line from the arguments that glibc hands to library constructors, which are what
// /proc/self/cmdline shows at this point: no file to open in every process.
void copy_cmdline(char* out, size_t size, int argc, char** argv) {
  if (argv == nullptr) {
    read_cmdline(out, size);
    return;
  }
  size_t used = 0;
  for (int i = 0; i < argc && argv[i] != nullptr && used < size - 1; ++i) {
    size_t length = strnlen(argv[i], size - 1 - used);
    memcpy(out + used, argv[i], length);
    used += length;
    if (used < size - 1) out[used++] = '\0';
  }
  join_arguments(out, static_cast<ssize_t>(used));
}

// Gives a range of the slots file its blocks before its first touch (layout.h): on a full disk
// the process goes without rather than die of SIGBUS. The file is opened again, as the job may
// have closed or reused any descriptor kept from start-up. Async-signal-safe.
bool allocate_in_file(size_t offset, size_t length) {
  char path[kRunPathSize];
  run_file_path(path, common::kAgentFileName);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  bool backed = fd >= 0 && common::allocate_range(fd, offset, length);
  if (fd >= 0) close(fd);
  return backed;
}

// Claims the next free slot; nullptr when all are taken. Async-signal-safe.
Slot* claim_slot() {
  auto* header = static_cast<AgentHeader*>(g_base);
  uint32_t index = header->slots_claimed.fetch_add(1, std::memory_order_relaxed);
  if (index >= header->slot_count) return nullptr;
  g_ring_backed.store(0, std::memory_order_relaxed);
  if (!allocate_in_file(common::slot_offset(index), sizeof(Slot))) return nullptr;
  Slot* slot = common::slot_at(g_base, index);
  slot->state.store(static_cast<uint32_t>(common::SlotState::kClaimed), std::memory_order_relaxed);
  return slot;
}

void publish(Slot* slot) {
  slot->state.store(static_cast<uint32_t>(common::SlotState::kReady), std::memory_order_release);
}

void fill_common(Slot* slot, common::SlotOrigin origin) {
  slot->origin = static_cast<uint32_t>(origin);
  slot->pid = getpid();
  slot->ppid = getppid();
  slot->start_ticks = read_start_ticks();
  slot->start_ns = common::realtime_ns();
}

// The child of a fork without exec: same program and environment as the parent, new identity.
// Runs in the child between fork and the caller's return. Async-signal-safe.
void on_fork_child() {
  if (g_base == nullptr) return;
  int saved_errno = errno;
  const Slot* parent = g_slot;
  g_pid = getpid();
  g_slot = claim_slot();
  if (g_slot != nullptr) {
    fill_common(g_slot, common::SlotOrigin::kFork);
    if (parent != nullptr) {
      g_slot->rank = parent->rank;
      g_slot->local_rank = parent->local_rank;
      g_slot->world_size = parent->world_size;
      g_slot->node_rank = parent->node_rank;
      g_slot->rank_source = parent->rank_source;
      memcpy(g_slot->cmdline, parent->cmdline, sizeof(g_slot->cmdline));
    } else {
      g_slot->rank = g_slot->local_rank = g_slot->world_size = g_slot->node_rank = -1;
      read_cmdline(g_slot->cmdline, sizeof(g_slot->cmdline));
    }
    publish(g_slot);
  }
  note_output_files(nullptr);
  reset_crash_capture_after_fork();
  reset_stack_dumps_after_fork();
  errno = saved_errno;
}

bool map_agent_file(const char* run_dir) {
  g_run_dir_length = strnlen(run_dir, sizeof(g_run_dir));
  if (g_run_dir_length == 0 || g_run_dir_length > kMaxRunDir) return false;
  memcpy(g_run_dir, run_dir, g_run_dir_length + 1);
  char path[kRunPathSize];
  run_file_path(path, common::kAgentFileName);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  void* base = mmap(nullptr, common::agent_file_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) return false;
  const auto* header = static_cast<const AgentHeader*>(base);
  if (header->magic != common::kAgentMagic || header->version != common::kAgentVersion ||
      header->slot_count != common::kSlotCount || header->slot_size != sizeof(Slot)) {
    munmap(base, common::agent_file_size());
    return false;
  }
  g_base = base;
  return true;
}

// glibc calls on_exit handlers with the status given to exit(), including main's return value,
// which never goes through an interposable exit(). Registered first, this one runs after the
// handlers and C++ static destructors of the libraries loaded later: a process that crashes in
// those never tells an exit it did not make.
void exit_handler(int status, void*) {
  note_nccl_unseen();
  note_exit(status);
}

// glibc calls constructors with main's arguments.
__attribute__((constructor)) void start_agent(int argc, char** argv, char** /*envp*/) {
  int saved_errno = errno;
  const char* run_dir = getenv(common::kRunDirEnv);
  if (run_dir != nullptr && map_agent_file(run_dir)) {
    resolve_hooks();
    g_pid = getpid();
    g_slot = claim_slot();
    if (g_slot != nullptr) {
      fill_common(g_slot, common::SlotOrigin::kExec);
      common::RankEnv env = common::read_rank_env([](const char* name) { return getenv(name); });
      g_slot->rank = env.rank;
      g_slot->local_rank = env.local_rank;
      g_slot->world_size = env.world_size;
      g_slot->node_rank = env.node_rank;
      g_slot->rank_source = static_cast<uint32_t>(env.source);
      copy_cmdline(g_slot->cmdline, sizeof(g_slot->cmdline), argc, argv);
      publish(g_slot);
    }
    note_output_files(static_cast<const AgentHeader*>(g_base)->outputs_socket);
    pthread_atfork(nullptr, nullptr, on_fork_child);
    on_exit(exit_handler, nullptr);
    start_crash_capture();
    start_stack_dumps();
    start_nccl_audit();
  }
  errno = saved_errno;
}

}  // namespace

void run_file_path(char (&out)[kRunPathSize], const char* name, pid_t pid) {
  memcpy(out, g_run_dir, g_run_dir_length);
  size_t used = g_run_dir_length;
  out[used++] = '/';
  size_t name_length = strlen(name);
  memcpy(out + used, name, name_length);
  used += name_length;
  if (pid > 0) {
    used += format_decimal(out + used, static_cast<uint64_t>(pid));
    memcpy(out + used, ".txt", 4);
    used += 4;
  }
  out[used] = '\0';
}

void note_exit(int status) {
  Slot* slot = g_slot;
  // A vfork child shares the parent's memory, slot pointer included: its exit is not the
  // parent's. The first exit wins (an atexit handler that calls _exit is still ending the same
  // process, with its own status, which is seen before exit()'s).
  if (slot == nullptr || slot->pid != getpid() ||
      slot->exited.load(std::memory_order_relaxed) != 0) {
    return;
  }
  slot->exit_ns = common::realtime_ns();
  slot->exited.store(1 + static_cast<uint32_t>(status & 0xff), std::memory_order_release);
}

// Multi-producer: any thread (or signal handler) may append. A record whose ring entry another
// writer holds is lost rather than mixed with it (common::claim_entry). Async-signal-safe.
void append_record(common::RecordType type, int64_t a, int64_t b, int64_t c) {
  Slot* slot = g_slot;
  if (slot == nullptr) return;
  uint64_t pos = slot->next_record.fetch_add(1, std::memory_order_relaxed);
  common::Record& record = slot->ring[pos % common::kRingRecords];
  if (!common::claim_entry(record.seq, pos + 1)) return;
  record.pos = pos;
  record.type = static_cast<uint32_t>(type);
  record.time_ns = common::realtime_ns();
  record.a = a;
  record.b = b;
  record.c = c;
  common::publish_entry(record.seq, pos + 1);
}

bool active() {
  return g_slot != nullptr;
}

// Async-signal-safe.
bool in_vfork_child() {
  return g_pid != 0 && g_pid != getpid();
}

// Async-signal-safe.
common::Slot* current_slot() {
  return g_slot;
}

// Async-signal-safe.
common::CollectiveRing* current_collective_ring() {
  Slot* slot = g_slot;
  if (slot == nullptr) return nullptr;
  auto index = static_cast<uint32_t>(slot - common::slot_at(g_base, 0));
  uint32_t backed = g_ring_backed.load(std::memory_order_acquire);
  if (backed == 0) {
    // Two threads may both get here: allocating twice is harmless.
    int saved_errno = errno;
    backed = allocate_in_file(common::collective_ring_offset(index), sizeof(common::CollectiveRing))
                 ? 1
                 : 2;
    errno = saved_errno;
    g_ring_backed.store(backed, std::memory_order_release);
  }
  return backed == 1 ? common::collective_ring_at(g_base, index) : nullptr;
}

}  // namespace traindoc::agent
