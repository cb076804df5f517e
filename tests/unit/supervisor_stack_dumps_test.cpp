// Stack-dump requests: only a process that catches the signal is sent it, since the default
// action of a real-time signal would end it, and only on a thread whose wait the handler does not
// cut short, unless a stop follows.
#include "supervisor/stack_dumps.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "common/layout.h"
#include "sanitizers.h"

namespace traindoc::supervisor {
namespace {

volatile sig_atomic_t g_asked = 0;
volatile sig_atomic_t g_asked_tid = 0;

void on_dump_signal(int) {
  g_asked = 1;
  g_asked_tid = static_cast<sig_atomic_t>(syscall(SYS_gettid));
}

// Tells the parent through `ready` that the child is about to wait.
void tell_ready(int ready[2]) {
  close(ready[0]);
  char byte = 1;
  if (write(ready[1], &byte, 1) != 1) _exit(3);
}

void wait_ready(int ready[2]) {
  close(ready[1]);
  char byte = 0;
  EXPECT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
}

void* block_in_read(void* fd) {
  char byte = 0;
  return reinterpret_cast<void*>(read(*static_cast<int*>(fd), &byte, 1));
}

// A child whose main thread sleeps 1 s in one nanosleep() while the handler is installed as the
// agent installs it; with `second_thread`, another thread blocks in a read(). It exits 0 when its
// sleep was not cut short, plus 4 when the handler ran on the main thread, 8 when on the other.
pid_t sleeper(bool second_thread) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    struct sigaction action {};
    action.sa_handler = on_dump_signal;
    action.sa_flags = SA_RESTART;
    sigaction(common::stack_dump_signal(), &action, nullptr);
    int never[2];
    pthread_t thread{};
    if (second_thread &&
        (pipe(never) != 0 || pthread_create(&thread, nullptr, block_in_read, &never[0]) != 0)) {
      _exit(3);
    }
    tell_ready(ready);
    timespec second{1, 0};
    int code = nanosleep(&second, nullptr) == 0 ? 0 : 1;
    if (g_asked != 0) code += g_asked_tid == getpid() ? 4 : 8;
    _exit(code);
  }
  wait_ready(ready);
  usleep(200'000);  // into its sleep
  return pid;
}

// Under ThreadSanitizer the forked child is not the program these tests describe: the runtime's
// interceptors stand between its code and its waits, and it runs a signal's handler only at its
// own safe points, never inside a blocked read().
constexpr const char* kTsanChild = "ThreadSanitizer runs the child's waits and handlers";

int exit_code(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A child that waits for the dump signal with or without a handler for it; it exits 0 once its
// handler ran. Returns its pid after it is ready.
pid_t child(bool handles) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (handles) signal(common::stack_dump_signal(), on_dump_signal);
    tell_ready(ready);
    for (int i = 0; i < 500 && g_asked == 0; ++i) usleep(10'000);
    _exit(g_asked != 0 ? 0 : 2);
  }
  wait_ready(ready);
  return pid;
}

TEST(StackDumps, AProcessThatDoesNotCatchTheSignalIsNotSentIt) {
  pid_t pid = child(false);
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(request_stack_dump(pid, true).asked);
  usleep(50'000);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the request ended it";
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

TEST(StackDumps, AProcessThatCatchesTheSignalIsAsked) {
  pid_t pid = child(true);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(request_stack_dump(pid, true).asked);
  EXPECT_EQ(exit_code(pid), 0);
}

TEST(StackDumps, AThreadWhoseWaitTheSignalWouldCutShortIsSpared) {
  if (test::kThreadSanitizer) GTEST_SKIP() << kTsanChild;
  pid_t pid = sleeper(false);
  ASSERT_GT(pid, 0);
  DumpRequest request = request_stack_dump(pid, false);
  EXPECT_FALSE(request.asked);
  EXPECT_EQ(request.spared, "clock_nanosleep, called from unit_supervisor");
  EXPECT_EQ(exit_code(pid), 0) << "0: slept its second, not asked";
}

TEST(StackDumps, AnotherThreadTakesTheRequestWhileTheMainOneSleeps) {
  if (test::kThreadSanitizer) GTEST_SKIP() << kTsanChild;
  pid_t pid = sleeper(true);
  ASSERT_GT(pid, 0);
  DumpRequest request = request_stack_dump(pid, false);
  EXPECT_TRUE(request.asked);
  EXPECT_EQ(exit_code(pid), 8) << "8: slept its second, the other thread took the request";
}

TEST(StackDumps, BeforeAStopTheMainThreadIsAskedWherever) {
  pid_t pid = sleeper(true);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(request_stack_dump(pid, true).asked);
  EXPECT_EQ(exit_code(pid), 5) << "5: its sleep cut short, on the main thread";
}

}  // namespace
}  // namespace traindoc::supervisor
