// Tests of role assignment (launcher, rank, worker, other) on process trees shaped like those of
// torchrun, torchrun under srun, mpirun, plain python, and jobs without Python.
#include "analysis/roles.h"
#include "common/rank_env.h"

#include <gtest/gtest.h>

#include <csignal>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace traindoc::analysis {
namespace {

using store::ProcessRecord;

ProcessRecord proc(int pid, int ppid, uint64_t start_ticks, const std::string& cmdline) {
  ProcessRecord p;
  p.pid = pid;
  p.ppid = ppid;
  p.start_ticks = start_ticks;
  p.start_ns = static_cast<int64_t>(start_ticks) * 10'000'000;
  p.cmdline = cmdline;
  p.argv0 = cmdline.substr(0, cmdline.find(' '));
  return p;
}

ProcessRecord ranked(ProcessRecord p, std::string_view source, int rank,
                     std::optional<int> local_rank = std::nullopt,
                     std::optional<int> node_rank = std::nullopt) {
  p.rank_source = common::rank_source_named(source);
  p.rank = rank;
  p.local_rank = local_rank;
  p.node_rank = node_rank;
  p.world_size = 2;
  return p;
}

// The role of the process with this pid (the first one, where a pid was reused).
const ProcessRole& role_of(const std::vector<ProcessRecord>& procs,
                           const std::vector<ProcessRole>& roles, int pid) {
  for (size_t i = 0; i < procs.size(); ++i) {
    if (procs[i].pid == pid) return roles[i];
  }
  static const ProcessRole kMissing;
  ADD_FAILURE() << "no process " << pid;
  return kMissing;
}

// As the agent reports a process: whether it was forked and did not exec.
ProcessRecord with_agent(ProcessRecord p, bool forked) {
  p.agent = true;
  p.forked = forked;
  return p;
}

std::string text_of(const std::vector<ProcessRecord>& procs, const std::vector<ProcessRole>& roles,
                    int pid) {
  return describe(role_of(procs, roles, pid));
}

// torchrun --nproc_per_node 2: the launcher (no rank variables), two ranks, each with two
// DataLoader workers that inherit RANK.
std::vector<ProcessRecord> torchrun_tree() {
  const std::string launcher = "/usr/bin/python3 /usr/bin/torchrun --nproc_per_node 2 train.py";
  const std::string rank = "/usr/bin/python3 -u train.py";
  return {
      proc(100, 1, 1000, launcher),
      ranked(proc(101, 100, 1010, rank), "torch", 0, 0, 0),
      ranked(proc(102, 100, 1011, rank), "torch", 1, 1, 0),
      // Listed out of start order on purpose: worker numbers follow start order.
      ranked(proc(104, 101, 1031, rank), "torch", 0, 0, 0),
      ranked(proc(103, 101, 1030, rank), "torch", 0, 0, 0),
      ranked(proc(105, 102, 1032, rank), "torch", 1, 1, 0),
      ranked(proc(106, 102, 1033, rank), "torch", 1, 1, 0),
  };
}

TEST(Roles, ToStringAndDescribe) {
  EXPECT_STREQ(to_string(Role::kLauncher), "launcher");
  EXPECT_STREQ(to_string(Role::kRank), "rank");
  EXPECT_STREQ(to_string(Role::kWorker), "worker");
  EXPECT_STREQ(to_string(Role::kOther), "other");

  ProcessRole launcher{Role::kLauncher, {}, {}, {}, {}};
  ProcessRole rank{Role::kRank, 1, 1, 0, {}};
  ProcessRole worker{Role::kWorker, 1, 1, 0, 0};
  ProcessRole other;
  EXPECT_EQ(describe(launcher), "launcher");
  EXPECT_EQ(describe(rank), "rank 1");
  EXPECT_EQ(describe(worker), "worker 0 of rank 1");
  EXPECT_EQ(describe(other), "other");
  // Missing numbers read as "?" rather than as a wrong number.
  EXPECT_EQ(describe(ProcessRole{Role::kRank, {}, {}, {}, {}}), "rank ?");
  EXPECT_EQ(describe(ProcessRole{Role::kWorker, 3, {}, {}, {}}), "worker ? of rank 3");
}

TEST(Roles, EmptyInput) {
  EXPECT_TRUE(assign_roles({}, 1).empty());
}

// A damaged run.db (found by fuzz_analyze) whose processes are each other's parent, started in the
// same tick: the roles are still given, once, rather than walked up in a circle forever.
TEST(Roles, ProcessesThatAreEachOthersParentEndTheWalk) {
  std::vector<ProcessRecord> procs = {ranked(proc(101, 103, 10, "python train.py"), "env", 0),
                                      proc(102, 101, 10, "python train.py"),
                                      proc(103, 102, 10, "python train.py"),
                                      proc(104, 104, 10, "python train.py")};
  std::vector<ProcessRole> roles = assign_roles(procs, 101);
  ASSERT_EQ(roles.size(), procs.size());
  int ranks = 0;
  for (const ProcessRole& role : roles) ranks += role.role == Role::kRank ? 1 : 0;
  EXPECT_EQ(ranks, 1);
  for (int pid : {101, 102, 103, 104}) EXPECT_FALSE(text_of(procs, roles, pid).empty()) << pid;
}

TEST(Roles, TorchrunLauncherRanksAndWorkers) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  ASSERT_EQ(roles.size(), procs.size());

  EXPECT_EQ(role_of(procs, roles, 100).role, Role::kLauncher);
  EXPECT_FALSE(role_of(procs, roles, 100).rank.has_value());

  const ProcessRole& r0 = role_of(procs, roles, 101);
  EXPECT_EQ(r0.role, Role::kRank);
  EXPECT_EQ(r0.rank, 0);
  EXPECT_EQ(r0.local_rank, 0);
  EXPECT_EQ(r0.node_rank, 0);
  EXPECT_FALSE(r0.worker.has_value());
  const ProcessRole& r1 = role_of(procs, roles, 102);
  EXPECT_EQ(r1.role, Role::kRank);
  EXPECT_EQ(r1.rank, 1);
  EXPECT_EQ(r1.local_rank, 1);

  EXPECT_EQ(text_of(procs, roles, 100), "launcher");
  EXPECT_EQ(text_of(procs, roles, 101), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 102), "rank 1");
  // 103 started before 104 although it is listed after it.
  EXPECT_EQ(text_of(procs, roles, 103), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 104), "worker 1 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 105), "worker 0 of rank 1");
  EXPECT_EQ(text_of(procs, roles, 106), "worker 1 of rank 1");

  const ProcessRole& w = role_of(procs, roles, 105);
  EXPECT_EQ(w.role, Role::kWorker);
  EXPECT_EQ(w.rank, 1);
  EXPECT_EQ(w.local_rank, 1);
  EXPECT_EQ(w.node_rank, 0);
  EXPECT_EQ(w.worker, 0);
}

TEST(Roles, WorkerNumbersBreakStartTickTiesByStartTime) {
  // Start ticks have a 10 ms granularity: two workers may share one; start_ns then decides.
  std::vector<ProcessRecord> procs = torchrun_tree();
  for (ProcessRecord& p : procs) {
    if (p.pid == 103 || p.pid == 104) p.start_ticks = 1030;
  }
  procs[3].start_ns = 5;  // pid 104
  procs[4].start_ns = 9;  // pid 103
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(text_of(procs, roles, 104), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 103), "worker 1 of rank 0");
}

// PyTorch numbers a DataLoader's workers from 0 for each iterator: the second epoch's workers,
// started once the first epoch's ended, are workers 0 and 1 again; a worker that replaced one
// that ended while the other lived takes the free number.
TEST(Roles, WorkerNumbersStartAgainOnceTheEarlierWorkersEnded) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  for (ProcessRecord& p : procs) {
    if (p.pid == 103 || p.pid == 104) p.end_ns = 12'000'000'000;
  }
  procs.push_back(ranked(proc(107, 101, 1300, "python3 -u train.py"), "torch", 0, 0, 0));
  procs.push_back(ranked(proc(108, 101, 1301, "python3 -u train.py"), "torch", 0, 0, 0));
  procs.back().end_ns = 14'000'000'000;
  procs.push_back(ranked(proc(109, 101, 1500, "python3 -u train.py"), "torch", 0, 0, 0));
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(text_of(procs, roles, 103), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 104), "worker 1 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 107), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 108), "worker 1 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 109), "worker 1 of rank 0");  // 107 lives on
}

// Two DataLoaders alive at once (persistent training workers, then validation's): each numbers
// its own from 0, as the Python hook recorded; without the record, start order numbers them on.
TEST(Roles, WorkerNumbersTheirDataLoaderGave) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  procs.push_back(ranked(proc(107, 101, 1300, "python3 -u train.py"), "torch", 0, 0, 0));
  procs.push_back(ranked(proc(108, 101, 1301, "python3 -u train.py"), "torch", 0, 0, 0));
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(text_of(procs, roles, 107), "worker 2 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 108), "worker 3 of rank 0");
  for (ProcessRecord& p : procs) {
    if (p.ppid == 101) p.worker_id = p.pid == 103 || p.pid == 107 ? 0 : 1;
  }
  roles = assign_roles(procs, 100);
  EXPECT_EQ(text_of(procs, roles, 103), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 104), "worker 1 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 107), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 108), "worker 1 of rank 0");
}

TEST(Roles, WorkersOfWorkersBelongToTheNearestRank) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  // A worker's own child (e.g. a pin-memory helper or a subprocess it runs).
  procs.push_back(ranked(proc(107, 103, 1040, "python -c pass"), "torch", 0, 0, 0));
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(role_of(procs, roles, 107).role, Role::kWorker);
  EXPECT_EQ(role_of(procs, roles, 107).rank, 0);
  // The rank's third process, in start order.
  EXPECT_EQ(text_of(procs, roles, 107), "worker 2 of rank 0");
}

TEST(Roles, AProgramARankRunsIsNotItsWorker) {
  // subprocess.run(["git", ...]) from rank 0, its worker's `sh -c`, and a multiprocessing
  // spawn child and a fork of rank 1, as the agent reports them.
  std::vector<ProcessRecord> procs = torchrun_tree();
  const std::string spawn = "/usr/bin/python3 -c from multiprocessing.spawn import spawn_main";
  procs.push_back(with_agent(ranked(proc(110, 101, 1050, "git rev-parse"), "torch", 0), false));
  procs.push_back(with_agent(ranked(proc(111, 103, 1051, "sh -c ls"), "torch", 0), false));
  procs.push_back(with_agent(ranked(proc(112, 102, 1052, spawn), "torch", 1), false));
  procs.push_back(
      with_agent(ranked(proc(113, 102, 1053, "python3 -u train.py"), "torch", 1), true));
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(role_of(procs, roles, 110).role, Role::kOther);
  EXPECT_EQ(text_of(procs, roles, 110), "program of rank 0");
  EXPECT_EQ(text_of(procs, roles, 111), "program of rank 0");
  EXPECT_EQ(text_of(procs, roles, 104), "worker 1 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 112), "worker 2 of rank 1");
  EXPECT_EQ(text_of(procs, roles, 113), "worker 3 of rank 1");
}

TEST(Roles, TorchrunUnderSrunLauncherIsNotARank) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  // srun set SLURM_PROCID=0 for torchrun; torchrun set RANK for its children.
  procs[0] = ranked(procs[0], "slurm", 0, 0, 0);
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(role_of(procs, roles, 100).role, Role::kLauncher);
  EXPECT_EQ(text_of(procs, roles, 101), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 102), "rank 1");
  EXPECT_EQ(text_of(procs, roles, 103), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 106), "worker 1 of rank 1");
}

TEST(Roles, TorchrunUnderSrunWithSlurmVariablesEverywhere) {
  // Every process of the step also carries SLURM_PROCID=0; the agent reports the innermost
  // launcher's variables (torch) for the ranks, and slurm's only for torchrun itself.
  std::vector<ProcessRecord> procs = torchrun_tree();
  procs[0] = ranked(procs[0], "slurm", 0);
  procs.insert(procs.begin(),
               ranked(proc(99, 1, 990, "/bin/bash /var/spool/slurmd/job"), "slurm", 0));
  procs[1].ppid = 99;
  std::vector<ProcessRole> roles = assign_roles(procs, 99);
  EXPECT_EQ(role_of(procs, roles, 99).role, Role::kLauncher);
  EXPECT_EQ(role_of(procs, roles, 100).role, Role::kLauncher);
  EXPECT_EQ(text_of(procs, roles, 101), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 105), "worker 0 of rank 1");
}

TEST(Roles, ShellWrapperInsideASlurmBatchJob) {
  // `traindoc run -- bash train.sh` in an sbatch script: SLURM_PROCID=0 is set for the batch
  // shell and everything below it, so every process "carries" rank 0. The trainer is python.
  std::vector<ProcessRecord> procs = {
      ranked(proc(800, 1, 100, "/bin/bash train.sh"), "slurm", 0, 0, 0),
      ranked(proc(801, 800, 105, "python3 train.py"), "slurm", 0, 0, 0),
      ranked(proc(802, 801, 110, "python3 train.py"), "slurm", 0, 0, 0),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 800);
  EXPECT_EQ(text_of(procs, roles, 800), "launcher");
  EXPECT_EQ(text_of(procs, roles, 801), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 802), "worker 0 of rank 0");
}

// torch.multiprocessing.spawn: no launcher variables; the ranks it started said theirs when
// init_process_group returned. Its resource tracker is a program of the launcher; a rank's
// DataLoader worker carries no rank of its own.
std::vector<ProcessRecord> spawn_tree() {
  const std::string child =
      "/usr/bin/python3 -B -c from multiprocessing.spawn import spawn_main; "
      "spawn_main(tracker_fd=6, pipe_handle=13) --multiprocessing-fork";
  return {
      proc(700, 1, 100, "/usr/bin/python3 train.py"),
      proc(701, 700, 180,
           "/usr/bin/python3 -B -c from multiprocessing.resource_tracker import "
           "main;main(5)"),
      ranked(proc(702, 700, 181, child), "process-group", 0),
      ranked(proc(703, 700, 181, child), "process-group", 1),
      proc(704, 703, 250, child),
  };
}

TEST(Roles, RanksThatTorchMultiprocessingSpawnStarted) {
  std::vector<ProcessRecord> procs = spawn_tree();
  std::vector<ProcessRole> roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 700), "launcher");
  EXPECT_EQ(text_of(procs, roles, 701), "other");
  EXPECT_EQ(text_of(procs, roles, 702), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 703), "rank 1");
  EXPECT_EQ(text_of(procs, roles, 704), "worker 0 of rank 1");
  // Under srun every process also carries SLURM_PROCID; the process group's ranks are inner.
  for (ProcessRecord& p : procs) {
    if (!p.rank) p = ranked(p, "slurm", 0);
  }
  roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 700), "launcher");
  EXPECT_EQ(text_of(procs, roles, 703), "rank 1");
}

// A spawned process that failed before init_process_group is a rank by spawn's index, beside
// those that joined; the parent that spawned them is their launcher either way.
TEST(Roles, RanksThatDiedBeforeJoiningTheirGroupKeepSpawnsIndex) {
  std::vector<ProcessRecord> procs = spawn_tree();
  procs[3] = ranked(procs[3], "spawn", 1);
  std::vector<ProcessRole> roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 700), "launcher");
  EXPECT_EQ(text_of(procs, roles, 702), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 703), "rank 1");
  EXPECT_EQ(text_of(procs, roles, 704), "worker 0 of rank 1");
  // None joined, and one failed: spawn's indexes alone.
  procs[2] = ranked(procs[2], "spawn", 0);
  procs[3].exit_code = 1;
  roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 700), "launcher");
  EXPECT_EQ(text_of(procs, roles, 702), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 703), "rank 1");
  // None joined and none failed: processes spawned for other work, workers of the trainer.
  procs[3].exit_code = 0;
  roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 700), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 702), "worker 0 of rank 0");
}

// Spawn stopped process 0 while it still imported the main script, before it learnt its
// number, once process 1 failed: its place in spawn's start order names it, where the numbers
// its siblings learnt agree with theirs.
TEST(Roles, ASpawnedProcessStoppedBeforeItLearntItsNumberHasItsPlace) {
  std::vector<ProcessRecord> procs = spawn_tree();
  procs[2] = proc(702, 700, 181, procs[2].cmdline);
  procs[2].exit_signal = SIGTERM;
  procs[3] = ranked(procs[3], "spawn", 1, 1);
  procs[3].exit_code = 1;
  std::vector<ProcessRole> roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 700), "launcher");
  EXPECT_EQ(text_of(procs, roles, 702), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 703), "rank 1");
  EXPECT_EQ(text_of(procs, roles, 704), "worker 0 of rank 1");
  // A process the parent started with spawn 5 s later did other work.
  procs.push_back(proc(705, 700, 681, procs[2].cmdline));
  roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 702), "rank 0");
  EXPECT_NE(roles[5].role, Role::kRank);
  // A number that is not its place: some other process came first; nothing is guessed.
  procs[3] = ranked(procs[3], "spawn", 0, 0);
  roles = assign_roles(procs, 700);
  EXPECT_EQ(text_of(procs, roles, 703), "rank 0");
  EXPECT_NE(roles[2].role, Role::kRank);
}

// multiprocessing's resource tracker and forkserver, which a rank starts with the spawn and
// forkserver start methods, are no workers: the DataLoader's worker 0 stays worker 0.
TEST(Roles, MultiprocessingServersAreNotWorkers) {
  const std::string forkserver =
      "/usr/bin/python3 -c from multiprocessing.forkserver import main; main(9, 10, "
      "['__main__'], **{'sys_path': []})";
  std::vector<ProcessRecord> procs = {
      proc(800, 1, 100, "/usr/bin/python3 train.py"),
      with_agent(proc(801, 800, 110,
                      "/usr/bin/python3 -B -c from multiprocessing.resource_tracker import "
                      "main;main(5)"),
                 false),
      with_agent(proc(802, 800, 120, forkserver), false),
      with_agent(proc(803, 802, 130, forkserver), true),
      with_agent(proc(804, 802, 131, forkserver), true),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 800);
  EXPECT_EQ(text_of(procs, roles, 800), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 801), "program of rank 0");
  EXPECT_EQ(text_of(procs, roles, 802), "program of rank 0");
  EXPECT_EQ(text_of(procs, roles, 803), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 804), "worker 1 of rank 0");
}

TEST(Roles, OpenMpi) {
  const std::string rank = "python3 train.py";
  std::vector<ProcessRecord> procs = {
      proc(200, 1, 500, "mpirun -np 2 python3 train.py"),
      ranked(proc(201, 200, 510, rank), "openmpi", 0, 0, 0),
      ranked(proc(202, 200, 511, rank), "openmpi", 1, 1, 0),
      ranked(proc(203, 201, 520, rank), "openmpi", 0, 0, 0),
      ranked(proc(204, 202, 521, rank), "openmpi", 1, 1, 0),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 200);
  EXPECT_EQ(text_of(procs, roles, 200), "launcher");
  EXPECT_EQ(text_of(procs, roles, 201), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 202), "rank 1");
  EXPECT_EQ(text_of(procs, roles, 203), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 204), "worker 0 of rank 1");
  EXPECT_EQ(role_of(procs, roles, 202).local_rank, 1);
}

TEST(Roles, RankWithoutLocalRankUsesItsRank) {
  std::vector<ProcessRecord> procs = {
      proc(200, 1, 500, "mpirun -np 2 ./train"),
      ranked(proc(201, 200, 510, "./train"), "pmi", 0),
      ranked(proc(202, 200, 511, "./train"), "pmi", 1),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 200);
  EXPECT_EQ(role_of(procs, roles, 202).role, Role::kRank);
  EXPECT_EQ(role_of(procs, roles, 202).local_rank, 1);
  EXPECT_FALSE(role_of(procs, roles, 202).node_rank.has_value());
}

TEST(Roles, SinglePythonProcessIsRankZero) {
  std::vector<ProcessRecord> procs = {
      proc(300, 1, 100, "python3 train.py --epochs 1"),
      proc(301, 300, 110, "python3 train.py --epochs 1"),
      proc(302, 300, 111, "python3 train.py --epochs 1"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 300);
  EXPECT_EQ(role_of(procs, roles, 300).role, Role::kRank);
  EXPECT_EQ(role_of(procs, roles, 300).rank, 0);
  EXPECT_EQ(role_of(procs, roles, 300).local_rank, 0);
  EXPECT_EQ(text_of(procs, roles, 300), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 301), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 302), "worker 1 of rank 0");
}

// torchrun failed before it started a rank, run by `timeout`: both are launchers, and the
// wrapper, whose arguments name torchrun's module, is not taken for torchrun itself.
TEST(Roles, ALauncherThatStartedNoRankUnderAWrapper) {
  std::vector<ProcessRecord> procs = {
      proc(900, 1, 100, "timeout 120 /usr/bin/python3 -m torch.distributed.run train.py"),
      proc(901, 900, 110, "/usr/bin/python3 -m torch.distributed.run train.py"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 900);
  EXPECT_EQ(text_of(procs, roles, 900), "launcher");
  EXPECT_EQ(text_of(procs, roles, 901), "launcher");
}

// The launcher is known by what Python runs past the interpreter's own options; a script whose
// arguments name a launcher is not one.
TEST(Roles, ALauncherThatStartedNoRankRunByPythonWithOptions) {
  for (const char* cmdline : {"/usr/bin/python3 -u /usr/bin/torchrun --nproc_per_node 2 train.py",
                              "python3 -X faulthandler -W ignore -m torch.distributed.run train.py",
                              "python3.11 -uB -mtorch.distributed.launch train.py"}) {
    std::vector<ProcessRecord> procs = {proc(900, 1, 100, cmdline)};
    EXPECT_EQ(text_of(procs, assign_roles(procs, 900), 900), "launcher") << cmdline;
  }
  std::vector<ProcessRecord> procs = {
      proc(900, 1, 100, "python3 train.py -m torch.distributed.run")};
  EXPECT_EQ(text_of(procs, assign_roles(procs, 900), 900), "rank 0");
}

TEST(Roles, WhatPythonRuns) {
  using Kind = PythonMain::Kind;
  const auto main_of = [](const std::string& cmdline) {
    const ProcessRecord record = proc(1, 0, 1, cmdline);
    const PythonMain main = python_main(record);
    return std::make_tuple(main.kind, std::string(main.from));
  };
  EXPECT_EQ(main_of("python3 -u train.py --lr 0.1"),
            std::make_tuple(Kind::kScript, std::string("train.py --lr 0.1")));
  EXPECT_EQ(main_of("python3 -W ignore -X dev -m pkg.mod -x"),
            std::make_tuple(Kind::kModule, std::string("pkg.mod -x")));
  EXPECT_EQ(main_of("python3 -Wignore -Xdev -mpkg.mod"),
            std::make_tuple(Kind::kModule, std::string("pkg.mod")));
  EXPECT_EQ(main_of("python3 --check-hash-based-pycs never -c print(1)"),
            std::make_tuple(Kind::kCode, std::string()));
  EXPECT_EQ(main_of("python3 -u"), std::make_tuple(Kind::kNone, std::string()));
  EXPECT_EQ(main_of("bash train.py"), std::make_tuple(Kind::kNone, std::string()));
}

TEST(Roles, ShellWrappingPythonIsALauncher) {
  // `traindoc run -- bash run.sh`, where run.sh starts python: the shell is not the trainer.
  std::vector<ProcessRecord> procs = {
      proc(400, 1, 100, "/bin/bash run.sh"),
      proc(401, 400, 105, "python3 train.py"),
      proc(402, 401, 110, "python3 train.py"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 400);
  EXPECT_EQ(text_of(procs, roles, 400), "launcher");
  EXPECT_EQ(text_of(procs, roles, 401), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 402), "worker 0 of rank 0");
}

TEST(Roles, ShCDashWrappingPythonIsALauncher) {
  // `traindoc run -- sh -c "python3 train.py"`: the shell's own command line names python.
  std::vector<ProcessRecord> procs = {
      proc(400, 1, 100, "sh -c python3 train.py --lr 0.1"),
      proc(401, 400, 105, "python3 train.py --lr 0.1"),
      proc(402, 401, 110, "python3 train.py --lr 0.1"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 400);
  EXPECT_EQ(text_of(procs, roles, 400), "launcher");
  EXPECT_EQ(text_of(procs, roles, 401), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 402), "worker 0 of rank 0");
}

TEST(Roles, PythonScriptArgumentDoesNotMakeAProgramPython) {
  // A native program whose arguments mention python (a path, a flag) is not a Python process.
  std::vector<ProcessRecord> procs = {
      proc(450, 1, 100, "/opt/tool/run --config /home/u/python/train.yaml"),
      proc(451, 450, 105, "/usr/bin/python3.11 train.py"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 450);
  EXPECT_EQ(text_of(procs, roles, 451), "rank 0");
}

TEST(Roles, EarliestTopmostPythonWins) {
  // Two unrelated Python trees under a shell: the one that started first is the trainer.
  std::vector<ProcessRecord> procs = {
      proc(500, 1, 100, "/bin/bash run.sh"),
      proc(502, 500, 130, "python3 evaluate.py"),
      proc(501, 500, 120, "python3 train.py"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 500);
  EXPECT_EQ(text_of(procs, roles, 501), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 500), "launcher");
  EXPECT_EQ(text_of(procs, roles, 502), "other");
}

TEST(Roles, OfPythonsRunOneAfterAnotherTheOneThatFailedOrRanLongestTrains) {
  // run.sh checks its environment with one Python, then trains with another.
  auto script = [](std::optional<int> check_exit, std::optional<int> train_exit) {
    std::vector<ProcessRecord> procs = {
        proc(500, 1, 100, "/bin/bash run.sh"),
        proc(501, 500, 110, "python3 -c import torch; print(torch.__version__)"),
        proc(502, 500, 150, "python3 train.py"),
    };
    procs[1].end_ns = procs[1].start_ns + 300'000'000;
    procs[1].exit_code = check_exit;
    procs[2].end_ns = procs[2].start_ns + 60'000'000'000;
    procs[2].exit_code = train_exit;
    return procs;
  };
  for (auto [check_exit, train_exit, trainer] :
       {std::tuple{0, 1, 502}, std::tuple{0, 0, 502}, std::tuple{1, 0, 501}}) {
    std::vector<ProcessRecord> procs = script(check_exit, train_exit);
    procs[0].end_ns = procs[2].end_ns;
    procs[0].exit_code = check_exit != 0 ? check_exit : train_exit;  // set -e
    std::vector<ProcessRole> roles = assign_roles(procs, 500);
    EXPECT_EQ(text_of(procs, roles, trainer), "rank 0") << check_exit << " " << train_exit;
  }
  // The job ended well: a probe that failed (and was let fail) is not what trained.
  std::vector<ProcessRecord> procs = script(1, 0);
  procs[0].exit_code = 0;
  EXPECT_EQ(text_of(procs, assign_roles(procs, 500), 502), "rank 0");
  // A monitor still running at the end, or stopped by the script's trap, is not the trainer.
  procs = script(0, 0);
  procs.push_back(proc(503, 500, 140, "python3 monitor.py"));
  EXPECT_EQ(text_of(procs, assign_roles(procs, 500), 502), "rank 0");
  procs.back().end_ns = procs[2].end_ns + 1'000'000'000;
  procs.back().exit_signal = SIGTERM;
  procs[0].exit_code = 1;
  procs[2].exit_code = 1;
  EXPECT_EQ(text_of(procs, assign_roles(procs, 500), 502), "rank 0");
  // A Python that the trainer runs through a shell is its program, not a candidate.
  procs = script(0, 1);
  procs.push_back(proc(504, 502, 160, "/bin/sh -c python3 -c import apex"));
  procs.push_back(proc(505, 504, 161, "python3 -c import apex"));
  procs.back().end_ns = procs.back().start_ns + 1000;
  procs.back().exit_code = 1;
  procs[0].exit_code = 1;
  EXPECT_EQ(text_of(procs, assign_roles(procs, 500), 502), "rank 0");
}

TEST(Roles, JobWithoutPythonRootIsRankZero) {
  std::vector<ProcessRecord> procs = {
      proc(600, 1, 100, "./train_native --steps 10"),
      proc(601, 600, 110, "./train_native --steps 10"),
      proc(650, 1, 120, "sleep 100"),  // an orphan the supervisor adopted
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 600);
  EXPECT_EQ(text_of(procs, roles, 600), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 601), "worker 0 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 650), "other");
}

TEST(Roles, NoPythonAndRootUnknownLeavesEveryoneOther) {
  std::vector<ProcessRecord> procs = {proc(700, 1, 100, "make -j4"), proc(701, 700, 110, "cc")};
  std::vector<ProcessRole> roles = assign_roles(procs, 12345);
  EXPECT_EQ(text_of(procs, roles, 700), "other");
  EXPECT_EQ(text_of(procs, roles, 701), "other");
}

TEST(Roles, ProcessesUnrelatedToRanksAreOther) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  // The launcher runs a helper (not a rank, not above one); an orphan was adopted by the
  // supervisor; a process whose parent was never seen.
  procs.push_back(proc(120, 100, 1050, "nvidia-smi --query-gpu=memory.used"));
  procs.push_back(proc(121, 1, 1060, "sleep 1000"));
  procs.push_back(proc(122, 9999, 1070, "cat"));
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(text_of(procs, roles, 120), "other");
  EXPECT_EQ(text_of(procs, roles, 121), "other");
  EXPECT_EQ(text_of(procs, roles, 122), "other");
  EXPECT_FALSE(role_of(procs, roles, 120).rank.has_value());
  EXPECT_EQ(text_of(procs, roles, 100), "launcher");
}

TEST(Roles, PidReusePicksTheParentThatExistedWhenTheChildStarted) {
  std::vector<ProcessRecord> procs = torchrun_tree();
  // pid 150 was first a worker of rank 0 (start 1035), then, once it had ended, an unrelated
  // process the launcher started (start 2000). Each had a child.
  procs.push_back(ranked(proc(150, 101, 1035, "python3 -u train.py"), "torch", 0, 0, 0));
  procs.push_back(proc(150, 100, 2000, "nvidia-smi"));
  procs.push_back(proc(160, 150, 1036, "python3 -u train.py"));  // child of the worker
  procs.push_back(proc(161, 150, 2001, "nvidia-smi -q"));        // child of the new process
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  ASSERT_EQ(roles.size(), procs.size());
  EXPECT_EQ(describe(roles[7]), "worker 2 of rank 0");  // first pid 150
  EXPECT_EQ(describe(roles[8]), "other");               // second pid 150
  EXPECT_EQ(text_of(procs, roles, 160), "worker 3 of rank 0");
  EXPECT_EQ(text_of(procs, roles, 161), "other");
}

TEST(Roles, AProgramKnownOnlyByItsEndIsOfTheRankThatReapedIt) {
  // A static helper the rank ran, reaped between two walks: its parent's record gives its end
  // and parent only, no start (ticks 0, start_ns its end).
  std::vector<ProcessRecord> procs = {
      ranked(proc(101, 100, 1010, "python3 train.py"), "torch", 0, 0),
  };
  ProcessRecord helper;
  helper.pid = 130;
  helper.ppid = 101;
  helper.end_ns = 1020LL * 10'000'000;
  helper.start_ns = helper.end_ns;
  procs.push_back(helper);
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(describe(roles[1]), "program of rank 0");
  // One that ended before the rank with its pid started was another process's.
  procs[1].end_ns = procs[1].start_ns = 1000LL * 10'000'000;
  roles = assign_roles(procs, 100);
  EXPECT_EQ(describe(roles[1]), "other");
}

TEST(Roles, PidReuseOfARankPid) {
  // Rank 0 ended and its pid went to a process of another job branch; the old rank's worker
  // still belongs to rank 0, and the new process's child does not.
  std::vector<ProcessRecord> procs = {
      proc(100, 1, 1000, "python3 -m torch.distributed.run train.py"),
      ranked(proc(101, 100, 1010, "python3 train.py"), "torch", 0, 0),
      ranked(proc(102, 101, 1020, "python3 train.py"), "torch", 0, 0),
      proc(101, 100, 3000, "sh -c true"),
      proc(103, 101, 3001, "true"),
  };
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(describe(roles[1]), "rank 0");
  EXPECT_EQ(describe(roles[2]), "worker 0 of rank 0");
  EXPECT_EQ(describe(roles[3]), "other");
  EXPECT_EQ(describe(roles[4]), "other");
}

TEST(Roles, RestartedRanksAreRanksAgain) {
  // torchrun --max-restarts: a second generation of ranks with the same rank numbers.
  std::vector<ProcessRecord> procs = torchrun_tree();
  procs.push_back(ranked(proc(110, 100, 5000, "python3 -u train.py"), "torch", 0, 0, 0));
  procs.push_back(ranked(proc(111, 110, 5010, "python3 -u train.py"), "torch", 0, 0, 0));
  std::vector<ProcessRole> roles = assign_roles(procs, 100);
  EXPECT_EQ(text_of(procs, roles, 110), "rank 0");
  EXPECT_EQ(text_of(procs, roles, 111), "worker 0 of rank 0");
}

}  // namespace
}  // namespace traindoc::analysis
