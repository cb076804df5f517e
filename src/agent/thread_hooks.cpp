// Per-thread alternate signal stacks and stack bounds, in every job process (LD_PRELOAD).
// An interposed pthread_create wraps the start routine so that each new thread, before running
// the program's code, gets an mmap'd alternate stack with guard pages (a stack overflow still
// reaches the crash handler) and records its stack bounds for the crash record.
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>

#include "agent/crash.h"

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

// The dynamic loader's: the top of the main thread's stack as the process started.
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming): glibc's own name
extern "C" void* __libc_stack_end;

namespace traindoc::agent {
namespace {

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

constexpr size_t kMinAltStack = size_t{64} * 1024;

std::atomic<CreateFn> g_next_create{nullptr};
std::atomic<bool> g_ready{false};  // start-up done: wrap new threads
size_t g_page = 4096;
size_t g_alt_size = 0;  // usable bytes of an alternate stack, between its two guard pages
pthread_key_t g_key;    // value: the thread's alternate-stack mapping, unmapped at thread exit

__attribute__((tls_model("initial-exec"))) thread_local uint64_t t_stack_lo = 0;
__attribute__((tls_model("initial-exec"))) thread_local uint64_t t_stack_hi = 0;
// The thread that started the agent is the main one (as is, after a fork, the child of it):
// its bounds are found only when a crash needs them (main_thread_stack).
__attribute__((tls_model("initial-exec"))) thread_local bool t_main = false;

// Mappings of exited threads, reused by the next ones: unmapping and mapping anew cost every
// other thread a TLB shootdown, which programs that churn threads would pay for. A slot holds
// one mapping or nullptr; taking and giving are single atomic exchanges.
constexpr int kCachedStacks = 16;
std::atomic<char*> g_cache[kCachedStacks];

// What the new thread must run, stored at the bottom of its own alternate-stack mapping (no
// malloc), read before the stack can be used.
struct Launch {
  void* (*start)(void*);
  void* arg;
};

size_t mapping_size() {
  return g_alt_size + 2 * g_page;
}

CreateFn next_create() {
  CreateFn fn = g_next_create.load(std::memory_order_acquire);
  if (fn == nullptr) {
    int saved_errno = errno;
    fn = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
    g_next_create.store(fn, std::memory_order_release);
    errno = saved_errno;
  }
  return fn;
}

char* take_cached_stack() {
  for (auto& slot : g_cache) {
    if (slot.load(std::memory_order_relaxed) == nullptr) continue;
    char* base = slot.exchange(nullptr, std::memory_order_acquire);
    if (base != nullptr) return base;
  }
  return nullptr;
}

// Keeps the mapping for a later thread, or unmaps it when the cache is full.
void give_back_stack(char* base) {
  for (auto& slot : g_cache) {
    char* expected = nullptr;
    if (slot.compare_exchange_strong(expected, base, std::memory_order_release,
                                     std::memory_order_relaxed)) {
      return;
    }
  }
  munmap(base, mapping_size());
}

// [guard page][g_alt_size usable][guard page]; nullptr on failure. errno is the caller's.
char* map_alt_stack() {
  if (char* cached = take_cached_stack()) return cached;
  int saved_errno = errno;
  void* base =
      mmap(nullptr, mapping_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  char* result = nullptr;
  if (base != MAP_FAILED) {
    result = static_cast<char*>(base);
    if (mprotect(result + g_page, g_alt_size, PROT_READ | PROT_WRITE) != 0) {
      munmap(base, mapping_size());
      result = nullptr;
    }
  }
  errno = saved_errno;
  return result;
}

// Installs the mapping as this thread's alternate stack unless the thread already has one
// that is large enough (then put back). Returns whether the mapping is now in use.
bool adopt_alt_stack(char* base) {
  stack_t ss{};
  ss.ss_sp = base + g_page;
  ss.ss_size = g_alt_size;
  ss.ss_flags = 0;
  stack_t previous{};
  if (sigaltstack(&ss, &previous) != 0) return false;
  if ((previous.ss_flags & SS_DISABLE) == 0 && previous.ss_size >= g_alt_size) {
    sigaltstack(&previous, nullptr);
    return false;
  }
  return true;
}

// pthread key destructor, at thread exit: disables the stack and hands the mapping on.
void release_alt_stack(void* value) {
  int saved_errno = errno;
  char* base = static_cast<char*>(value);
  stack_t off{};
  off.ss_flags = SS_DISABLE;
  stack_t previous{};
  if (sigaltstack(&off, &previous) != 0) {
    // EPERM: exiting from a handler that runs on it. Leave it mapped.
    errno = saved_errno;
    return;
  }
  if (previous.ss_sp != base + g_page && (previous.ss_flags & SS_DISABLE) == 0) {
    sigaltstack(&previous, nullptr);  // the program replaced ours: keep its own
  }
  give_back_stack(base);
  errno = saved_errno;
}

void record_stack_bounds() {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr != nullptr) {
    t_stack_lo = reinterpret_cast<uint64_t>(addr);
    t_stack_hi = t_stack_lo + size;
  }
  pthread_attr_destroy(&attr);
}

// The main thread's stack as pthread_getattr_np finds it: from the page above __libc_stack_end down
// by the stack limit, but not into the mapping below. pthread_getattr_np reads /proc/self/maps
// with stdio (long in a PyTorch process), which every process would pay at start-up and a
// handler cannot call; this reads it with raw calls, in the crash handler. Async-signal-safe.
StackBounds main_thread_stack() {
  auto top = reinterpret_cast<uint64_t>(__libc_stack_end);
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (top == 0 || fd < 0) {
    if (fd >= 0) close(fd);
    return {};
  }
  // Each line starts "from-to ": parsed byte by byte across reads.
  uint64_t from = 0;
  uint64_t to = 0;
  uint64_t below = 0;  // the end of the mapping before the stack's
  int field = 0;       // 0: from, 1: to, 2: the rest of the line
  bool found = false;
  char buffer[4096];
  ssize_t n = 0;
  while (!found && (n = read(fd, buffer, sizeof(buffer))) > 0) {
    for (ssize_t i = 0; i < n && !found; ++i) {
      char c = buffer[i];
      if (field == 2) {
        if (c == '\n') {
          field = 0;
          from = to = 0;
        }
        continue;
      }
      if (c == '-' || c == ' ') {
        if (field == 1) {
          found = from <= top && top < to;
          if (!found) below = to;
        }
        ++field;
        continue;
      }
      uint64_t digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
      (field == 0 ? from : to) = (field == 0 ? from : to) * 16 + digit;
    }
  }
  close(fd);
  rlimit limit{};
  if (!found || syscall(SYS_prlimit64, 0, RLIMIT_STACK, nullptr, &limit) != 0) return {};
  uint64_t hi = (top & ~(uint64_t{g_page} - 1)) + g_page;
  uint64_t size = hi <= to ? limit.rlim_cur - std::min<uint64_t>(limit.rlim_cur, to - hi) : 0;
  size = std::min(size / g_page * g_page, hi - below);
  return StackBounds{hi - size, hi};
}

// The start routine of every thread created after start-up.
void* start_thread(void* raw) {
  auto* launch = static_cast<Launch*>(raw);
  void* (*start)(void*) = launch->start;
  void* arg = launch->arg;
  char* base = reinterpret_cast<char*>(launch) - g_page;
  int saved_errno = errno;
  record_stack_bounds();
  if (adopt_alt_stack(base)) {
    pthread_setspecific(g_key, base);
  } else {
    give_back_stack(base);
  }
  errno = saved_errno;
  return start(arg);
}

}  // namespace

void prepare_thread_stacks() {
  long page = sysconf(_SC_PAGESIZE);
  if (page > 0) g_page = static_cast<size_t>(page);
  long sigstksz = sysconf(_SC_SIGSTKSZ);
  size_t size = kMinAltStack;
  if (sigstksz > 0) size = std::max(size, 2 * static_cast<size_t>(sigstksz));
  // The kernel's signal frame alone (AVX-512, AMX state), plus room for the handler.
  size_t min_frame = static_cast<size_t>(getauxval(AT_MINSIGSTKSZ));
  if (min_frame > 0) size = std::max(size, min_frame + kMinAltStack / 2);
  g_alt_size = (size + g_page - 1) / g_page * g_page;

  t_main = static_cast<pid_t>(syscall(SYS_gettid)) == getpid();
  if (!t_main) record_stack_bounds();
  char* main_stack = map_alt_stack();
  if (main_stack != nullptr && !adopt_alt_stack(main_stack)) give_back_stack(main_stack);
  // The main thread keeps its stack for the life of the process: no key value.
  if (pthread_key_create(&g_key, release_alt_stack) == 0) {
    next_create();
    g_ready.store(true, std::memory_order_release);
  }
}

// Async-signal-safe.
StackBounds current_thread_stack() {
  if (t_stack_hi == 0 && t_main) {
    StackBounds main = main_thread_stack();
    t_stack_lo = main.lo;
    t_stack_hi = main.hi;
  }
  return StackBounds{t_stack_lo, t_stack_hi};
}

}  // namespace traindoc::agent

extern "C" __attribute__((visibility("default"))) int pthread_create(pthread_t* thread,
                                                                     const pthread_attr_t* attr,
                                                                     void* (*start)(void*),
                                                                     void* arg) noexcept {
  using namespace traindoc::agent;
  CreateFn next = next_create();
  if (next == nullptr) return ENOSYS;
  if (!g_ready.load(std::memory_order_acquire)) return next(thread, attr, start, arg);
  char* base = map_alt_stack();
  if (base == nullptr) return next(thread, attr, start, arg);
  auto* launch = reinterpret_cast<Launch*>(base + g_page);
  launch->start = start;
  launch->arg = arg;
  int result = next(thread, attr, start_thread, launch);
  if (result != 0) {
    int saved_errno = errno;
    give_back_stack(base);
    errno = saved_errno;
  }
  return result;
}
