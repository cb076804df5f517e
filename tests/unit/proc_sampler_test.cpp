// Live tests of the /proc readers and ProcSampler on this test process and on children it forks:
// sampling, the children walk (per-thread files and the /proc scan), zombies' exit statuses.
#include "supervisor/proc/proc_sampler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

bool contains(const std::vector<int>& pids, int pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

// A child that waits to be killed. (A pipe's end would leak into the other children.)
struct Sleeper {
  pid_t pid = -1;

  static Sleeper start() {
    Sleeper sleeper;
    sleeper.pid = fork();
    if (sleeper.pid == 0) {
      while (true) pause();
    }
    return sleeper;
  }

  void stop() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
  }
};

// Waits for a child to become a zombie without reaping it.
bool wait_zombie(pid_t pid) {
  for (int i = 0; i < 400; ++i) {
    std::optional<ProcStat> stat = read_proc_stat(pid);
    if (stat && stat->state == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(ProcSamplerTest, SamplesItself) {
  ProcSampler sampler;
  std::optional<ProcSnapshot> snapshot = sampler.sample(getpid(), true);
  ASSERT_TRUE(snapshot);
  const store::ProcSample& sample = snapshot->sample;
  EXPECT_EQ(sample.pid, getpid());
  EXPECT_GT(sample.t_ns, 0);
  EXPECT_GT(sample.rss, 0u);
  // Its own binary and libraries are mapped files.
  ASSERT_TRUE(sample.rss_file);
  EXPECT_GT(*sample.rss_file, 0u);
  EXPECT_LE(*sample.rss_file, sample.rss);
  EXPECT_GE(sample.threads, 1);
  EXPECT_GE(sample.cpu_user_s, 0.0);
  EXPECT_GE(sample.cpu_sys_s, 0.0);
  ASSERT_TRUE(sample.fds);
  EXPECT_GT(*sample.fds, 2);
  ASSERT_TRUE(sample.fd_limit);
  EXPECT_GT(*sample.fd_limit, 0);
  ASSERT_TRUE(sample.pss);
  EXPECT_GT(*sample.pss, 0u);
  ASSERT_TRUE(sample.uss);
  EXPECT_GT(*sample.uss, 0u);
  EXPECT_LE(*sample.uss, sample.rss + sample.rss / 2);  // rss and smaps are read moments apart
  EXPECT_EQ(snapshot->stat.state, 'R');
  EXPECT_EQ(snapshot->stat.ppid, getppid());

  std::optional<ProcStat> stat = read_proc_stat(getpid());
  ASSERT_TRUE(stat);
  EXPECT_EQ(sample.start_ticks, stat->starttime);
  EXPECT_GT(sample.start_ticks, 0u);
}

TEST(ProcSamplerTest, StartTimeOnTheRealtimeClock) {
  // A child started now started now, to the clock tick (10 ms) and the reading's moment.
  int64_t before = common::realtime_ns();
  Sleeper sleeper = Sleeper::start();
  std::optional<ProcStat> stat = read_proc_stat(sleeper.pid);
  sleeper.stop();
  ASSERT_TRUE(stat);
  int64_t started = ProcSampler().start_realtime_ns(stat->starttime);
  EXPECT_GT(started, before - 20'000'000);
  EXPECT_LT(started, common::realtime_ns());
}

TEST(ProcSamplerTest, FastSampleLeavesSlowFieldsEmpty) {
  ProcSampler sampler;
  std::optional<ProcSnapshot> snapshot = sampler.sample(getpid(), false);
  ASSERT_TRUE(snapshot);
  EXPECT_GT(snapshot->sample.rss, 0u);
  EXPECT_FALSE(snapshot->sample.pss);
  EXPECT_FALSE(snapshot->sample.uss);
  EXPECT_FALSE(snapshot->sample.fds);
  EXPECT_FALSE(snapshot->sample.fd_limit);
}

TEST(ProcSamplerTest, CountsThreadsAndDescriptors) {
  // A sanitizer runtime starts a helper thread with the process's first thread: one made first
  // keeps that helper out of the count.
  std::thread([] {}).join();
  ProcSampler sampler;
  std::optional<ProcSnapshot> before = sampler.sample(getpid(), true);
  ASSERT_TRUE(before && before->sample.fds);

  std::vector<int> extra;
  extra.reserve(10);
  for (int i = 0; i < 10; ++i) extra.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::thread a([&] { released.wait(); });
  std::thread b([&] { released.wait(); });

  std::optional<ProcSnapshot> after = sampler.sample(getpid(), true);
  release.set_value();
  a.join();
  b.join();
  for (int fd : extra) close(fd);
  ASSERT_TRUE(after && after->sample.fds);
  EXPECT_EQ(*after->sample.fds, *before->sample.fds + 10);
  EXPECT_EQ(after->sample.threads, before->sample.threads + 2);
  EXPECT_EQ(after->stat.num_threads, before->stat.num_threads + 2);
}

TEST(ProcSamplerTest, CpuTimeAdvances) {
  ProcSampler sampler;
  std::optional<ProcSnapshot> before = sampler.sample(getpid(), false);
  // Spin for 150 ms of this thread's CPU time, however busy the machine is.
  auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  double start = cpu_now();
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  volatile uint64_t sink = 0;
  while (cpu_now() - start < 0.15 && std::chrono::steady_clock::now() < give_up) sink = sink + 1;
  std::optional<ProcSnapshot> after = sampler.sample(getpid(), false);
  ASSERT_TRUE(before && after);
  double before_s = before->sample.cpu_user_s + before->sample.cpu_sys_s;
  double after_s = after->sample.cpu_user_s + after->sample.cpu_sys_s;
  EXPECT_GE(after_s - before_s, 0.05);
}

TEST(ProcSamplerTest, GoneProcessIsNullopt) {
  pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ProcSampler sampler;
  EXPECT_FALSE(sampler.sample(child, true));
  EXPECT_EQ(sampler.last_errno(), ENOENT);
  EXPECT_FALSE(sampler.sample(INT_MAX, false));
  EXPECT_TRUE(sampler.children_of(child).empty());
  EXPECT_FALSE(read_proc_stat(child));
  EXPECT_FALSE(read_proc_environ(child));
  EXPECT_FALSE(count_open_fds(child));
}

TEST(ProcSamplerTest, ZombieExitStatus) {
  pid_t child = fork();
  if (child == 0) _exit(7);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(wait_zombie(child));

  ProcSampler sampler;
  std::optional<ProcSnapshot> snapshot = sampler.sample(child, true);
  ASSERT_TRUE(snapshot);
  EXPECT_EQ(snapshot->stat.state, 'Z');
  EXPECT_EQ(snapshot->stat.ppid, getpid());
  ASSERT_TRUE(snapshot->stat.exit_code);
  EXPECT_TRUE(WIFEXITED(*snapshot->stat.exit_code));
  EXPECT_EQ(WEXITSTATUS(*snapshot->stat.exit_code), 7);
  EXPECT_EQ(snapshot->sample.rss, 0u);
  EXPECT_FALSE(snapshot->sample.pss);
  EXPECT_FALSE(snapshot->sample.fds);

  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(status, *snapshot->stat.exit_code);
  EXPECT_FALSE(sampler.sample(child, false));
}

TEST(ProcSamplerTest, ZombieKilledBySignal) {
  pid_t child = fork();
  if (child == 0) {
    raise(SIGKILL);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  ASSERT_TRUE(wait_zombie(child));
  std::optional<ProcStat> stat = read_proc_stat(child);
  ASSERT_TRUE(stat && stat->exit_code);
  EXPECT_TRUE(WIFSIGNALED(*stat->exit_code));
  EXPECT_EQ(WTERMSIG(*stat->exit_code), SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_EQ(status, *stat->exit_code);
}

TEST(ProcSamplerTest, ChildrenOfThisProcess) {
  Sleeper first = Sleeper::start();
  Sleeper second = Sleeper::start();
  // A child forked by another thread is listed under that thread's children file.
  Sleeper from_thread;
  std::thread([&] { from_thread = Sleeper::start(); }).join();
  ASSERT_GT(first.pid, 0);
  ASSERT_GT(from_thread.pid, 0);

  ProcSampler sampler;
  std::vector<int> children = sampler.children_of(getpid());
  EXPECT_TRUE(contains(children, first.pid));
  EXPECT_TRUE(contains(children, second.pid));
  EXPECT_TRUE(contains(children, from_thread.pid));
  EXPECT_TRUE(std::is_sorted(children.begin(), children.end()));
  EXPECT_FALSE(contains(children, getpid()));
  EXPECT_TRUE(sampler.children_of(first.pid).empty());

  // The fallback for kernels without the children files sees the same.
  std::vector<PidParent> all;
  sampler.scan_parents(all);
  std::vector<int> scanned;
  for (const PidParent& entry : all) {
    if (entry.ppid == getpid()) scanned.push_back(entry.pid);
  }
  std::sort(scanned.begin(), scanned.end());
  EXPECT_EQ(scanned, children);

  first.stop();
  second.stop();
  from_thread.stop();
  EXPECT_FALSE(contains(sampler.children_of(getpid()), first.pid));
}

TEST(ProcSamplerTest, GrandchildrenAreNotChildren) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(fds[1], &grandchild, sizeof grandchild);
    waitpid(grandchild, nullptr, 0);
    _exit(0);
  }
  close(fds[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(read(fds[0], &grandchild, sizeof grandchild), static_cast<ssize_t>(sizeof grandchild));
  close(fds[0]);

  ProcSampler sampler;
  std::vector<int> children = sampler.children_of(getpid());
  EXPECT_TRUE(contains(children, child));
  EXPECT_FALSE(contains(children, grandchild));
  EXPECT_EQ(sampler.children_of(child), std::vector<int>{grandchild});

  kill(grandchild, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
}

TEST(ProcReadersTest, EnvironAndCmdlineOfAnExecedChild) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  pid_t child = fork();
  if (child == 0) {
    close(fds[1]);
    dup2(fds[0], 0);
    char arg0[] = "/bin/cat";
    char* argv[] = {arg0, nullptr};
    char e1[] = "SLURM_PROCID=6";
    char e2[] = "SLURM_LOCALID=2";
    char e3[] = "SLURM_NTASKS=8";
    char e4[] = "SLURM_NODEID=1";
    char* envp[] = {e1, e2, e3, e4, nullptr};
    execve(arg0, argv, envp);
    _exit(127);
  }
  close(fds[0]);
  std::optional<std::vector<std::string>> argv;
  for (int i = 0; i < 400; ++i) {
    argv = read_proc_cmdline(child);
    if (argv && !argv->empty() && (*argv)[0] == "/bin/cat") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(argv);
  EXPECT_EQ(*argv, std::vector<std::string>{"/bin/cat"});
  std::optional<EnvironText> env = read_proc_environ(child);
  ASSERT_TRUE(env);
  common::RankEnv rank = env->rank_env();
  EXPECT_EQ(rank.source, common::RankSource::kSlurm);
  EXPECT_EQ(rank.rank, 6);
  EXPECT_EQ(rank.local_rank, 2);
  EXPECT_EQ(rank.world_size, 8);
  EXPECT_EQ(rank.node_rank, 1);
  close(fds[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(ProcReadersTest, OneShotReadersOnThisProcess) {
  std::optional<ProcStatus> status = read_proc_status(getpid());
  ASSERT_TRUE(status);
  EXPECT_GT(status->vm_rss.value_or(0), 0u);
  EXPECT_GE(status->threads.value_or(0), 1);
  std::optional<SmapsRollup> rollup = read_smaps_rollup(getpid());
  ASSERT_TRUE(rollup);
  EXPECT_GT(rollup->pss.value_or(0), 0u);
  std::optional<ProcLimits> limits = read_proc_limits(getpid());
  ASSERT_TRUE(limits && limits->open_files_soft);
  EXPECT_GT(*limits->open_files_soft, 0u);
  std::optional<MemInfo> info = read_meminfo();
  ASSERT_TRUE(info);
  EXPECT_GT(info->mem_total.value_or(0), 0u);
  EXPECT_GT(count_open_fds(getpid()).value_or(0), 2);
}

TEST(ProcFileReaderTest, LargeFilesGrowTheBuffer) {
  std::string path = testing::TempDir() + "proc_reader_large.txt";
  std::string content;
  for (int i = 0; i < 20000; ++i) content += "line " + std::to_string(i) + "\n";
  std::ofstream(path, std::ios::binary) << content;
  ProcFileReader reader;
  std::optional<std::string_view> text = reader.read(path.c_str());
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, content);
  EXPECT_EQ(reader.last_errno(), 0);
  // The buffer is reused: a smaller file after a large one.
  text = reader.read("/proc/self/stat");
  ASSERT_TRUE(text);
  EXPECT_TRUE(parse_proc_stat(*text));
  std::filesystem::remove(path);

  EXPECT_FALSE(reader.read("/nonexistent/traindoc"));
  EXPECT_TRUE(reader.last_gone());
}

TEST(ProcFileReaderTest, ListsDirectories) {
  std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "proc_reader_dir";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  // Enough entries to need more than one getdents64 call.
  for (int i = 0; i < 1500; ++i) {
    std::ofstream(dir / ("entry_with_a_longish_name_" + std::to_string(i)));
  }
  ProcFileReader reader;
  EXPECT_EQ(reader.count_dir_entries(dir.c_str()), 1500);
  int seen = 0;
  EXPECT_TRUE(reader.list_dir(dir.c_str(), [&](std::string_view name) {
    if (name.substr(0, 26) == "entry_with_a_longish_name_") ++seen;
  }));
  EXPECT_EQ(seen, 1500);
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(reader.count_dir_entries(dir.c_str()));
}

}  // namespace
}  // namespace traindoc::supervisor
