// Stack dumps on request, in every job process (LD_PRELOAD): the handler of the stack-dump signal
// (layout.h) writes every thread's Python stack and the receiving thread's native return
// addresses into <run>/agent/stack-<pid>.txt. Runs in a signal handler: async-signal-safe only.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "agent/agent.h"
#include "agent/crash.h"
#include "common/write_all.h"

namespace traindoc::agent {
namespace {

constexpr int kNativeFrames = 64;

// The main thread's id as Python names threads (pthread_self), for the supervisor to find its
// Python stack when another thread takes the request.
pthread_t g_main_thread{};

// Async-signal-safe. A dump cut short by a write error is read as far as it goes.
void write_text(int fd, const char* text, size_t length) {
  common::write_all(fd, text, length);
}

// Async-signal-safe.
void write_hex_line(int fd, uint64_t value) {
  char text[24] = "0x";
  size_t n = 2;
  char digits[16];
  size_t count = 0;
  do {
    digits[count++] = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  while (count > 0) text[n++] = digits[--count];
  text[n++] = '\n';
  write_text(fd, text, n);
}

// Async-signal-safe.
void dump_stacks() {
  char path[kRunPathSize];
  run_file_path(path, "agent/stack-", getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  static constexpr char kThread[] = "thread: ";
  write_text(fd, kThread, sizeof(kThread) - 1);
  char tid[24];
  size_t tid_length = format_decimal(tid, static_cast<uint64_t>(syscall(SYS_gettid)));
  tid[tid_length++] = '\n';
  write_text(fd, tid, tid_length);
  static constexpr char kMain[] = "main thread: ";
  write_text(fd, kMain, sizeof(kMain) - 1);
  write_hex_line(fd, static_cast<uint64_t>(g_main_thread));
  static constexpr char kPython[] = "python:\n";
  write_text(fd, kPython, sizeof(kPython) - 1);
  write_python_traceback(fd);
  static constexpr char kNative[] = "native:\n";
  write_text(fd, kNative, sizeof(kNative) - 1);
  uint64_t frames[kNativeFrames];
  int depth = native_backtrace(frames, kNativeFrames);
  for (int i = 0; i < depth; ++i) write_hex_line(fd, frames[i]);
  static constexpr char kEnd[] = "end\n";
  write_text(fd, kEnd, sizeof(kEnd) - 1);
  close(fd);
}

// Async-signal-safe.
void stack_dump_handler(int sig, siginfo_t* info, void* /*context*/) {
  int saved_errno = errno;
  if (info != nullptr && info->si_code == SI_QUEUE &&
      info->si_value.sival_int == common::kStackDumpValue) {
    dump_stacks();
  } else {
    // Someone else's signal: the default action, as without traindoc (it ends the process once
    // the handler returns and the signal is unblocked).
    signal(sig, SIG_DFL);
    raise(sig);
  }
  errno = saved_errno;
}

}  // namespace

// A program that already handles the signal keeps it: then this process gives no stack dumps.
void start_stack_dumps() {
  g_main_thread = pthread_self();
  int sig = common::stack_dump_signal();
  struct sigaction previous {};
  if (real_sigaction(sig, nullptr, &previous) != 0 || previous.sa_handler != SIG_DFL) return;
  struct sigaction action {};
  action.sa_sigaction = stack_dump_handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  real_sigaction(sig, &action, nullptr);
}

void reset_stack_dumps_after_fork() {
  g_main_thread = pthread_self();
}

}  // namespace traindoc::agent
