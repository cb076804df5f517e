// The fatal-signal handler, in every job process (LD_PRELOAD), run on the faulting thread's
// alternate stack. It captures the first crash into the slot's preallocated record, lets the
// supervisor read what dies with the process (bounded wait), then hands the signal on: to the
// program's own handler if it set one, else to the kernel's default action with the original
// siginfo, so that exit status and core dump stay exactly as without traindoc.
#include <linux/futex.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdint>

#include "agent/agent.h"
#include "agent/crash.h"
#include "common/clock.h"

namespace traindoc::agent {
namespace {

using common::clock_ns;
using common::CrashRecord;
using common::CrashState;

constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP};

// A second thread crashing while the first one's record is written or read waits this long.
constexpr int64_t kOtherCrashWaitMs = 2000;

std::atomic<uint32_t> g_installed{0};  // bit per signal number
std::atomic<int32_t> g_owner{0};       // tid of the thread that writes the record; 0: none yet
std::atomic<bool> g_dying{false};

enum class Phase : uint32_t {
  kIdle = 0,
  kCapturing = 1,  // writing the record: a fault now is ours
  kChaining = 2,   // running the program's handler: a signal now is the program's business
};

// Plain data, initial-exec: readable from a handler without any allocation.
struct ThreadState {
  Phase phase;
  bool can_jump;
  bool chain_on_alt_stack;    // our handler runs on an alternate stack while chaining
  uint64_t chain_stack_base;  // that stack's lowest address
  uint64_t chain_frame;       // our handler's frame while chaining
  sigjmp_buf jump;            // back to the capture, abandoning it, on a fault inside it
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadState t_state;

// Async-signal-safe.
uint32_t bit(int sig) {
  return sig > 0 && sig < 32 ? 1u << sig : 0;
}

// Async-signal-safe.
uint32_t* futex_word(std::atomic<uint32_t>& state) {
  return reinterpret_cast<uint32_t*>(&state);
}

// Shared (not private) futex: the supervisor wakes it through its own mapping of the file.
// Async-signal-safe.
void wake_all(std::atomic<uint32_t>& state) {
  syscall(SYS_futex, futex_word(state), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Waits until `state` holds `target`, at most `timeout_ms`. Async-signal-safe.
bool wait_for_state(std::atomic<uint32_t>& state, CrashState target, int64_t timeout_ms) {
  int64_t deadline = clock_ns(CLOCK_MONOTONIC) + timeout_ms * 1'000'000;
  for (;;) {
    uint32_t value = state.load(std::memory_order_acquire);
    if (value == static_cast<uint32_t>(target)) return true;
    int64_t left = deadline - clock_ns(CLOCK_MONOTONIC);
    if (left <= 0) return false;
    timespec timeout{};
    timeout.tv_sec = static_cast<time_t>(left / 1'000'000'000);
    timeout.tv_nsec = static_cast<long>(left % 1'000'000'000);
    syscall(SYS_futex, futex_word(state), FUTEX_WAIT, value, &timeout, nullptr, 0);
  }
}

// Runs a step of the capture that reads memory the crash may have damaged (stacks, Python
// frames): a fault inside it jumps back here and the step is abandoned. Async-signal-safe.
template <typename Step>
bool guarded(Step&& step) {
  ThreadState& thread = t_state;
  if (sigsetjmp(thread.jump, 1) != 0) {
    thread.can_jump = false;
    return false;
  }
  thread.can_jump = true;
  step();
  thread.can_jump = false;
  return true;
}

// Faults that the kernel raises again when the faulting instruction runs again.
// Async-signal-safe.
bool refaults(int sig, const siginfo_t* info) {
  return (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info->si_code > 0;
}

// Whether the program ignores the signal and the kernel would let it: not a fault that comes
// back, and not abort(), which ends the process even when SIGABRT is ignored.
// Async-signal-safe.
bool ignored_by_program(const struct sigaction& next, int sig, const siginfo_t* info) {
  if (next.sa_handler != SIG_IGN || refaults(sig, info)) return false;
  return !(sig == SIGABRT && info->si_code == SI_TKILL && info->si_pid == getpid());
}

// Async-signal-safe.
int32_t current_tid() {
  return static_cast<int32_t>(syscall(SYS_gettid));
}

// Blocks `sig` in this thread and queues it to this thread again, with its siginfo where the
// kernel lets us (a thread other than the main one may only send a plain one). Async-signal-safe.
void requeue_blocked(int sig, const siginfo_t* info) {
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, nullptr, _NSIG / 8);
  siginfo_t copy = *info;
  pid_t pid = getpid();
  pid_t tid = current_tid();
  if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &copy) != 0) {
    syscall(SYS_tgkill, pid, tid, sig);
  }
}

// The kernel's default action, with the original siginfo: restores SIG_DFL and queues the
// signal to this thread, blocked until the handler returns. sigreturn then unblocks it and the
// kernel kills the process with the faulting context as the thread's state (core dump and
// "killed by signal N" as without us). Never _exit. Async-signal-safe.
void reraise_on_return(int sig, const siginfo_t* info, void* context) {
  g_dying.store(true, std::memory_order_relaxed);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  real_sigaction(sig, &dfl, nullptr);
  if (context != nullptr) sigdelset(&static_cast<ucontext_t*>(context)->uc_sigmask, sig);
  requeue_blocked(sig, info);
}

// Async-signal-safe.
void program_counter(const void* context, uint64_t* pc, uint64_t* sp) {
  *pc = 0;
  *sp = 0;
  if (context == nullptr) return;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  *pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  *sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  *pc = uc->uc_mcontext.pc;
  *sp = uc->uc_mcontext.sp;
#endif
}

// Delivers the signal to the program's own action as the kernel would have (its mask, its
// flags), or to the default action. Async-signal-safe.
void dispatch_to_next(int sig, siginfo_t* info, void* context) {
  struct sigaction next {};
  load_next_action(sig, &next);
  if (next.sa_handler == SIG_IGN) {
    // The kernel forces the default action on an ignored fault; others are really ignored
    // (abort() then ends the process itself).
    if (refaults(sig, info)) reraise_on_return(sig, info, context);
    return;
  }
  if (next.sa_handler == SIG_DFL) {
    reraise_on_return(sig, info, context);
    return;
  }
  if ((next.sa_flags & SA_RESETHAND) != 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    store_next_action(sig, dfl);
  }
  // The mask the kernel would have given it: the interrupted one, its sa_mask, and the signal
  // itself unless SA_NODEFER. Ours (asynchronous signals blocked) comes back afterwards.
  sigset_t mask;
  sigset_t saved;
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, nullptr, &mask, _NSIG / 8);
  if (context != nullptr) mask = static_cast<const ucontext_t*>(context)->uc_sigmask;
  sigorset(&mask, &mask, &next.sa_mask);
  if ((next.sa_flags & SA_NODEFER) == 0) sigaddset(&mask, sig);
  // Signals that came while the crash was captured would have come after the program's handler
  // without us: they stay blocked until it returns. (A DataLoader worker's parent sends SIGTERM
  // once it sees another worker die, and PyTorch's worker answers it with exit 0: delivered
  // first, it would hide the crash.)
  sigset_t pending;
  if (syscall(SYS_rt_sigpending, &pending, _NSIG / 8) == 0) {
    for (int crash : kCrashSignals) sigdelset(&pending, crash);
    sigorset(&mask, &mask, &pending);
  }
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &mask, &saved, _NSIG / 8);

  uint64_t pc_before = 0;
  uint64_t sp_before = 0;
  program_counter(context, &pc_before, &sp_before);
  if ((next.sa_flags & SA_SIGINFO) != 0) {
    next.sa_sigaction(sig, info, context);
  } else {
    next.sa_handler(sig);
  }
  syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved, nullptr, _NSIG / 8);

  // A handler that returns from a fault without moving the context on (a managed runtime
  // would) lets the instruction fault again: end it with the default action instead.
  uint64_t pc_after = 0;
  uint64_t sp_after = 0;
  program_counter(context, &pc_after, &sp_after);
  if (refaults(sig, info) && pc_after == pc_before && sp_after == sp_before) {
    reraise_on_return(sig, info, context);
  }
}

// Writes the first crash of the process and waits (bounded) for the supervisor; a thread that
// crashes meanwhile waits for that to end. Async-signal-safe.
void capture(const siginfo_t* info, const void* context) {
  common::Slot* slot = current_slot();
  if (slot == nullptr) return;
  CrashRecord& record = slot->crash;
  int32_t tid = current_tid();
  int32_t expected = 0;
  if (!g_owner.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) {
    if (record.state.load(std::memory_order_acquire) !=
        static_cast<uint32_t>(CrashState::kReleased)) {
      std::atomic_ref<uint32_t>(record.other_crashes).fetch_add(1, std::memory_order_relaxed);
      wait_for_state(record.state, CrashState::kReleased, kOtherCrashWaitMs);
    }
    return;
  }
  int64_t crash_ns = clock_ns(CLOCK_REALTIME);
  record.state.store(static_cast<uint32_t>(CrashState::kWriting), std::memory_order_relaxed);
  fill_crash_record(record, info, context);
  if (!guarded([&] { fill_native_stack(record); })) {
    guarded([&] { fill_native_stack_by_frame_pointers(record); });
  }
  guarded([&] { dump_python_traceback(record.python_dumped); });
  record.time_ns = crash_ns;
  record.state.store(static_cast<uint32_t>(CrashState::kWritten), std::memory_order_release);
  wake_all(record.state);

  wait_for_state(record.state, CrashState::kReleased, common::kCrashWaitMs);
  uint32_t written = static_cast<uint32_t>(CrashState::kWritten);
  if (record.state.compare_exchange_strong(written, static_cast<uint32_t>(CrashState::kReleased),
                                           std::memory_order_acq_rel)) {
    wake_all(record.state);  // nobody came: release the threads that wait behind us
  }
}

// Whether a signal that finds the thread chaining interrupted the program's handler that we
// called (it runs below our frame, on our alternate stack if we run on one), rather than code
// that the handler escaped to by longjmp. (The signal frame's uc_stack cannot tell: since Linux
// 4.7 its ss_flags are the stack's settings, never SS_ONSTACK.) Async-signal-safe.
bool raised_while_chaining(const ThreadState& thread, const void* context) {
  if (context == nullptr) return true;
  uint64_t pc = 0;
  uint64_t sp = 0;
  program_counter(context, &pc, &sp);
  constexpr uint64_t kHandlerStack = 1 << 20;
  uint64_t lowest =
      thread.chain_on_alt_stack ? thread.chain_stack_base : thread.chain_frame - kHandlerStack;
  return sp >= lowest && sp < thread.chain_frame;
}

// Async-signal-safe.
void crash_signal_handler(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  ThreadState& thread = t_state;
  switch (thread.phase) {
    case Phase::kCapturing:
      // A fault inside our own capture (a torn Python frame, a wild frame pointer): abandon
      // it, publish what we have, and go on with the original signal.
      if (thread.can_jump) {
        thread.can_jump = false;
        siglongjmp(thread.jump, 1);
      }
      reraise_on_return(sig, info, context);
      errno = saved_errno;
      return;
    case Phase::kChaining:
      // Raised by the program's handler (it restored its default and re-raised, or called
      // abort()): the crash is already recorded; deliver this one as the kernel would.
      if (raised_while_chaining(thread, context)) {
        dispatch_to_next(sig, info, context);
        errno = saved_errno;
        return;
      }
      // The program's handler left by longjmp (a probe that recovers from its own fault):
      // this is a new signal.
      thread.phase = Phase::kIdle;
      break;
    case Phase::kIdle:
      break;
  }
  struct sigaction next {};
  load_next_action(sig, &next);
  if (ignored_by_program(next, sig, info)) {
    errno = saved_errno;  // nothing happened
    return;
  }
  thread.phase = Phase::kCapturing;
  capture(info, context);
  stack_t current{};
  thread.chain_on_alt_stack =
      sigaltstack(nullptr, &current) == 0 && (current.ss_flags & SS_ONSTACK) != 0;
  thread.chain_stack_base = reinterpret_cast<uint64_t>(current.ss_sp);
  thread.chain_frame = reinterpret_cast<uint64_t>(__builtin_frame_address(0));
  thread.phase = Phase::kChaining;
  dispatch_to_next(sig, info, context);
  thread.phase = Phase::kIdle;
  errno = saved_errno;
}

}  // namespace

// Async-signal-safe.
bool hold_during_crash_handler(int sig, const siginfo_t* info, void* context) {
  ThreadState& thread = t_state;
  if (thread.phase != Phase::kChaining || info == nullptr || context == nullptr) return false;
  if (info->si_code <= 0 && info->si_pid == getpid()) return false;  // the program's own
  if (!raised_while_chaining(thread, context)) return false;
  // A one-shot action is gone from the kernel once delivered: the signal cannot come back to it.
  struct sigaction next {};
  load_next_action(sig, &next);
  if ((next.sa_flags & SA_RESETHAND) != 0) return false;
  sigaddset(&static_cast<ucontext_t*>(context)->uc_sigmask, sig);
  requeue_blocked(sig, info);
  return true;
}

namespace {

struct sigaction our_action() {
  struct sigaction action {};
  action.sa_sigaction = crash_signal_handler;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  // Asynchronous signals wait until the crash is handled; crash signals must get through.
  sigfillset(&action.sa_mask);
  for (int sig : kCrashSignals) sigdelset(&action.sa_mask, sig);
  return action;
}

}  // namespace

// Async-signal-safe.
bool is_crash_signal(int sig) {
  for (int crash : kCrashSignals) {
    if (sig == crash) return true;
  }
  return false;
}

// Async-signal-safe.
bool crash_handler_installed(int sig) {
  return (g_installed.load(std::memory_order_acquire) & bit(sig)) != 0;
}

// Async-signal-safe.
void* crash_handler_address() {
  return reinterpret_cast<void*>(crash_signal_handler);
}

// Async-signal-safe.
void reinstall_crash_handler(int sig) {
  struct sigaction action = our_action();
  real_sigaction(sig, &action, nullptr);
}

// Async-signal-safe.
bool crash_capture_dying() {
  return g_dying.load(std::memory_order_relaxed);
}

void start_crash_capture() {
  prepare_crash_record();
  prepare_thread_stacks();
  struct sigaction action = our_action();
  for (int sig : kCrashSignals) {
    struct sigaction previous {};
    if (real_sigaction(sig, &action, &previous) != 0) continue;
    // A library constructor that ran before ours may have installed its own: it comes next.
    if (reinterpret_cast<void*>(previous.sa_sigaction) != crash_handler_address()) {
      store_next_action(sig, previous);
    }
    g_installed.fetch_or(bit(sig), std::memory_order_release);
  }
}

// Async-signal-safe.
void reset_crash_capture_after_fork() {
  g_owner.store(0, std::memory_order_relaxed);
  t_state.phase = Phase::kIdle;
  t_state.can_jump = false;
}

}  // namespace traindoc::agent
