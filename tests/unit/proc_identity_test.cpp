// signal_process: a signal reaches the process that was seen, never one that took its pid since.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <optional>

#include "supervisor/proc/proc_files.h"
#include "supervisor/proc/process_identity.h"

namespace traindoc::supervisor {
namespace {

pid_t sleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

uint64_t start_of(pid_t pid) {
  std::optional<ProcStat> stat = read_proc_stat(pid);
  return stat ? stat->starttime : 0;
}

// The status of `pid` once it ended, or -1 when it still runs after `seconds`.
int status_within(pid_t pid, double seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    constexpr timespec kTick{0, 10'000'000};
    nanosleep(&kTick, nullptr);
  }
  return -1;
}

TEST(SignalProcessTest, TheProcessThatWasSeenGetsIt) {
  pid_t pid = sleeper();
  uint64_t start = start_of(pid);
  ASSERT_NE(start, 0u);
  EXPECT_TRUE(signal_process(pid, start, SIGTERM));
  int status = status_within(pid, 5);
  ASSERT_NE(status, -1);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
}

TEST(SignalProcessTest, AnotherStartTimeIsAnotherProcess) {
  pid_t pid = sleeper();
  uint64_t start = start_of(pid);
  ASSERT_NE(start, 0u);
  EXPECT_FALSE(same_process(pid, start + 1));
  EXPECT_FALSE(signal_process(pid, start + 1, SIGTERM));
  EXPECT_EQ(status_within(pid, 0.3), -1) << "it must still run";
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_FALSE(signal_process(pid, start, SIGTERM)) << "reaped: nobody holds the pid";
}

TEST(SignalProcessTest, OnlyProcessesBelowAnAncestorRunBelowIt) {
  pid_t shell = fork();
  if (shell == 0) {
    execl("/bin/sh", "sh", "-c", "sleep 30 & wait", static_cast<char*>(nullptr));
    _exit(127);
  }
  // The shell's child, once it runs.
  int grandchild = 0;
  for (int i = 0; i < 500 && grandchild == 0; ++i) {
    for (int pid : list_proc_pids()) {
      std::optional<ProcStat> stat = read_proc_stat(pid);
      if (stat && stat->ppid == shell && stat->comm == "sleep") grandchild = pid;
    }
    constexpr timespec kTick{0, 10'000'000};
    nanosleep(&kTick, nullptr);
  }
  ASSERT_NE(grandchild, 0);
  EXPECT_TRUE(runs_below(grandchild, start_of(grandchild), getpid()));
  EXPECT_TRUE(runs_below(grandchild, start_of(grandchild), shell));
  EXPECT_FALSE(runs_below(grandchild, start_of(grandchild) + 1, getpid()));
  EXPECT_FALSE(runs_below(getpid(), start_of(getpid()), shell));
  EXPECT_FALSE(runs_below(1, start_of(1), getpid()));
  EXPECT_EQ(locate(grandchild, start_of(grandchild) + 1, getpid()), Whereabouts::kGone);
  EXPECT_EQ(locate(1, start_of(1), getpid()), Whereabouts::kElsewhere);
  kill(grandchild, SIGKILL);
  kill(shell, SIGKILL);
  waitpid(shell, nullptr, 0);
}

// The pid of a reaped process handed to an unrelated one, as a busy machine does: ns_last_pid
// (writable by root in its pid namespace) makes the next fork take it.
TEST(SignalProcessTest, AReusedPidIsNotSignalled) {
  pid_t first = sleeper();
  uint64_t first_start = start_of(first);
  ASSERT_NE(first_start, 0u);
  kill(first, SIGKILL);
  waitpid(first, nullptr, 0);
  // Start ticks are 10 ms long: the newcomer must start in a later one.
  constexpr timespec kTicks{0, 30'000'000};
  nanosleep(&kTicks, nullptr);
  pid_t unrelated = -1;
  for (int attempt = 0; attempt < 50 && unrelated != first; ++attempt) {
    if (unrelated > 0) {
      kill(unrelated, SIGKILL);
      waitpid(unrelated, nullptr, 0);
    }
    FILE* last = fopen("/proc/sys/kernel/ns_last_pid", "w");
    if (last == nullptr) GTEST_SKIP() << "ns_last_pid is not writable here (not root)";
    fprintf(last, "%d", first - 1);
    fclose(last);
    unrelated = sleeper();
  }
  if (unrelated != first) {
    kill(unrelated, SIGKILL);
    waitpid(unrelated, nullptr, 0);
    GTEST_FAIL() << "could not have pid " << first << " taken again";
  }
  EXPECT_FALSE(signal_process(first, first_start, SIGTERM));
  EXPECT_EQ(status_within(unrelated, 0.3), -1) << "the unrelated process must still run";
  kill(unrelated, SIGKILL);
  waitpid(unrelated, nullptr, 0);
}

}  // namespace
}  // namespace traindoc::supervisor
