// Interposed sigaction, signal and their relatives, in every job process (LD_PRELOAD), called
// from any thread and from signal handlers. For a crash signal our handler stays installed in
// the kernel; the program's action is kept as the next one in the chain, and the program is
// handed back the actions it set itself, never ours. A stop signal that the program handles
// reaches its handler through a relay that notes the delivery first.
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "agent/agent.h"
#include "agent/crash.h"

namespace traindoc::agent {
namespace {

using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
using SignalFn = sighandler_t (*)(int, sighandler_t);
using SigignoreFn = int (*)(int);

// libc's definitions, found on first use: another library's constructor may call these before
// ours has run, and they must pass straight through when the agent is off.
struct SignalHooks {
  std::atomic<SigactionFn> sigaction{nullptr};
  std::atomic<SigactionFn> sigaction_internal{nullptr};  // __sigaction
  std::atomic<SignalFn> signal{nullptr};
  std::atomic<SignalFn> bsd_signal{nullptr};
  std::atomic<SignalFn> ssignal{nullptr};
  std::atomic<SignalFn> sysv_signal{nullptr};
  std::atomic<SignalFn> sysv_signal_internal{nullptr};  // __sysv_signal
  std::atomic<SignalFn> sigset{nullptr};
  std::atomic<SigignoreFn> sigignore{nullptr};
};

SignalHooks g_next;

template <typename Fn>
Fn next_of(std::atomic<Fn>& slot, const char* name) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    int saved_errno = errno;
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    slot.store(fn, std::memory_order_release);
    errno = saved_errno;
  }
  return fn;
}

// Calls libc's `name`, or fails as an unknown function would (a C library without it).
template <typename Fn, typename Result, typename... Args>
Result call_next(std::atomic<Fn>& slot, const char* name, Result failure, Args... args) {
  Fn fn = next_of(slot, name);
  if (fn == nullptr) {
    errno = ENOSYS;
    return failure;
  }
  return fn(args...);
}

// The program's action per crash signal, behind a sequence lock: readers are signal handlers
// and must neither block nor see a torn action. Indexed by signal number (all are below 32).
struct NextAction {
  std::atomic<uint32_t> seq{0};
  struct sigaction action {};
};

constexpr int kMaxCrashSignal = 32;
NextAction g_actions[kMaxCrashSignal];

// Bounds every spin: the writer may be the very thread a handler interrupted.
constexpr int kSpinLimit = 1 << 16;

// Async-signal-safe.
bool in_table(int sig) {
  return sig > 0 && sig < kMaxCrashSignal;
}

// glibc's signal(): BSD semantics.
constexpr int kBsdFlags = SA_RESTART;
// glibc's sysv_signal(): one-shot, not masked while it runs.
constexpr int kSysvFlags = SA_RESETHAND | SA_NODEFER;

// Whether our handler is the one the kernel holds for `sig`; when someone removed it behind the
// interposers (a raw rt_sigaction, a glibc-internal path such as abort()), the kernel's action
// is the program's and `kernel` holds it. Async-signal-safe.
bool ours_in_kernel(int sig, struct sigaction* kernel) {
  if (real_sigaction(sig, nullptr, kernel) != 0) return true;
  return reinterpret_cast<void*>(kernel->sa_sigaction) == crash_handler_address();
}

// sigaction() as the program sees it for a crash signal that we handle. Async-signal-safe.
int crash_sigaction(int sig, const struct sigaction* act, struct sigaction* oldact) {
  struct sigaction kernel {};
  struct sigaction previous {};
  bool ours = ours_in_kernel(sig, &kernel);
  if (ours) {
    load_next_action(sig, &previous);
  } else {
    previous = kernel;
  }
  if (act != nullptr) {
    struct sigaction incoming = *act;
    // Never chain to ourselves (an action copied out of the kernel by other means): ours
    // stands for the action it chains to.
    if (reinterpret_cast<void*>(incoming.sa_sigaction) == crash_handler_address()) {
      load_next_action(sig, &incoming);
    }
    store_next_action(sig, incoming);
    if (incoming.sa_handler != previous.sa_handler) {
      append_record(common::RecordType::kHandlerReplaced, sig,
                    static_cast<int64_t>(reinterpret_cast<intptr_t>(incoming.sa_handler)));
    }
  } else if (!ours) {
    store_next_action(sig, kernel);
  }
  if (!ours && !crash_capture_dying()) reinstall_crash_handler(sig);
  if (oldact != nullptr) *oldact = previous;
  return 0;
}

void stop_relay(int sig, siginfo_t* info, void* context);

// Async-signal-safe.
bool relay_in_kernel(int sig) {
  struct sigaction kernel {};
  return real_sigaction(sig, nullptr, &kernel) == 0 &&
         reinterpret_cast<void*>(kernel.sa_sigaction) == reinterpret_cast<void*>(stop_relay);
}

// The stops the supervisor passes on to the job: it must know which processes had the signal
// already (sent to the whole process group, or by a scheduler to every process), since a second
// one interrupts the program's handler, a checkpoint being saved on the way out. A process
// without a slot (a fork child when all were taken) may have inherited the relay: it still
// hands the program its own actions. Async-signal-safe.
bool stop_watched(int sig) {
  if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP && sig != SIGQUIT) return false;
  return active() || relay_in_kernel(sig);
}

// Async-signal-safe.
bool is_handler(const struct sigaction& action) {
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

// Runs the program's handler of a stop signal, once the delivery is noted. Async-signal-safe.
void stop_relay(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  if (hold_during_crash_handler(sig, info, context)) {
    errno = saved_errno;
    return;
  }
  append_record(common::RecordType::kStopSignal, sig, info != nullptr ? info->si_pid : 0);
  struct sigaction next {};
  load_next_action(sig, &next);
  errno = saved_errno;
  if (!is_handler(next)) {
    // Set back to the default or ignored while this one was on its way.
    if (next.sa_handler == SIG_DFL) {
      real_sigaction(sig, &next, nullptr);
      raise(sig);
    }
  } else if ((next.sa_flags & SA_SIGINFO) != 0) {
    next.sa_sigaction(sig, info, context);
  } else {
    next.sa_handler(sig);
  }
}

// sigaction() as the program sees it for a stop signal: the kernel holds the relay in place of
// the program's handler, with the program's mask and flags. Async-signal-safe.
int stop_sigaction(int sig, const struct sigaction* act, struct sigaction* oldact) {
  struct sigaction kernel {};
  if (real_sigaction(sig, nullptr, &kernel) != 0) return -1;
  struct sigaction previous = kernel;
  bool relayed =
      reinterpret_cast<void*>(kernel.sa_sigaction) == reinterpret_cast<void*>(stop_relay);
  if (relayed) load_next_action(sig, &previous);
  if (act != nullptr) {
    struct sigaction incoming = *act;
    // Never relay to ourselves (an action copied out of the kernel by other means, or saved
    // from a process without a slot): the relay stands for the action it calls.
    if (reinterpret_cast<void*>(incoming.sa_sigaction) == reinterpret_cast<void*>(stop_relay)) {
      load_next_action(sig, &incoming);
    }
    struct sigaction installed = incoming;
    if (is_handler(incoming)) {
      installed.sa_sigaction = stop_relay;
      installed.sa_flags |= SA_SIGINFO;
    }
    store_next_action(sig, incoming);
    if (real_sigaction(sig, &installed, nullptr) != 0) {
      store_next_action(sig, previous);
      return -1;
    }
  }
  if (oldact != nullptr) *oldact = previous;
  return 0;
}

// A vfork child's actions are its own (the kernel copies them) but the tables are its parent's:
// it goes straight to libc. Async-signal-safe.
bool intercepted(int sig) {
  if (in_vfork_child()) return false;
  return (in_table(sig) && crash_handler_installed(sig)) || stop_watched(sig);
}

// Async-signal-safe.
int program_sigaction(int sig, const struct sigaction* act, struct sigaction* oldact) {
  if (stop_watched(sig)) return stop_sigaction(sig, act, oldact);
  return crash_sigaction(sig, act, oldact);
}

// Async-signal-safe.
sighandler_t program_signal(int sig, sighandler_t handler, int flags, bool mask_self) {
  struct sigaction act {};
  struct sigaction old {};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (mask_self) sigaddset(&act.sa_mask, sig);
  act.sa_flags = flags;
  if (program_sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

}  // namespace

// Async-signal-safe.
int real_sigaction(int sig, const struct sigaction* act, struct sigaction* oldact) {
  SigactionFn next = next_of(g_next.sigaction, "sigaction");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return next(sig, act, oldact);
}

// Async-signal-safe.
void load_next_action(int sig, struct sigaction* out) {
  if (!in_table(sig)) {
    memset(out, 0, sizeof(*out));
    return;
  }
  NextAction& slot = g_actions[sig];
  for (int spin = 0; spin < kSpinLimit; ++spin) {
    uint32_t before = slot.seq.load(std::memory_order_acquire);
    if ((before & 1) != 0) continue;
    memcpy(out, &slot.action, sizeof(*out));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.seq.load(std::memory_order_relaxed) == before) return;
  }
  memcpy(out, &slot.action, sizeof(*out));
}

// Async-signal-safe.
void store_next_action(int sig, const struct sigaction& action) {
  if (!in_table(sig)) return;
  NextAction& slot = g_actions[sig];
  uint32_t seq = slot.seq.load(std::memory_order_relaxed);
  for (int spin = 0; spin < kSpinLimit; ++spin) {
    if ((seq & 1) == 0 && slot.seq.compare_exchange_weak(seq, seq + 1, std::memory_order_acquire)) {
      break;
    }
    if (spin % 64 == 63) sched_yield();
    seq = slot.seq.load(std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  memcpy(&slot.action, &action, sizeof(action));
  slot.seq.store((seq | 1) + 1, std::memory_order_release);
}

}  // namespace traindoc::agent

using traindoc::agent::call_next;
using traindoc::agent::g_next;
using traindoc::agent::intercepted;
using traindoc::agent::kBsdFlags;
using traindoc::agent::kSysvFlags;
using traindoc::agent::program_sigaction;
using traindoc::agent::program_signal;

// Exported under glibc's own name; not declared in its public headers.
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" int __sigaction(int sig, const struct sigaction* act, struct sigaction* oldact);

extern "C" {

__attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act,
                                                     struct sigaction* oldact) noexcept {
  if (intercepted(sig)) return program_sigaction(sig, act, oldact);
  return call_next(g_next.sigaction, "sigaction", -1, sig, act, oldact);
}

__attribute__((visibility("default"))) int __sigaction(int sig, const struct sigaction* act,
                                                       struct sigaction* oldact) {
  if (intercepted(sig)) return program_sigaction(sig, act, oldact);
  return call_next(g_next.sigaction_internal, "__sigaction", -1, sig, act, oldact);
}

__attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) noexcept {
  if (intercepted(sig) && handler != SIG_ERR) return program_signal(sig, handler, kBsdFlags, true);
  return call_next(g_next.signal, "signal", SIG_ERR, sig, handler);
}

__attribute__((visibility("default"))) sighandler_t bsd_signal(int sig,
                                                               sighandler_t handler) noexcept {
  if (intercepted(sig) && handler != SIG_ERR) return program_signal(sig, handler, kBsdFlags, true);
  return call_next(g_next.bsd_signal, "bsd_signal", SIG_ERR, sig, handler);
}

__attribute__((visibility("default"))) sighandler_t ssignal(int sig,
                                                            sighandler_t handler) noexcept {
  if (intercepted(sig) && handler != SIG_ERR) return program_signal(sig, handler, kBsdFlags, true);
  return call_next(g_next.ssignal, "ssignal", SIG_ERR, sig, handler);
}

__attribute__((visibility("default"))) sighandler_t sysv_signal(int sig,
                                                                sighandler_t handler) noexcept {
  if (intercepted(sig) && handler != SIG_ERR) {
    return program_signal(sig, handler, kSysvFlags, false);
  }
  return call_next(g_next.sysv_signal, "sysv_signal", SIG_ERR, sig, handler);
}

__attribute__((visibility("default"))) sighandler_t __sysv_signal(int sig,
                                                                  sighandler_t handler) noexcept {
  if (intercepted(sig) && handler != SIG_ERR) {
    return program_signal(sig, handler, kSysvFlags, false);
  }
  return call_next(g_next.sysv_signal_internal, "__sysv_signal", SIG_ERR, sig, handler);
}

// System V: SIG_HOLD blocks the signal; anything else installs it (flags 0) and unblocks it.
// Returns SIG_HOLD when the signal was blocked, else the previous disposition.
__attribute__((visibility("default"))) sighandler_t sigset(int sig, sighandler_t disp) noexcept {
  if (!intercepted(sig) || disp == SIG_ERR)
    return call_next(g_next.sigset, "sigset", SIG_ERR, sig, disp);
  sigset_t one;
  sigset_t before;
  sigemptyset(&one);
  sigaddset(&one, sig);
  struct sigaction old {};
  if (disp == SIG_HOLD) {
    if (pthread_sigmask(SIG_BLOCK, &one, &before) != 0) return SIG_ERR;
    program_sigaction(sig, nullptr, &old);
  } else {
    struct sigaction act {};
    act.sa_handler = disp;
    sigemptyset(&act.sa_mask);
    if (program_sigaction(sig, &act, &old) != 0) return SIG_ERR;
    if (pthread_sigmask(SIG_UNBLOCK, &one, &before) != 0) return SIG_ERR;
  }
  return sigismember(&before, sig) ? SIG_HOLD : old.sa_handler;
}

__attribute__((visibility("default"))) int sigignore(int sig) noexcept {
  if (!intercepted(sig)) return call_next(g_next.sigignore, "sigignore", -1, sig);
  struct sigaction act {};
  act.sa_handler = SIG_IGN;
  sigemptyset(&act.sa_mask);
  return program_sigaction(sig, &act, nullptr);
}

}  // extern "C"
