// Stack-dump requests: only a process that catches the signal is sent it, since the default
// action of a real-time signal would end it.
#include "supervisor/stack_dumps.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/layout.h"

namespace traindoc::supervisor {
namespace {

volatile sig_atomic_t g_asked = 0;

void on_dump_signal(int) {
  g_asked = 1;
}

// A child that waits for the dump signal with or without a handler for it; it exits 0 once its
// handler ran. Returns its pid after it is ready.
pid_t child(bool handles) {
  int ready[2];
  if (pipe(ready) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    if (handles) signal(common::stack_dump_signal(), on_dump_signal);
    close(ready[0]);
    char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(3);
    for (int i = 0; i < 500 && g_asked == 0; ++i) usleep(10'000);
    _exit(g_asked != 0 ? 0 : 2);
  }
  close(ready[1]);
  char byte = 0;
  EXPECT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  return pid;
}

TEST(StackDumps, AProcessThatDoesNotCatchTheSignalIsNotSentIt) {
  pid_t pid = child(false);
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(request_stack_dump(pid));
  usleep(50'000);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the request ended it";
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
}

TEST(StackDumps, AProcessThatCatchesTheSignalIsAsked) {
  pid_t pid = child(true);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(request_stack_dump(pid));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace traindoc::supervisor
