// Tests of the process table: sightings, details, agent identities (fork then exec), which end
// wins, vanished processes, pid reuse, and the changed-records feed for the store.
#include "supervisor/process_table.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <optional>

namespace traindoc::supervisor {
namespace {

using store::EndSource;
using store::ProcessRecord;

// Wait statuses as waitpid gives them.
constexpr int exit_status(int code) {
  return (code & 0xff) << 8;
}
constexpr int signal_status(int sig, bool core = false) {
  return sig | (core ? 0x80 : 0);
}

// The table, with the latest copy of every record read back through take_changed.
struct Table {
  ProcessTable table;
  std::vector<ProcessRecord> all;

  void refresh() {
    for (const ProcessRecord& r : table.take_changed()) {
      auto same = [&](const ProcessRecord& x) {
        return x.pid == r.pid && x.start_ticks == r.start_ticks;
      };
      auto learnt_ticks = [&](const ProcessRecord& x) {  // start ticks known only now
        return x.pid == r.pid && x.start_ticks == 0;
      };
      auto it = std::find_if(all.begin(), all.end(), same);
      if (it == all.end()) it = std::find_if(all.begin(), all.end(), learnt_ticks);
      if (it == all.end()) {
        all.push_back(r);
      } else {
        *it = r;
      }
    }
  }

  ProcessRecord get(int pid, uint64_t start_ticks) {
    refresh();
    for (const ProcessRecord& r : all) {
      if (r.pid == pid && r.start_ticks == start_ticks) return r;
    }
    ADD_FAILURE() << "no record for pid " << pid << " start " << start_ticks;
    return {};
  }
};

AgentIdentity identity(int pid, int ppid, uint64_t start_ticks, bool forked,
                       const std::string& cmdline, int rank = -1, int local_rank = -1,
                       common::RankSource source = common::RankSource::kNone) {
  AgentIdentity id;
  id.pid = pid;
  id.ppid = ppid;
  id.start_ticks = start_ticks;
  id.start_ns = 1'000'000 + pid;
  id.forked = forked;
  id.cmdline = cmdline;
  id.rank = rank;
  id.local_rank = local_rank;
  id.world_size = rank >= 0 ? 2 : -1;
  id.node_rank = rank >= 0 ? 0 : -1;
  id.rank_source = source;
  return id;
}

common::RankEnv torch_env(int rank, int local_rank = -1) {
  common::RankEnv env;
  env.source = common::RankSource::kTorch;
  env.rank = rank;
  env.local_rank = local_rank;
  env.world_size = 4;
  return env;
}

TEST(ProcessTable, SeenAliveFirstTimeOnly) {
  ProcessTable table;
  EXPECT_TRUE(table.seen_alive(10, 1, 100, 5000));
  EXPECT_FALSE(table.seen_alive(10, 1, 100, 6000));
  EXPECT_TRUE(table.seen_alive(11, 10, 110, 6000));
  EXPECT_EQ(table.size(), 2u);
  std::vector<ProcessRecord> changed = table.take_changed();
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].pid, 10);
  EXPECT_EQ(changed[0].ppid, 1);
  EXPECT_EQ(changed[0].start_ticks, 100u);
  EXPECT_EQ(changed[0].start_ns, 5000);  // the first sighting
  EXPECT_EQ(changed[0].end_source, EndSource::kNone);
  EXPECT_FALSE(changed[0].agent);
  EXPECT_TRUE(table.is_live(10));
  EXPECT_TRUE(table.is_live(11));
  EXPECT_FALSE(table.is_live(12));
  EXPECT_EQ(table.live_pids(), (std::vector<int>{10, 11}));
}

TEST(ProcessTable, LiveAgentProcessesWithOrWithoutWorkersAndARanksWorkers) {
  ProcessTable table;
  table.seen_alive(5, 1, 50, 5000);  // no agent: a shell
  table.from_agent(identity(10, 5, 100, false, "python3 -m torch.distributed.run train.py"));
  table.from_agent(identity(20, 10, 200, false, "python3 train.py", 0));
  table.from_agent(identity(21, 20, 210, true, "python3 train.py", 0));  // its worker
  table.from_agent(identity(22, 10, 220, false, "python3 train.py", 1));
  table.ended(22, 0, EndSource::kSupervisor, 9000);
  EXPECT_EQ(table.live_agent_pids(false), (std::vector<int>{10, 20}));
  EXPECT_EQ(table.live_agent_pids(true), (std::vector<int>{10, 20, 21}));
  // A rank's DataLoader workers: those below it that a DataLoader numbered, however started.
  table.worker_started(21, 210, 0);
  table.seen_alive(23, 20, 230, 6000);  // a forkserver, then its worker
  table.from_agent(identity(24, 23, 240, false, "python3 -c from multiprocessing...", 0));
  table.worker_started(24, 240, 1);
  table.from_agent(identity(25, 20, 250, true, "python3 train.py", 0));  // a forked Pool's
  EXPECT_EQ(table.live_workers_of(20), (std::vector<int>{21, 24}));
  EXPECT_EQ(table.live_workers_of(10), (std::vector<int>{21, 24}));
  EXPECT_TRUE(table.live_workers_of(21).empty());
}

TEST(ProcessTable, DescendantsOfALiveProcess) {
  ProcessTable table;
  table.seen_alive(5, 1, 50, 5000);     // timeout
  table.seen_alive(10, 5, 100, 5000);   // torchrun
  table.seen_alive(20, 10, 200, 5000);  // a rank
  table.seen_alive(30, 1, 300, 5000);   // outside
  EXPECT_TRUE(table.descends_from(20, 10));
  EXPECT_TRUE(table.descends_from(20, 5));
  EXPECT_FALSE(table.descends_from(5, 20));
  EXPECT_FALSE(table.descends_from(30, 5));
  EXPECT_FALSE(table.descends_from(20, 20));
  EXPECT_FALSE(table.descends_from(99, 5));  // unknown
  // A cycle (pids reused across records) ends.
  table.seen_alive(40, 41, 400, 5000);
  table.seen_alive(41, 40, 410, 5000);
  EXPECT_FALSE(table.descends_from(40, 5));
}

TEST(ProcessTable, TakeChangedReturnsOnlyChangedRecords) {
  ProcessTable table;
  table.seen_alive(10, 1, 100, 1);
  table.seen_alive(11, 10, 110, 1);
  EXPECT_EQ(table.take_changed().size(), 2u);
  EXPECT_TRUE(table.take_changed().empty());

  // A sighting that changes nothing is not a change.
  table.seen_alive(10, 1, 100, 2);
  EXPECT_TRUE(table.take_changed().empty());

  table.ended(11, exit_status(0), EndSource::kSupervisor, 3);
  std::vector<ProcessRecord> changed = table.take_changed();
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].pid, 11);
  EXPECT_EQ(changed[0].exit_code, 0);
  EXPECT_TRUE(table.take_changed().empty());

  // An end that loses to the one already there changes nothing either.
  table.ended(11, exit_status(5), EndSource::kZombie, 4);
  EXPECT_TRUE(table.take_changed().empty());
}

TEST(ProcessTable, SetDetails) {
  Table t;
  t.table.seen_alive(10, 1, 100, 1);
  t.table.set_details(10, 100, "python3", "python3 train.py --lr 0.1", torch_env(2, 0));
  ProcessRecord r = t.get(10, 100);
  EXPECT_EQ(r.argv0, "python3");
  EXPECT_EQ(r.cmdline, "python3 train.py --lr 0.1");
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_FALSE(r.node_rank.has_value());
  EXPECT_EQ(r.rank_source, common::RankSource::kTorch);

  // Details are kept from the first time.
  t.table.set_details(10, 100, "other", "other cmdline", torch_env(3, 1));
  r = t.get(10, 100);
  EXPECT_EQ(r.argv0, "python3");
  EXPECT_EQ(r.cmdline, "python3 train.py --lr 0.1");
  EXPECT_EQ(r.rank, 2);
}

TEST(ProcessTable, SetDetailsWithoutRank) {
  Table t;
  t.table.seen_alive(10, 1, 100, 1);
  t.table.set_details(10, 100, "bash", "bash run.sh", common::RankEnv{});
  ProcessRecord r = t.get(10, 100);
  EXPECT_FALSE(r.rank.has_value());
  EXPECT_FALSE(r.local_rank.has_value());
  EXPECT_FALSE(r.world_size.has_value());
  EXPECT_EQ(r.rank_source, common::RankSource::kNone);
}

TEST(ProcessTable, TheRankInitProcessGroupGave) {
  Table t;
  // torch.multiprocessing.spawn's child under srun: SLURM_PROCID of the whole step, then the
  // rank the process group gave.
  common::RankEnv slurm;
  slurm.source = common::RankSource::kSlurm;
  slurm.rank = 0;
  slurm.local_rank = 0;
  t.table.seen_alive(10, 1, 100, 1);
  t.table.set_details(10, 100, "python3", "python3 -c spawn_main", slurm);
  t.table.joined_process_group(10, 100, 3, 4);
  ProcessRecord r = t.get(10, 100);
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.rank_source, common::RankSource::kProcessGroup);
  EXPECT_FALSE(r.local_rank.has_value());
  // torchrun's RANK names the same rank: it stays, with its local rank.
  t.table.seen_alive(20, 1, 200, 1);
  t.table.set_details(20, 200, "python3", "python3 train.py", torch_env(2, 0));
  t.table.joined_process_group(20, 200, 2, 4);
  r = t.get(20, 200);
  EXPECT_EQ(r.rank_source, common::RankSource::kTorch);
  EXPECT_EQ(r.local_rank, 0);
}

// What the code passed to init_process_group is kept beside the launcher's rank, which stays.
TEST(ProcessTable, TheArgumentsInitProcessGroupWasCalledWith) {
  Table t;
  t.table.seen_alive(20, 1, 200, 1);
  t.table.set_details(20, 200, "python3", "python3 train.py", torch_env(1, 1));
  t.table.called_init_process_group(20, 200, -1, 8);  // rank left to RANK
  ProcessRecord r = t.get(20, 200);
  EXPECT_EQ(r.init_rank, -1);
  EXPECT_EQ(r.init_world_size, 8);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.rank_source, common::RankSource::kTorch);
  // A later call (the job's group, after a private one it destroyed) replaces both.
  t.table.called_init_process_group(20, 200, 0, -1);
  r = t.get(20, 200);
  EXPECT_EQ(r.init_rank, 0);
  EXPECT_EQ(r.init_world_size, -1);
}

TEST(ProcessTable, TheNumberADataLoaderGaveItsWorker) {
  Table t;
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  t.table.worker_started(30, 300, 1);
  EXPECT_EQ(t.get(30, 300).worker_id, 1);
  // The worker exec'd another program: no worker of a DataLoader any more.
  t.table.from_agent(
      identity(30, 20, 300, false, "/bin/sh -c true", -1, -1, common::RankSource::kNone));
  EXPECT_EQ(t.get(30, 300).worker_id, std::nullopt);
}

TEST(ProcessTable, TheIndexTorchMultiprocessingSpawnGave) {
  Table t;
  // Under srun: spawn's index replaces SLURM_PROCID, and init_process_group's rank replaces it.
  common::RankEnv slurm;
  slurm.source = common::RankSource::kSlurm;
  slurm.rank = 0;
  t.table.seen_alive(10, 1, 100, 1);
  t.table.set_details(10, 100, "python3", "python3 -c spawn_main", slurm);
  t.table.spawned(10, 100, 1);
  ProcessRecord r = t.get(10, 100);
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.rank_source, common::RankSource::kSpawn);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_FALSE(r.world_size.has_value());
  t.table.joined_process_group(10, 100, 5, 8);
  t.table.spawned(10, 100, 1);  // never back: the group's rank is the truth
  r = t.get(10, 100);
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 1);  // spawn's index, on this node
  EXPECT_EQ(r.rank_source, common::RankSource::kProcessGroup);
  // torchrun's RANK stays.
  t.table.seen_alive(20, 1, 200, 1);
  t.table.set_details(20, 200, "python3", "python3 train.py", torch_env(2, 0));
  t.table.spawned(20, 200, 0);
  EXPECT_EQ(t.get(20, 200).rank, 2);
}

TEST(ProcessTable, AgentIdentityAlone) {
  Table t;
  t.table.from_agent(
      identity(20, 10, 200, false, "python3 train.py", 1, 1, common::RankSource::kTorch));
  ProcessRecord r = t.get(20, 200);
  EXPECT_TRUE(r.agent);
  EXPECT_FALSE(r.forked);
  EXPECT_EQ(r.ppid, 10);
  EXPECT_EQ(r.start_ns, 1'000'020);
  EXPECT_EQ(r.cmdline, "python3 train.py");
  EXPECT_EQ(r.argv0, "python3");
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 2);
  EXPECT_EQ(r.node_rank, 0);
  EXPECT_EQ(r.rank_source, common::RankSource::kTorch);
  EXPECT_TRUE(t.table.is_live(20));
}

TEST(ProcessTable, AgentKeepsTheEarlierStartAndTheWalkCmdline) {
  // The walk saw it first (later than it started); the agent knows when it really started.
  Table t;
  t.table.seen_alive(20, 10, 200, 9'000'000);
  t.table.set_details(20, 200, "python3", "python3 train.py --full /proc cmdline",
                      common::RankEnv{});
  t.table.from_agent(identity(20, 10, 200, false, "python3 train.py --cut"));
  ProcessRecord r = t.get(20, 200);
  EXPECT_EQ(r.start_ns, 1'000'020);
  EXPECT_EQ(r.cmdline, "python3 train.py --full /proc cmdline");
  EXPECT_TRUE(r.agent);
  EXPECT_EQ(t.table.size(), 1u);
}

TEST(ProcessTable, AgentWithoutStartTicksJoinsTheWalkRecord) {
  Table t;
  t.table.from_agent(identity(20, 10, 0, false, "python3 train.py"));
  // The walk's first sighting asks for /proc details (the agent's command line is cut short).
  EXPECT_TRUE(t.table.seen_alive(20, 10, 200, 5));
  EXPECT_FALSE(t.table.seen_alive(20, 10, 200, 6));
  EXPECT_EQ(t.table.size(), 1u);
  ProcessRecord r = t.get(20, 200);
  EXPECT_TRUE(r.agent);
  EXPECT_EQ(r.start_ticks, 200u);
}

TEST(ProcessTable, ForkThenExecTheExecWins) {
  // A rank forks (the child registers with its parent's identity), and the child execs a shell.
  Table t;
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  ProcessRecord forked = t.get(30, 300);
  EXPECT_TRUE(forked.forked);
  EXPECT_EQ(forked.cmdline, "python3 train.py");
  EXPECT_EQ(forked.rank, 1);

  t.table.from_agent(
      identity(30, 20, 300, false, "/bin/sh -c nvidia-smi", 5, 0, common::RankSource::kSlurm));
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(t.table.size(), 1u);
  EXPECT_TRUE(r.agent);
  EXPECT_FALSE(r.forked);
  EXPECT_EQ(r.cmdline, "/bin/sh -c nvidia-smi");
  EXPECT_EQ(r.argv0, "/bin/sh");
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.rank_source, common::RankSource::kSlurm);
  EXPECT_EQ(r.ppid, 20);

  // A forked identity that arrives after (an out-of-order read) changes nothing.
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  r = t.get(30, 300);
  EXPECT_FALSE(r.forked);
  EXPECT_EQ(r.cmdline, "/bin/sh -c nvidia-smi");
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.rank_source, common::RankSource::kSlurm);
}

TEST(ProcessTable, ExecFirstThenForkedIdentityIsIgnored) {
  Table t;
  t.table.from_agent(identity(30, 20, 300, false, "/bin/sh -c true"));
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  ProcessRecord r = t.get(30, 300);
  EXPECT_FALSE(r.forked);
  EXPECT_EQ(r.cmdline, "/bin/sh -c true");
  EXPECT_FALSE(r.rank.has_value());
  EXPECT_EQ(r.rank_source, common::RankSource::kNone);
}

TEST(ProcessTable, ExecWithoutRankClearsTheForkedRank) {
  // The exec'd program's environment has no rank (e.g. it was started with a clean env): none
  // of the fork's rank fields may survive.
  Table t;
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  t.table.from_agent(identity(30, 20, 300, false, "/usr/bin/env -i ./tool"));
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(r.cmdline, "/usr/bin/env -i ./tool");
  EXPECT_FALSE(r.rank.has_value());
  EXPECT_EQ(r.rank_source, common::RankSource::kNone);
  EXPECT_FALSE(r.local_rank.has_value());
  EXPECT_FALSE(r.world_size.has_value());
  EXPECT_FALSE(r.node_rank.has_value());
}

TEST(ProcessTable, ExecWithPartialRankDoesNotMixInTheForkedFields) {
  // The exec has a rank but no local rank: the fork's local rank must not be kept with it.
  Table t;
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  AgentIdentity exec =
      identity(30, 20, 300, false, "./mpi_tool", 7, -1, common::RankSource::kOpenMpi);
  exec.world_size = -1;
  exec.node_rank = -1;
  t.table.from_agent(exec);
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(r.rank, 7);
  EXPECT_EQ(r.rank_source, common::RankSource::kOpenMpi);
  EXPECT_FALSE(r.local_rank.has_value());
  EXPECT_FALSE(r.world_size.has_value());
  EXPECT_FALSE(r.node_rank.has_value());
}

// Where stacks begin (start_stack): a parent's, which its forks share, and a program's own.
constexpr uint64_t kParentStack = 0x7ffd0000;
constexpr uint64_t kOwnStack = 0x7ffe0000;

TEST(ProcessTable, AForkThatExecsWithoutTheAgentIsReadAgain) {
  // A rank's fork, told by its agent, execs a program the agent is not in (a static binary).
  Table t;
  EXPECT_TRUE(t.table.seen_alive(20, 10, 200, 1, kParentStack));
  t.table.set_details(20, 200, "python3", "python3 train.py", torch_env(1));
  t.table.from_agent(
      identity(30, 20, 300, true, "python3 train.py", 1, 1, common::RankSource::kTorch));
  t.table.worker_started(30, 300, 0);
  EXPECT_TRUE(t.table.seen_alive(30, 20, 300, 1, kParentStack));
  t.table.set_details(30, 300, "python3", "python3 train.py", torch_env(1));
  EXPECT_FALSE(t.table.seen_alive(30, 20, 300, 2, kParentStack)) << "a fork, as it was";
  EXPECT_EQ(t.get(30, 300).worker_id, 0);

  EXPECT_TRUE(t.table.seen_alive(30, 20, 300, 3, kOwnStack)) << "its exec";
  t.table.set_details(30, 300, "./tool", "./tool --fast", common::RankEnv{});
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(r.cmdline, "./tool --fast");
  EXPECT_EQ(r.argv0, "./tool");
  EXPECT_FALSE(r.agent);
  EXPECT_FALSE(r.forked);
  EXPECT_FALSE(r.rank.has_value());
  EXPECT_EQ(r.rank_source, common::RankSource::kNone);
  EXPECT_FALSE(r.worker_id.has_value());
  EXPECT_FALSE(t.table.seen_alive(30, 20, 300, 4, kOwnStack));
  EXPECT_TRUE(t.table.live_agent_pids(true).empty()) << "no stack requests to the tool";
}

TEST(ProcessTable, AForkSeenFirstAfterItsExecWithoutTheAgentIsItsNewProgram) {
  // The agent told the fork; the exec went to another run (a nested traindoc's job).
  Table t;
  t.table.seen_alive(20, 10, 200, 1, kParentStack);
  t.table.from_agent(identity(30, 20, 300, true, "traindoc run -- python3 train.py"));
  EXPECT_TRUE(t.table.seen_alive(30, 20, 300, 1, kOwnStack));
  t.table.set_details(30, 300, "python3", "python3 train.py", common::RankEnv{});
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(r.cmdline, "python3 train.py");
  EXPECT_FALSE(r.agent);
  EXPECT_FALSE(r.forked);
}

TEST(ProcessTable, AForkToldAfterTheWalkSawItsExecIsIgnored) {
  // The same, with the fork's registration read after the walk.
  Table t;
  t.table.seen_alive(20, 10, 200, 1, kParentStack);
  EXPECT_TRUE(t.table.seen_alive(30, 20, 300, 1, kOwnStack));
  t.table.set_details(30, 300, "python3", "python3 train.py", common::RankEnv{});
  t.table.from_agent(identity(30, 20, 300, true, "traindoc run -- python3 train.py", 0, 0,
                              common::RankSource::kTorch));
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(r.cmdline, "python3 train.py");
  EXPECT_FALSE(r.agent);
  EXPECT_FALSE(r.forked);
  EXPECT_FALSE(r.rank.has_value());
}

TEST(ProcessTable, AForkSeenBeforeItsExecTakesWhatItsAgentThenTells) {
  // The walk reads torchrun's fork before it execs the rank (its parent's command line and
  // environment, with srun's rank); the rank's agent registers then.
  Table t;
  t.table.seen_alive(20, 10, 200, 1, kParentStack);
  common::RankEnv slurm;
  slurm.source = common::RankSource::kSlurm;
  slurm.rank = 3;
  t.table.set_details(20, 200, "python3", "python3 -m torch.distributed.run train.py", slurm);
  EXPECT_TRUE(t.table.seen_alive(30, 20, 300, 1, kParentStack));
  t.table.set_details(30, 300, "python3", "python3 -m torch.distributed.run train.py", slurm);
  t.table.from_agent(
      identity(30, 20, 300, false, "python3 train.py", 1, 1, common::RankSource::kTorch));
  ProcessRecord r = t.get(30, 300);
  EXPECT_EQ(r.cmdline, "python3 train.py");
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.rank_source, common::RankSource::kTorch);
  EXPECT_TRUE(r.agent);
  EXPECT_FALSE(r.forked);
  EXPECT_TRUE(t.table.seen_alive(30, 20, 300, 2, kOwnStack)) << "the new program's /proc";
  t.table.set_details(30, 300, "python3", "python3 train.py --lr 0.1", torch_env(1));
  EXPECT_FALSE(t.table.seen_alive(30, 20, 300, 3, kOwnStack));
  EXPECT_EQ(t.get(30, 300).rank, 1);
  EXPECT_EQ(t.get(30, 300).cmdline, "python3 train.py --lr 0.1");
}

TEST(ProcessTable, EndedFromWaitStatus) {
  Table t;
  for (int pid : {40, 41, 42}) t.table.seen_alive(pid, 1, static_cast<uint64_t>(pid), 1);
  t.table.ended(40, exit_status(3), EndSource::kSupervisor, 100);
  t.table.ended(41, signal_status(SIGSEGV, true), EndSource::kParent, 200);
  t.table.ended(42, signal_status(SIGKILL), EndSource::kZombie, 300);
  ProcessRecord a = t.get(40, 40);
  EXPECT_EQ(a.exit_code, 3);
  EXPECT_FALSE(a.exit_signal.has_value());
  EXPECT_FALSE(a.core_dumped);
  EXPECT_EQ(a.end_source, EndSource::kSupervisor);
  EXPECT_EQ(a.end_ns, 100);
  ProcessRecord b = t.get(41, 41);
  EXPECT_EQ(b.exit_signal, SIGSEGV);
  EXPECT_TRUE(b.core_dumped);
  EXPECT_FALSE(b.exit_code.has_value());
  EXPECT_EQ(b.end_source, EndSource::kParent);
  ProcessRecord c = t.get(42, 42);
  EXPECT_EQ(c.exit_signal, SIGKILL);
  EXPECT_FALSE(c.core_dumped);
  EXPECT_EQ(c.end_ns, 300);
  EXPECT_FALSE(t.table.is_live(40));
  EXPECT_TRUE(t.table.live_pids().empty());
}

TEST(ProcessTable, ExactEndBeatsZombieBeatsVanished) {
  Table t;
  t.table.seen_alive(50, 1, 500, 1);
  t.table.sweep({}, 10);
  t.table.sweep({}, 20);
  EXPECT_EQ(t.get(50, 500).end_source, EndSource::kVanished);
  EXPECT_EQ(t.get(50, 500).end_ns, 20);

  t.table.ended(50, signal_status(SIGKILL), EndSource::kZombie, 15);
  ProcessRecord r = t.get(50, 500);
  EXPECT_EQ(r.end_source, EndSource::kZombie);
  EXPECT_EQ(r.exit_signal, SIGKILL);

  t.table.ended(50, exit_status(0), EndSource::kParent, 12);
  r = t.get(50, 500);
  EXPECT_EQ(r.end_source, EndSource::kParent);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.exit_signal.has_value());
  EXPECT_EQ(r.end_ns, 12);  // an exact source's time replaces an estimate
}

TEST(ProcessTable, LessExactLaterSourceDoesNotOverwrite) {
  Table t;
  t.table.seen_alive(60, 1, 600, 1);
  t.table.ended(60, signal_status(SIGSEGV, true), EndSource::kSupervisor, 100);
  t.table.ended(60, exit_status(1), EndSource::kZombie, 200);
  t.table.ended(60, exit_status(2), EndSource::kAgentExit, 300);
  t.table.ended(60, exit_status(3), EndSource::kParent, 400);  // as exact: the first stays
  t.table.sweep({}, 500);
  t.table.sweep({}, 600);
  ProcessRecord r = t.get(60, 600);
  EXPECT_EQ(r.end_source, EndSource::kSupervisor);
  EXPECT_EQ(r.exit_signal, SIGSEGV);
  EXPECT_TRUE(r.core_dumped);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.end_ns, 100);

  t.table.seen_alive(61, 1, 610, 1);
  t.table.ended(61, exit_status(4), EndSource::kZombie, 100);
  t.table.ended(61, exit_status(9), EndSource::kZombie, 200);
  t.table.ended(61, exit_status(9), EndSource::kAgentExit, 300);
  r = t.get(61, 610);
  EXPECT_EQ(r.end_source, EndSource::kZombie);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.end_ns, 100);
}

TEST(ProcessTable, ZombieKeepsItsTimeWhenTheParentReapsLater) {
  // A launcher may reap its ranks seconds after they died: the zombie's sighting is closer to
  // the death, the reap gives the exact status.
  Table t;
  t.table.seen_alive(62, 1, 620, 1);
  t.table.ended(62, exit_status(1), EndSource::kZombie, 100);
  t.table.ended(62, exit_status(1), EndSource::kSupervisor, 250);
  ProcessRecord r = t.get(62, 620);
  EXPECT_EQ(r.end_source, EndSource::kSupervisor);
  EXPECT_EQ(r.end_ns, 100);
}

TEST(ProcessTable, EndedBeforeAnySighting) {
  // A short-lived child reaped by its parent between two walks.
  Table t;
  t.table.ended(70, exit_status(0), EndSource::kParent, 100);
  EXPECT_EQ(t.table.size(), 1u);
  ProcessRecord r = t.get(70, 0);
  EXPECT_EQ(r.pid, 70);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.end_source, EndSource::kParent);
  EXPECT_EQ(r.ppid, 0);
  EXPECT_FALSE(t.table.is_live(70));

  // Its reaper told: its parent.
  t.table.ended(71, exit_status(1), EndSource::kParent, 100, 20);
  EXPECT_EQ(t.get(71, 0).ppid, 20);
}

TEST(ProcessTable, SweepMarksVanishedOnlyAfterTwoMissingWalks) {
  Table t;
  t.table.seen_alive(80, 1, 800, 1);
  t.table.seen_alive(81, 1, 810, 1);
  t.table.sweep({80, 81}, 10);
  t.refresh();
  t.table.sweep({81}, 20);  // 80 missing once
  EXPECT_TRUE(t.table.take_changed().empty());
  EXPECT_TRUE(t.table.is_live(80));
  t.table.sweep({81}, 30);  // twice
  std::vector<ProcessRecord> changed = t.table.take_changed();
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].pid, 80);
  EXPECT_EQ(changed[0].end_source, EndSource::kVanished);
  EXPECT_EQ(changed[0].end_ns, 30);
  EXPECT_FALSE(changed[0].exit_code.has_value());
  EXPECT_FALSE(changed[0].exit_signal.has_value());
  EXPECT_FALSE(t.table.is_live(80));
  EXPECT_TRUE(t.table.is_live(81));
  EXPECT_EQ(t.table.live_pids(), std::vector<int>{81});
}

TEST(ProcessTable, ASightingBetweenMissesResetsTheCount) {
  Table t;
  t.table.seen_alive(82, 1, 820, 1);
  t.table.sweep({}, 10);
  t.table.seen_alive(82, 1, 820, 15);
  t.table.sweep({82}, 20);
  t.table.sweep({}, 30);  // missing once since the sighting
  EXPECT_TRUE(t.table.is_live(82));
  t.table.sweep({}, 40);
  EXPECT_FALSE(t.table.is_live(82));
  EXPECT_EQ(t.get(82, 820).end_ns, 40);
}

TEST(ProcessTable, FoundInAWalkResetsTheCountToo) {
  // The walk puts a pid in `alive` even when sampling it failed (and seen_alive was not called):
  // missed, found, missed is not two missing walks in a row.
  Table t;
  t.table.seen_alive(85, 1, 850, 1);
  t.table.sweep({}, 10);
  t.table.sweep({85}, 20);
  t.table.sweep({}, 30);
  t.table.sweep({}, 40);
  EXPECT_FALSE(t.table.is_live(85));
}

TEST(ProcessTable, SweepLeavesEndedProcessesAlone) {
  Table t;
  t.table.seen_alive(83, 1, 830, 1);
  t.table.ended(83, exit_status(2), EndSource::kSupervisor, 5);
  t.refresh();
  t.table.sweep({}, 10);
  t.table.sweep({}, 20);
  t.table.sweep({}, 30);
  EXPECT_TRUE(t.table.take_changed().empty());
}

TEST(ProcessTable, ParentReapAfterOneMissedWalkWins) {
  // The reason for waiting a walk: the parent's reap record arrives before the second sweep.
  Table t;
  t.table.seen_alive(84, 1, 840, 1);
  t.table.sweep({}, 10);
  t.table.ended(84, signal_status(SIGABRT, true), EndSource::kParent, 12);
  t.table.sweep({}, 20);
  ProcessRecord r = t.get(84, 840);
  EXPECT_EQ(r.end_source, EndSource::kParent);
  EXPECT_EQ(r.exit_signal, SIGABRT);
  EXPECT_EQ(r.end_ns, 12);
}

TEST(ProcessTable, PidReuseCreatesANewRecordAndEndsTheOld) {
  Table t;
  EXPECT_TRUE(t.table.seen_alive(90, 1, 900, 1));
  t.table.set_details(90, 900, "python3", "python3 train.py", torch_env(0));
  t.refresh();
  // The old process was never seen to end; its pid now belongs to a new one.
  EXPECT_TRUE(t.table.seen_alive(90, 5, 950, 77));
  EXPECT_EQ(t.table.size(), 2u);
  std::vector<ProcessRecord> changed = t.table.take_changed();
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[0].start_ticks, 900u);
  EXPECT_EQ(changed[0].end_source, EndSource::kVanished);
  EXPECT_EQ(changed[0].end_ns, 77);
  EXPECT_EQ(changed[0].cmdline, "python3 train.py");
  EXPECT_EQ(changed[1].start_ticks, 950u);
  EXPECT_EQ(changed[1].ppid, 5);
  EXPECT_EQ(changed[1].start_ns, 77);
  EXPECT_EQ(changed[1].end_source, EndSource::kNone);
  EXPECT_EQ(changed[1].cmdline, "");  // nothing inherited from the old process
  EXPECT_FALSE(changed[1].rank.has_value());
  EXPECT_TRUE(t.table.is_live(90));

  // Ends now go to the new process.
  t.table.ended(90, exit_status(7), EndSource::kSupervisor, 99);
  changed = t.table.take_changed();
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].start_ticks, 950u);
  EXPECT_EQ(changed[0].exit_code, 7);
}

TEST(ProcessTable, PidReuseKeepsTheOldEnd) {
  Table t;
  t.table.seen_alive(91, 1, 910, 1);
  t.table.ended(91, exit_status(1), EndSource::kSupervisor, 50);
  t.refresh();
  EXPECT_TRUE(t.table.seen_alive(91, 1, 990, 60));
  std::vector<ProcessRecord> changed = t.table.take_changed();
  ASSERT_EQ(changed.size(), 1u);  // the old record did not change
  EXPECT_EQ(changed[0].start_ticks, 990u);
  ProcessRecord old = t.get(91, 910);
  EXPECT_EQ(old.end_source, EndSource::kSupervisor);
  EXPECT_EQ(old.end_ns, 50);
  EXPECT_EQ(old.exit_code, 1);
}

TEST(ProcessTable, PidReuseAfterAnEndSeenBeforeAnySighting) {
  // A process reaped before any walk saw it (no start ticks known), then its pid is reused: the
  // new process is not the ended one.
  Table t;
  t.table.ended(92, exit_status(0), EndSource::kParent, 50);
  t.refresh();
  bool fresh = t.table.seen_alive(92, 1, 999, 60);
  EXPECT_TRUE(fresh);
  EXPECT_TRUE(t.table.is_live(92));
  EXPECT_EQ(t.table.size(), 2u);
}

TEST(ProcessTable, AgentIdentityReadAfterTheReapIsTheReapedProcess) {
  // A job shorter than a tick: the supervisor reaps it before it reads the agent's registration,
  // which says it started before that end. One process, with its command line and its exit.
  Table t;
  t.table.ended(94, exit_status(1), EndSource::kSupervisor, 2'000'000);
  t.table.from_agent(identity(94, 1, 940, false, "python3 -c pass"));
  EXPECT_EQ(t.table.size(), 1u);
  ProcessRecord r = t.get(94, 940);
  EXPECT_EQ(r.cmdline, "python3 -c pass");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.start_ns, 1'000'094);
  EXPECT_EQ(r.end_ns, 2'000'000);
}

TEST(ProcessTable, AgentIdentityOfAReusedPid) {
  Table t;
  t.table.from_agent(identity(93, 1, 930, false, "python3 a.py"));
  t.table.from_agent(identity(93, 1, 931, false, "python3 b.py"));
  EXPECT_EQ(t.table.size(), 2u);
  EXPECT_EQ(t.get(93, 930).end_source, EndSource::kVanished);
  EXPECT_EQ(t.get(93, 930).cmdline, "python3 a.py");
  EXPECT_EQ(t.get(93, 931).cmdline, "python3 b.py");
  EXPECT_EQ(t.get(93, 931).end_source, EndSource::kNone);
}

}  // namespace
}  // namespace traindoc::supervisor
