// Tests of the job's guard on real processes: it finds the run's processes by their environment,
// their record in run.db and their parents, ends them when its owner ends without releasing it
// (SIGTERM, then SIGKILL to those that ignore it), records that in run.db, and leaves everything
// alone once released.
#include "supervisor/job_guard.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/layout.h"
#include "store/store_reader.h"
#include "store/store_writer.h"
#include "store_test_util.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

using store::test::TempDir;

// A shell running `script` with `run_dir` as its run folder, as the launcher starts the job.
pid_t start_job_process(const std::string& run_dir, const std::string& script) {
  pid_t pid = fork();
  if (pid == 0) {
    setenv(common::kRunDirEnv, run_dir.c_str(), 1);
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

template <typename Done>
bool wait_until(Done done, double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The wait status of our child `pid`, or -1 when it still runs after `seconds`.
int wait_status(pid_t pid, double seconds) {
  int status = -1;
  wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; }, seconds);
  return status;
}

// The pids processes_of_run finds, checked against the start times it gives them.
std::vector<int> run_pids(const std::string& run_dir, const ProcessIds& recorded = {}) {
  std::vector<int> pids;
  for (auto [pid, start] : processes_of_run(run_dir, recorded)) {
    std::optional<ProcStat> stat = read_proc_stat(pid);
    if (stat && stat->starttime == start) pids.push_back(pid);
  }
  return pids;
}

// The guard of `run_dir` as ps shows it ("job-guard <run_dir>"); 0 when there is none.
int guard_pid(const std::string& run_dir) {
  for (int pid : list_proc_pids()) {
    std::optional<std::vector<std::string>> argv = read_proc_cmdline(pid);
    if (argv && argv->size() == 2 && (*argv)[0] == "job-guard" && (*argv)[1] == run_dir) {
      return pid;
    }
  }
  return 0;
}

TEST(JobGuardTest, TheRunsProcessesAreFoundByTheirEnvironment) {
  TempDir dir;
  std::string run = dir.path().string();
  pid_t ours = start_job_process(run, "exec sleep 30");
  pid_t other_run = start_job_process(run + "-2", "exec sleep 30");
  pid_t outside = fork();
  if (outside == 0) {
    execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  // A forked child shows its parent's environment until it execs.
  EXPECT_TRUE(wait_until([&] { return !run_pids(run).empty(); }, 5));
  EXPECT_EQ(run_pids(run), std::vector<int>{ours});
  for (pid_t pid : {ours, other_run, outside}) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_TRUE(run_pids(run).empty()) << "a zombie's environment is empty";
}

TEST(JobGuardTest, ProcessesWithoutTheEnvironmentAreFoundByRecordOrParent) {
  TempDir dir;
  std::string run = dir.path().string();
  // A shell of the run and its child that dropped the environment.
  pid_t shell = start_job_process(run, "env -i sleep 30 & wait");
  pid_t recorded = fork();
  if (recorded == 0) {
    execl("/usr/bin/env", "env", "-i", "sleep", "30", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(wait_until([&] { return run_pids(run).size() == 2; }, 5));
  std::optional<ProcStat> stat = read_proc_stat(recorded);
  ASSERT_TRUE(stat);
  std::vector<int> found = run_pids(run);
  ASSERT_EQ(std::ranges::count(found, shell), 1);
  int child = found[0] == shell ? found[1] : found[0];
  EXPECT_EQ(read_proc_stat(child)->ppid, shell);
  std::vector<int> all = {shell, child, recorded};
  std::ranges::sort(all);
  EXPECT_EQ(run_pids(run, {{recorded, stat->starttime}}), all);
  EXPECT_EQ(run_pids(run, {{recorded, stat->starttime + 1}}), found)
      << "the pid of another process";
  for (pid_t pid : {shell, child, recorded}) kill(pid, SIGKILL);
  for (pid_t pid : {shell, recorded}) waitpid(pid, nullptr, 0);
}

TEST(JobGuardTest, AnOwnerThatEndsFirstHasItsJobEndedAndRecorded) {
  TempDir dir;
  std::string run = dir.path().string();
  store::RunInfo info;
  info.start_ns = common::realtime_ns();
  {
    store::StoreWriter writer = store::StoreWriter::open(run + "/run.db");
    writer.write_run(info);
  }
  auto guard =
      std::make_unique<JobGuard>(run, true, [run] { std::ofstream(run + "/reported") << 1; });
  pid_t plain = start_job_process(run, "exec sleep 30");
  // A shell that ignores SIGTERM, and its sleep that inherits that.
  pid_t stubborn = start_job_process(run, "trap '' TERM; sleep 30; true");
  ASSERT_TRUE(wait_until([&] { return run_pids(run).size() == 3; }, 5));
  std::optional<ProcStat> stat = read_proc_stat(plain);
  ASSERT_TRUE(stat);
  {
    store::ProcessRecord record;
    record.pid = plain;
    record.start_ticks = stat->starttime;
    record.cmdline = "sleep 30";
    store::StoreWriter writer = store::StoreWriter::open(run + "/run.db");
    writer.upsert_process(record);
  }
  // The guard names itself once it runs, which may be after its constructor returned.
  ASSERT_TRUE(wait_until([&] { return guard_pid(run) == guard->pid(); }, 5));

  guard.reset();
  int status = wait_status(plain, 2);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(wait_status(stubborn, 1), -1) << "SIGKILL comes after a grace";
  status = wait_status(stubborn, 10);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_TRUE(wait_until([&] { return std::filesystem::exists(run + "/reported"); }, 5));

  store::Evidence evidence = store::read_evidence(run + "/run.db");
  ASSERT_EQ(evidence.events.size(), 1u);
  EXPECT_EQ(evidence.events[0].kind, store::EventKind::kSupervisorLost);
  EXPECT_NE(evidence.events[0].text.find("its guard then ended the job: SIGTERM to 3 processes, "
                                         "then SIGKILL to the 2 processes still there after 5 s"),
            std::string::npos)
      << evidence.events[0].text;
  ASSERT_EQ(evidence.processes.size(), 1u);
  EXPECT_EQ(evidence.processes[0].end_source, store::EndSource::kGuard);
  EXPECT_GT(evidence.processes[0].end_ns, info.start_ns);
  EXPECT_TRUE(wait_until([&] { return guard_pid(run) == 0; }, 2));
}

TEST(JobGuardTest, AReleasedGuardLeavesWhatStillRunsAlone) {
  TempDir dir;
  std::string run = dir.path().string();
  JobGuard guard(run, false, [run] { std::ofstream(run + "/reported") << 1; });
  pid_t left = start_job_process(run, "exec sleep 30");
  ASSERT_TRUE(wait_until([&] { return run_pids(run).size() == 1; }, 5));
  // The guard names itself once it runs, which may be after its constructor returned.
  ASSERT_TRUE(wait_until([&] { return guard_pid(run) == guard.pid(); }, 5));
  guard.release();
  EXPECT_TRUE(wait_until([&] { return guard_pid(run) == 0; }, 2));
  EXPECT_EQ(wait_status(left, 0.5), -1);
  EXPECT_FALSE(std::filesystem::exists(run + "/reported"));
  kill(left, SIGKILL);
  waitpid(left, nullptr, 0);
}

}  // namespace
}  // namespace traindoc::supervisor
