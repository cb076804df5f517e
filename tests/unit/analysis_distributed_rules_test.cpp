// Tests of the diagnosis of distributed failures from what the ranks printed: output tied to
// the rank that printed it (torchrun's prefixes), the same failure seen by two ranks as one
// finding, a peer's departure as the cause of "Connection closed by peer", and the launcher's
// teardown as a consequence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <map>
#include <utility>

#include "analysis/diagnosis.h"
#include "analysis/process_texts.h"
#include "analysis/rules.h"
#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture

using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;

const std::string kMismatch0 =
    "[default0]:RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running "
    "collective: CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], "
    "TensorDtypes=Float), but Rank 1 is running collective: CollectiveFingerPrint(OpType=REDUCE, "
    "TensorShape=[20, 10], TensorDtypes=Float).";
const std::string kMismatch1 =
    "[default1]:RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
    "collective: CollectiveFingerPrint(OpType=REDUCE, TensorShape=[20, 10], "
    "TensorDtypes=Float), but Rank 0 is running collective: "
    "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20, 10], TensorDtypes=Float).";
const std::string kClosed =
    "[default0]:RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
    "[127.0.0.1]:61103";

// The launcher's own error after its ranks failed, unprefixed.
void launcher_error(Evidence& e, double seconds, uint64_t number) {
  e.log_lines.push_back(stderr_line(seconds, number, "Traceback (most recent call last):"));
  e.log_lines.push_back(stderr_line(
      seconds, number + 1,
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/run.py\", line 766, in <module>"));
  e.log_lines.push_back(stderr_line(
      seconds, number + 2, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "));
  exited(e, kLauncher, seconds + 0.1, 1);
}

const Finding* find_kind(const Diagnosis& d, FindingKind kind) {
  for (const Finding& f : d.findings) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

TEST(DistributedRules, BothRanksReportingOneMismatchGiveOneFinding) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(5.0, 10, "[default0]:Traceback (most recent call last):"),
      stderr_line(5.0, 11, "[default1]:Traceback (most recent call last):"),
      stderr_line(5.0, 12, "[default0]:  File \"/home/user/proj/train.py\", line 20, in <module>"),
      stderr_line(5.0, 13, "[default1]:  File \"/home/user/proj/train.py\", line 22, in <module>"),
      stderr_line(5.0, 14, kMismatch0),
      stderr_line(5.0, 15, kMismatch1),
  };
  exited(e, kRank0, 5.2, 1);
  exited(e, kRank1, 5.3, 1);
  launcher_error(e, 6.0, 20);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  const Finding& root = d.findings[0];
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMismatch);
  EXPECT_THAT(root.ranks, ElementsAre(0, 1));
  EXPECT_THAT(root.pids, ElementsAre(kRank0, kRank1));
  EXPECT_THAT(root.title, HasSubstr("rank 0 ALLREDUCE [20, 10] Float, rank 1 REDUCE"));
  EXPECT_THAT(root.evidence, testing::Contains("at /home/user/proj/train.py:20 in <module>"));
  // The unprefixed traceback is the launcher's, not a rank's.
  EXPECT_EQ(d.findings[1].kind, FindingKind::kLauncherExit);
  EXPECT_THAT(d.findings[1].title, HasSubstr("stopped the job after rank 0, rank 1 failed"));
}

TEST(DistributedRules, APeerThatExitedNormallyFirstIsTheCause) {
  // H08 (c): rank 1 skipped the all_reduce and exited 0; its end was seen a second late.
  Evidence e = torchrun_job();
  exited(e, kRank1, 6.0, 0);
  e.log_lines = {
      stderr_line(5.1, 10, "[default0]:Traceback (most recent call last):"),
      stderr_line(5.1, 11, "[default0]:  File \"/home/user/proj/train.py\", line 18, in <module>"),
      stderr_line(5.1, 12, kClosed),
  };
  exited(e, kRank0, 5.3, 1);
  launcher_error(e, 7.0, 20);
  Diagnosis d = diagnose(e);
  ASSERT_GE(d.findings.size(), 2u);
  const Finding& root = d.findings[0];
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMissing);
  EXPECT_THAT(root.ranks, ElementsAre(1));
  EXPECT_THAT(root.pids, ElementsAre(kRank1));
  EXPECT_THAT(root.title, HasSubstr("rank 1 (pid 1011) finished (exit code 0) while rank 0"));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kPeerExited);
  EXPECT_THAT(d.findings[1].title, HasSubstr("lost its connection to rank 1 (pid 1011)"));
  EXPECT_THAT(d.findings[1].ranks, ElementsAre(0, 1));
}

// Rank 1 finished and left; rank 0 then lost its connection to it. Each ran `counts` steps of
// each kind (rank 0's, rank 1's).
Evidence left_after_steps(std::map<store::StepKind, std::pair<int64_t, int64_t>> counts) {
  Evidence e = torchrun_job();
  exited(e, kRank1, 6.0, 0);
  e.log_lines = {stderr_line(5.1, 12, kClosed)};
  exited(e, kRank0, 5.3, 1);
  for (const auto& [kind, count] : counts) {
    e.steps.push_back({at(4), kRank0, 500'100, kind, count.first});
    e.steps.push_back({at(4), kRank1, 500'101, kind, count.second});
  }
  return e;
}

TEST(DistributedRules, APeerThatRanFewerStepsIsUnevenInputs) {
  // H11: rank 1 skipped one backward, finished its loop and left; rank 0 began a 4th backward.
  Diagnosis d = diagnose(left_after_steps(
      {{store::StepKind::kBackward, {4, 3}}, {store::StepKind::kOptimizer, {3, 3}}}));
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kUnevenInputs);
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(1));
  EXPECT_THAT(d.findings[0].evidence, testing::Contains("backward steps: rank 1 ran 3, rank 0 4"));
}

TEST(DistributedRules, ForwardsOnlyOneRankRanThroughDdpAreNotUnevenInputs) {
  // Rank 0 evaluated through the DDP model after the last step; rank 1 left, as it should.
  Diagnosis d = diagnose(left_after_steps({{store::StepKind::kBackward, {6, 6}},
                                           {store::StepKind::kOptimizer, {6, 6}},
                                           {store::StepKind::kDdpForward, {10, 6}}}));
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kCollectiveMissing);
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(0));
  EXPECT_THAT(d.findings[0].title,
              HasSubstr("rank 0 (pid 1010) ran forwards through the DDP model that rank 1"));
  EXPECT_THAT(d.findings[0].evidence,
              testing::Contains("ddp-forward steps: rank 1 ran 6, rank 0 10"));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("model.module"));
  EXPECT_EQ(find_kind(d, FindingKind::kUnevenInputs), nullptr);
}

TEST(DistributedRules, APeerThatCrashedIsTheCauseThroughItsOwnFinding) {
  Evidence e = torchrun_job();
  killed(e, kRank1, 5.0, SIGKILL);
  e.log_lines = {stderr_line(5.4, 12, kClosed)};
  exited(e, kRank0, 5.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kKilledExternally);
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kRank1));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kPeerExited);
  EXPECT_THAT(d.findings[1].title, HasSubstr("which had died of SIGKILL before"));
  EXPECT_EQ(find_kind(d, FindingKind::kCollectiveMissing), nullptr);
}

TEST(DistributedRules, APeerWhoseExceptionCamePrintedAfterTheLossIsStillTheCause) {
  // Rank 1 raised; rank 0's "Connection closed" passed through torchrun first, in the same tick.
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(1.6, 10, "[default0]:Traceback (most recent call last):"),
      stderr_line(1.6, 11, "[default0]:  File \"/home/user/proj/train.py\", line 10, in <module>"),
      stderr_line(1.6, 12, kClosed),
      stderr_line(1.6, 13, "[default1]:Traceback (most recent call last):"),
      stderr_line(1.6, 14, "[default1]:  File \"/home/user/proj/train.py\", line 9, in <module>"),
      stderr_line(1.6, 15, "[default1]:ValueError: loss is nan at step 2"),
  };
  exited(e, kRank1, 1.7, 1);
  exited(e, kRank0, 1.7, 1);
  launcher_error(e, 5.8, 20);
  Diagnosis d = diagnose(e);
  ASSERT_GE(d.findings.size(), 2u);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_THAT(d.findings[0].title, HasSubstr("rank 1 (pid 1011) raised ValueError"));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kPeerExited);
  EXPECT_THAT(d.findings[0].consequences, testing::Contains(1u));
}

TEST(DistributedRules, ASpawnedRanksExceptionPrintedByItsParentIsItsOwn) {
  // torch.multiprocessing.spawn: its parent prints rank 1's traceback after rank 1 ended and
  // rank 0 was stopped; the ranks are known from init_process_group.
  Evidence e = torchrun_job();
  e.processes.resize(3);
  e.processes[0].cmdline = e.processes[0].argv0 = "/usr/bin/python3";
  e.processes[0].cmdline += " train.py";
  for (ProcessRecord& p : e.processes) {
    if (p.rank) p.rank_source = common::RankSource::kProcessGroup;
  }
  exited(e, kRank1, 2.7, 1);
  killed(e, kRank0, 2.75, SIGTERM);
  const std::vector<std::string> text = {
      "Traceback (most recent call last):",
      "  File \"/home/user/proj/train.py\", line 11, in <module>",
      "    mp.spawn(run, args=(2,), nprocs=2)",
      "torch.multiprocessing.spawn.ProcessRaisedException: ",
      "",
      "-- Process 1 terminated with the following error:",
      "Traceback (most recent call last):",
      "  File \"/home/user/proj/train.py\", line 8, in run",
      "    raise RuntimeError(\"bad batch on rank 1\")",
      "RuntimeError: bad batch on rank 1",
  };
  for (size_t i = 0; i < text.size(); ++i) e.log_lines.push_back(stderr_line(2.8, i + 1, text[i]));
  exited(e, kLauncher, 2.9, 1);
  Diagnosis d = diagnose(e);
  ASSERT_GE(d.findings.size(), 2u);
  const Finding& root = d.findings[0];
  EXPECT_EQ(root.kind, FindingKind::kPythonException);
  EXPECT_EQ(root.title, "rank 1 (pid 1011) raised RuntimeError: bad batch on rank 1");
  EXPECT_THAT(root.evidence, testing::Contains("at /home/user/proj/train.py:8 in run: raise "
                                               "RuntimeError(\"bad batch on rank 1\")"));
  const Finding* launcher = find_kind(d, FindingKind::kLauncherExit);
  ASSERT_NE(launcher, nullptr);
  EXPECT_THAT(launcher->pids, ElementsAre(kLauncher));
  // Rank 0 was stopped by the launcher's teardown: it did not fail.
  EXPECT_EQ(launcher->title, "launcher (pid 1000) stopped the job after rank 1 failed");
  const Finding* stopped = find_kind(d, FindingKind::kKilledExternally);
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->severity, Severity::kInfo);
  EXPECT_EQ(stopped->title, "rank 0 (pid 1010) was stopped by SIGTERM from its launcher");

  // Rank 0 failed too, before the parent stopped it: spawn printed rank 1's exception only.
  process(e, kRank0).exit_signal.reset();
  exited(e, kRank0, 2.6, 1);
  d = diagnose(e);
  ASSERT_GE(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].title, "rank 1 (pid 1011) raised RuntimeError: bad batch on rank 1");
  const Finding* echo = find_kind(d, FindingKind::kNonzeroExit);
  ASSERT_NE(echo, nullptr);
  EXPECT_EQ(echo->severity, Severity::kWarning);
  EXPECT_EQ(echo->title,
            "rank 0 (pid 1010) exited with code 1 as well: its exception went to "
            "torch.multiprocessing.spawn, which printed only the exception of rank 1 (pid 1011)");

  // `rank = world_size - 1 - index`: "Process 1" is spawn's index 1 (its local rank), rank 0.
  process(e, kRank0).rank = 1;
  process(e, kRank1).rank = 0;
  EXPECT_EQ(diagnose(e).findings.at(0).title,
            "rank 0 (pid 1011) raised RuntimeError: bad batch on rank 1");
}

// The traceback of init_process_group that timed out (PyTorch 1.13, gloo), on rank `prefix`.
std::vector<std::string> init_timeout(const std::string& prefix, const std::string& error) {
  const std::string c10d = "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py";
  return {
      prefix + "Traceback (most recent call last):",
      prefix + "  File \"/home/user/proj/train.py\", line 3, in <module>",
      prefix + "    dist.init_process_group(\"gloo\", rank=rank, world_size=4)",
      prefix + "  File \"" + c10d + "\", line 761, in init_process_group",
      prefix + "    default_pg = _new_process_group_helper(",
      prefix + "  File \"" + c10d + "\", line 862, in _new_process_group_helper",
      prefix + "    pg = ProcessGroupGloo(prefix_store, group_rank, group_size, timeout=timeout)",
      prefix + error};
}

// A rank that could not connect to the store: nothing listened at the address it was given,
// which is no store key left unwritten.
TEST(DistributedRules, AStoreNothingListensAtIsNamedWithItsAddress) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 20.1, number,
              {"[default1]:[E1127 17:13:41.211609 19889 socket.cpp:860] [c10d] The client socket "
               "has timed out after 8s while trying to connect to (10.0.0.7, 29500)."});
  exited(e, kRank1, 20.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kRendezvousTimeout);
  EXPECT_EQ(d.findings[0].title,
            "rank 1 (pid 1011): could not connect to the store at 10.0.0.7:29500 in 8000 ms");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("MASTER_ADDR and MASTER_PORT"));
  EXPECT_THAT(d.findings[0].fix, testing::Not(HasSubstr("store key")));
}

// The code passed init_process_group a world size or rank that the launch does not match: the
// ranks time out waiting for ranks never started, or gloo refuses a rank beyond the world. The
// mismatch is the root cause, with each call beside what the launcher set.
TEST(DistributedRules, InitProcessGroupArgumentsThatContradictTheLaunchAreTheCause) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 20.1, number, init_timeout("[default0]:", "RuntimeError: Socket Timeout"));
  print_lines(e, 20.1, number, init_timeout("[default1]:", "RuntimeError: Socket Timeout"));
  exited(e, kRank0, 20.2, 1);
  exited(e, kRank1, 20.2, 1);
  exited(e, kLauncher, 20.5, 1);
  // Without the hook's record of the call: a rank that never joined, in general words.
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kRendezvousTimeout);
  EXPECT_EQ(d.findings[0].title,
            "rank 0 (pid 1010): timed out in init_process_group waiting for the other ranks to "
            "connect");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("--nnodes"));

  for (int pid : {kRank0, kRank1}) {
    process(e, pid).init_rank = process(e, pid).rank;
    process(e, pid).init_world_size = 4;
  }
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings[0];
  EXPECT_EQ(root.kind, FindingKind::kRendezvousTimeout);
  EXPECT_EQ(root.title,
            "rank 0 (pid 1010): init_process_group was asked for a world of 4 ranks, but the "
            "launcher set WORLD_SIZE=2");
  EXPECT_THAT(root.evidence,
              testing::IsSupersetOf(
                  {"timed out in init_process_group waiting for the other ranks to connect",
                   "rank 0 (pid 1010) called init_process_group(rank=0, world_size=4)",
                   "rank 1 (pid 1011) called init_process_group(rank=1, world_size=4)"}));
  EXPECT_EQ(root.confidence, 0.8);
  EXPECT_THAT(root.fix, HasSubstr("leave out rank= and world_size="));
  EXPECT_THAT(root.fix, HasSubstr("int(os.environ[\"WORLD_SIZE\"])"));

  // Every rank passed rank=0: the world's size is right, and one rank is claimed twice.
  for (int pid : {kRank0, kRank1}) {
    process(e, pid).init_rank = 0;
    process(e, pid).init_world_size.reset();
  }
  d = diagnose(e);
  EXPECT_EQ(d.findings.at(0).title,
            "rank 0 (pid 1010): more than one process passed rank=0 to init_process_group");
  EXPECT_THAT(d.findings[0].evidence,
              testing::IsSupersetOf({"rank 0 (pid 1010) called init_process_group(rank=0)",
                                     "rank 1 (pid 1011) called init_process_group(rank=0)"}));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("its own rank, never a constant: "
                                           "int(os.environ[\"RANK\"])"));
  // A rank that ended before the other started (a launcher's restart) claimed nothing twice.
  process(e, kRank1).start_ns = at(20.3);
  d = diagnose(e);
  EXPECT_EQ(d.findings.at(0).title,
            "rank 0 (pid 1010): timed out in init_process_group waiting for the other ranks to "
            "connect");
  // Rank 1's own wait is told by what its call contradicts: torchrun's RANK.
  EXPECT_THAT(d.findings[0].evidence,
              testing::Contains("the same failure, also: rank 1 (pid 1011): init_process_group "
                                "was given rank=0, but the launcher set RANK=1"));

  // world_size=1 under two ranks: gloo refuses rank 1, and rank 0 goes on alone.
  e = torchrun_job();
  number = 1;
  print_lines(e, 1.5, number,
              init_timeout("[default1]:",
                           "RuntimeError: [enforce fail at ./gloo/context.cc:27] rank < size. 1 "
                           "vs 1"));
  exited(e, kRank1, 1.6, 1);
  exited(e, kRank0, 1.7, 0);
  exited(e, kLauncher, 2.0, 1);
  for (int pid : {kRank0, kRank1}) {
    process(e, pid).init_rank = process(e, pid).rank;
    process(e, pid).init_world_size = 1;
  }
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_EQ(d.findings[0].title,
            "rank 1 (pid 1011): init_process_group was asked for a world of 1 rank, but the "
            "launcher set WORLD_SIZE=2");
  EXPECT_THAT(d.findings[0].evidence,
              testing::Contains(HasSubstr("RuntimeError: [enforce fail at "
                                          "./gloo/context.cc:27] rank < size. 1 vs 1")));
  // Another exception of init_process_group is not the mismatch's to explain.
  e.log_lines.back().text =
      "[default1]:RuntimeError: trying to initialize the default process "
      "group twice!";
  d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings[0].title, HasSubstr("raised RuntimeError: trying to initialize"));
}

// A rank's DataLoader worker aborted at exit, in its teardown, before spawn's parent printed the
// rank's exception: the exception leads, and the worker's crash is a warning of its own; a
// forkserver's worker too.
TEST(DistributedRules, AWorkersCrashInItsFailedRanksTeardownIsNoRootCause) {
  for (bool forkserver : {false, true}) {
    Evidence e = torchrun_job();
    if (forkserver) through_forkserver(e, kWorker1);
    uint64_t number = 1;
    print_lines(e, 4.0, number,
                {"Traceback (most recent call last):",
                 "  File \"/home/user/proj/train.py\", line 24, in run",
                 "RuntimeError: bad batch on rank 1"},
                "[default1]:");
    e.events.push_back({at(3.2), store::EventKind::kScriptFinished, kWorker1, ""});
    store::Crash crash;
    crash.pid = kWorker1;
    crash.start_ticks = process(e, kWorker1).start_ticks;
    crash.signo = SIGABRT;
    crash.time_ns = at(3.3);
    e.crashes = {crash};
    killed(e, kWorker1, 3.3, SIGABRT);
    exited(e, kRank1, 4.1, 1);
    exited(e, kLauncher, 4.5, 1);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    EXPECT_EQ(d.findings[0].title, "rank 1 (pid 1011) raised RuntimeError: bad batch on rank 1");
    // Without the rank's exception, the crash is the failure.
    e.log_lines.clear();
    EXPECT_THAT(diagnose(e).findings.at(0).title, HasSubstr("died of SIGABRT"));
  }
}

// A shell wrapper between torchrun and each rank (`torchrun --no-python bash run.sh`) carries
// the same variables, and is no rank: the ranks' calls are still measured against WORLD_SIZE.
// Ranks of separate worlds of one (a sweep) share no rank.
TEST(DistributedRules, InitProcessGroupArgumentsBehindAWrapperOrInWorldsOfOne) {
  Evidence e = torchrun_job();
  e.processes.resize(3);
  for (int i : {1, 2}) {
    ProcessRecord shell = e.processes[i];
    shell.pid += 100;
    shell.start_ticks -= 50;
    shell.cmdline = shell.argv0 = "/bin/bash";
    shell.cmdline += " run.sh";
    e.processes[i].ppid = shell.pid;
    e.processes[i].init_rank = e.processes[i].rank;
    e.processes[i].init_world_size = 4;
    e.processes.push_back(shell);
  }
  uint64_t number = 1;
  print_lines(e, 20.1, number, init_timeout("[default0]:", "RuntimeError: Socket Timeout"));
  exited(e, kRank0, 20.2, 1);
  exited(e, kLauncher, 20.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].title,
            "rank 0 (pid 1010): init_process_group was asked for a world of 4 ranks, but the "
            "launcher set WORLD_SIZE=2");

  // Two single-process jobs of a sweep, each rank=0 in a world of its own.
  for (int i : {1, 2}) {
    e.processes[i].init_rank = 0;
    e.processes[i].init_world_size = 1;
    e.processes[i].world_size = 1;
  }
  for (const Finding& f : diagnose(e).findings) {
    EXPECT_THAT(f.title, testing::Not(HasSubstr("more than one process"))) << f.title;
  }
}

// torch.multiprocessing.spawn(nprocs=2) with world_size=4: the world is measured against the
// processes spawn started.
TEST(DistributedRules, AWorldLargerThanSpawnStartedIsTheCause) {
  Evidence e = torchrun_job();
  e.processes.resize(3);
  e.processes[0].cmdline = e.processes[0].argv0 = "/usr/bin/python3";
  e.processes[0].cmdline += " train.py";
  for (ProcessRecord& p : e.processes) {
    if (!p.rank) continue;
    p.rank_source = common::RankSource::kSpawn;
    p.world_size.reset();
    p.init_rank = p.rank;
    p.init_world_size = 4;
  }
  uint64_t number = 1;
  print_lines(e, 20.1, number, init_timeout("", "RuntimeError: Socket Timeout"));
  exited(e, kRank0, 20.2, 1);
  killed(e, kRank1, 20.3, SIGTERM);
  exited(e, kLauncher, 20.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kRendezvousTimeout);
  EXPECT_EQ(d.findings[0].title,
            "rank 0 (pid 1010): init_process_group was asked for a world of 4 ranks, but "
            "torch.multiprocessing.spawn started 2 processes on this machine");
  EXPECT_THAT(d.findings[0].evidence,
              testing::Contains("rank 1 (pid 1011) called init_process_group(rank=1, "
                                "world_size=4)"));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("If no other machine starts the other 2 ranks, give "
                                           "mp.spawn and init_process_group one number: "
                                           "nprocs=world_size"));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("If others do, check that they started"));

  // A world smaller than spawn started is wrong wherever the others run.
  ProcessRecord third = e.processes[2];
  third.pid = 1012;
  third.rank = third.local_rank = third.init_rank = 2;
  e.processes.push_back(third);
  for (ProcessRecord& p : e.processes) {
    if (p.rank) p.init_world_size = 2;
  }
  d = diagnose(e);
  EXPECT_EQ(d.findings.at(0).title,
            "rank 0 (pid 1010): init_process_group was asked for a world of 2 ranks, but "
            "torch.multiprocessing.spawn started 3 processes");
  EXPECT_THAT(d.findings[0].fix, testing::StartsWith("Give mp.spawn and init_process_group one "
                                                     "number"));
  // A world of one each (a sweep): no mismatch.
  for (ProcessRecord& p : e.processes) {
    if (p.rank) p.init_world_size = 1;
  }
  for (const Finding& f : diagnose(e).findings) {
    EXPECT_THAT(f.title, testing::Not(HasSubstr("asked for a world"))) << f.title;
  }
  e.processes.pop_back();

  // torchrun's rank 0 ran mp.spawn itself: its processes inherited RANK and WORLD_SIZE=2, which
  // do not count their world of 4.
  for (ProcessRecord& p : e.processes) {
    if (!p.rank) continue;
    p.init_world_size = 4;
    p.rank_source = common::RankSource::kTorch;
    p.rank = 0;
    p.world_size = 2;
  }
  e.processes[0].rank_source = common::RankSource::kTorch;
  e.processes[0].rank = 0;
  e.processes[0].world_size = 2;
  for (const Finding& f : diagnose(e).findings) {
    EXPECT_THAT(f.title, testing::Not(HasSubstr("asked for a world"))) << f.title;
  }
}

TEST(DistributedRules, AScriptThatDoesNotExistIsOneFindingWithItsFix) {
  // `torchrun ... trian.py`: every rank's interpreter says so and exits 2 (real text).
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(0.8, 5,
                  "[default0]:/usr/bin/python3: can't open file '/home/user/proj/trian.py': "
                  "[Errno 2] No such file or directory"),
      stderr_line(0.8, 6,
                  "[default1]:/usr/bin/python3: can't open file '/home/user/proj/trian.py': "
                  "[Errno 2] No such file or directory"),
  };
  exited(e, kRank0, 0.8, 2);
  exited(e, kRank1, 0.8, 2);
  launcher_error(e, 5.8, 20);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  const Finding& root = d.findings[0];
  EXPECT_EQ(root.kind, FindingKind::kPythonException);
  EXPECT_THAT(root.ranks, ElementsAre(0, 1));
  EXPECT_THAT(root.fix, HasSubstr("Python could not open the script '/home/user/proj/trian.py' "
                                  "(No such file or directory), so nothing ran"));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kLauncherExit);
}

TEST(DistributedRules, AFailureTheLauncherRestartedFromIsAWarning) {
  // torchrun --max_restarts 1: rank 1 raised, torchrun stopped rank 0 and started both again,
  // and the second ranks finished.
  Evidence e = torchrun_job();
  const std::string rank = e.processes[1].cmdline;
  e.processes.push_back(ranked(proc(1030, kLauncher, 500'700, rank), 0));
  e.processes.push_back(ranked(proc(1031, kLauncher, 500'701, rank), 1));
  e.log_lines = {
      stderr_line(2.7, 5, "[default1]:Traceback (most recent call last):"),
      stderr_line(2.7, 6, "[default1]:  File \"/home/user/proj/train.py\", line 7, in <module>"),
      stderr_line(2.7, 7, "[default1]:RuntimeError: transient failure on rank 1"),
  };
  exited(e, kRank1, 2.9, 1);
  killed(e, kRank0, 3.0, SIGTERM);
  exited(e, 1030, 11.0, 0);
  exited(e, 1031, 11.0, 0);
  exited(e, kLauncher, 12.0, 0);
  e.run.exit_code = 0;
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kPythonException);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.root_cause);
  EXPECT_THAT(f.title, HasSubstr("(recovered: the launcher restarted the ranks and the job "
                                 "finished)"));
  EXPECT_THAT(f.evidence, testing::Contains("rank 1 was started again at +7.0 s (pid 1031) and "
                                            "exited with code 0"));
  // Without the good end, the failure is the root cause.
  e.run.exit_code = 1;
  exited(e, 1031, 11.0, 1);
  d = diagnose(e);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[0].severity, Severity::kError);
}

// torchrun --max_restarts 1, and the second attempt fails the same way: one failure, the
// attempts counted, and a fix that says a restart does not help; the launcher names each rank once.
TEST(DistributedRules, AFailureEachRestartRepeatedIsOneFindingWithItsAttempts) {
  Evidence e = torchrun_job();
  const std::string rank = e.processes[1].cmdline;
  e.processes.push_back(ranked(proc(1030, kLauncher, 500'700, rank), 0));
  e.processes.push_back(ranked(proc(1031, kLauncher, 500'701, rank), 1));
  uint64_t number = 5;
  for (double t : {2.7, 9.7}) {
    print_lines(e, t, number,
                {"Traceback (most recent call last):",
                 "  File \"/home/user/proj/train.py\", line 7, in <module>",
                 "ValueError: bad config value for rank 1"},
                "[default1]:");
  }
  e.log_lines.push_back(stderr_line(10.4, number++, "Traceback (most recent call last):"));
  e.log_lines.push_back(stderr_line(
      10.4, number++, "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "));
  exited(e, kRank1, 2.9, 1);
  killed(e, kRank0, 3.0, SIGTERM);
  exited(e, 1031, 9.9, 1);
  killed(e, 1030, 10.0, SIGTERM);
  exited(e, kLauncher, 10.5, 1);
  e.run.exit_code = 1;
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_TRUE(f.root_cause);
  EXPECT_EQ(f.title,
            "rank 1 (pid 1011) raised ValueError: bad config value for rank 1 (in each of 2 "
            "attempts: the launcher restarted the ranks)");
  EXPECT_THAT(f.pids, testing::ElementsAre(kRank1, 1031));
  EXPECT_THAT(f.fix, HasSubstr("Your code raised it at /home/user/proj/train.py:7: fix it there."));
  EXPECT_THAT(f.fix, HasSubstr("restarts do not help"));
  auto launcher = std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& x) {
    return x.kind == FindingKind::kLauncherExit;
  });
  ASSERT_NE(launcher, d.findings.end());
  EXPECT_EQ(launcher->title, "launcher (pid 1000) stopped the job after rank 1 failed");
}

TEST(DistributedRules, MonitoredBarrierNamesTheMissingRank) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(4.0, 10, "[default0]:Traceback (most recent call last):"),
      stderr_line(4.0, 11,
                  "[default0]:RuntimeError: [Rank 0]: Ranks 1 failed to pass monitoredBarrier in "
                  "2000 ms"),
      stderr_line(4.0, 12, "[default0]: Original exception: "),
      stderr_line(4.0, 13,
                  "[default0]:[./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                  "2000ms for recv operation to complete"),
  };
  exited(e, kRank0, 4.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kCollectiveMissing);
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(1));
  EXPECT_THAT(d.findings[0].title,
              HasSubstr("rank 0 (pid 1010): rank 1 did not reach the monitored barrier within "
                        "2000 ms"));
}

TEST(DistributedRules, ATimeoutNamesTheRanksThatWereNotWaiting) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(9.0, 10,
                             "[default0]:RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] "
                             "Timed out waiting 5000ms for recv operation to complete")};
  exited(e, kRank0, 9.2, 1);
  e.log_lines.push_back(
      stderr_line(9.5, 11,
                  "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1011 "
                  "closing signal SIGTERM"));
  killed(e, kRank1, 9.6, SIGTERM);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kCollectiveMissing);
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(1));
  EXPECT_THAT(d.findings[0].title, HasSubstr("waited 5000 ms in a collective that a peer never "
                                             "joined (rank 1 never joined it)"));
  // Stopped by torchrun's teardown: information, not a second failure.
  EXPECT_EQ(d.findings[1].kind, FindingKind::kKilledExternally);
  EXPECT_EQ(d.findings[1].severity, Severity::kInfo);
  EXPECT_THAT(d.findings[1].title, HasSubstr("from its launcher"));
}

TEST(DistributedRules, GlooAbortOnSizesIsACollectiveMismatch) {
  // T13 without DETAIL: rank 0 aborts in gloo's size check; rank 1's lines are not its own.
  Evidence e = torchrun_job();
  store::Crash abort;
  abort.pid = kRank0;
  abort.start_ticks = 500'100;
  abort.tid = kRank0;
  abort.signo = SIGABRT;
  abort.code = -6;
  abort.sender_pid = kRank0;
  abort.time_ns = at(5.0);
  e.crashes = {abort};
  e.log_lines = {
      stderr_line(4.99, 10, "[default1]:terminate called without an active exception"),
      stderr_line(5.0, 11,
                  "[default0]:terminate called after throwing an instance of "
                  "'gloo::EnforceNotMet'"),
      stderr_line(5.0, 12,
                  "[default0]:  what():  [enforce fail at ./gloo/transport/tcp/pair.cc:510] "
                  "op.preamble.length <= op.nbytes. 20 vs 12"),
  };
  killed(e, kRank0, 5.1, SIGABRT);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings[0];
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMismatch);
  EXPECT_THAT(root.title, HasSubstr("rank 0 (pid 1010) aborted: a collective's sizes differ "
                                    "across ranks: a peer sent 20 bytes where this rank "
                                    "expected 12"));
  for (const std::string& line : root.evidence) {
    EXPECT_THAT(line, testing::Not(HasSubstr("[default1]")));
  }
}

// The older DETAIL text (PyTorch's docs): the rank's own shape is printed as a tensor, its
// values on the exception's line and its type and length on the next. The title gives what the
// line holds, and the whole shape where the text is on one line.
TEST(DistributedRules, OlderShapeCheckNamesTheRanksShape) {
  const char* exception =
      "RuntimeError: Error when verifying shape tensors for collective ALLREDUCE on rank 0. This "
      "likely indicates that input shapes into the collective are mismatched across ranks. Got "
      "shapes:  10";
  for (bool one_line : {false, true}) {
    Evidence e = torchrun_job();
    e.log_lines = {
        stderr_line(5.0, 10, "[default0]:Traceback (most recent call last):"),
        stderr_line(5.0, 11, "[default0]:  File \"/home/user/proj/train.py\", line 9, in worker"),
        stderr_line(5.0, 12, "[default0]:    work = default_pg.allreduce([tensor], opts)"),
        stderr_line(
            5.0, 13,
            std::string("[default0]:") + exception + (one_line ? " [ torch.LongTensor{1} ]" : "")),
    };
    if (!one_line)
      e.log_lines.push_back(stderr_line(5.0, 14, "[default0]:[ torch.LongTensor{1} ]"));
    exited(e, kRank0, 5.2, 1);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    EXPECT_EQ(d.findings[0].kind, FindingKind::kCollectiveMismatch);
    EXPECT_EQ(d.findings[0].title,
              std::string("rank 0 (pid 1010): input shapes of ALLREDUCE differ across ranks: "
                          "rank 0's shape ") +
                  (one_line ? "is [10]" : "begins with 10"));
  }
}

TEST(DistributedRules, LauncherThatFailedBeforeStartingAnyRank) {
  Evidence e = torchrun_job();
  e.processes.resize(1);  // torchrun alone
  e.log_lines = {
      stderr_line(2.0, 5, "Traceback (most recent call last):"),
      stderr_line(2.0, 6,
                  "  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/"
                  "multiprocessing/api.py\", line 94, in to_map"),
      stderr_line(2.0, 7, "AttributeError: 'NoneType' object has no attribute 'get'"),
  };
  exited(e, kLauncher, 2.1, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kLauncherBug);
  EXPECT_THAT(d.findings[0].title, HasSubstr("launcher (pid 1000)"));
  EXPECT_THAT(d.findings[0].fix, HasSubstr("--redirects 2 --tee 2"));
  EXPECT_THAT(d.findings[0].ranks, IsEmpty());
}

// torchrun prefixes its ranks' output: its own unprefixed banner (OMP_NUM_THREADS) is not the
// words of a rank that printed nothing and ended with os._exit(3) soon after, nor of its worker.
TEST(ProcessTexts, ALaunchersOwnLinesAreNotThoseOfARankItPrefixes) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 0.8, number,
              {"*****************************************",
               "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, "
               "to avoid your system being overloaded, please further tune the variable for "
               "optimal performance in your application as needed.",
               "*****************************************"});
  print_lines(e, 1.0, number, {"[default0]:step 0"});
  exited(e, kRank1, 1.4, 3);
  exited(e, kRank0, 3.0, 1);
  exited(e, kLauncher, 3.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].title, "rank 1 (pid 1011) exited with code 3");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("os._exit(3)"));
  // Prefixed by PyTorch itself ("[rank0]:", on its own log lines): rank 1 may print unprefixed.
  e.log_lines.back().text = "[rank0]:[W socket.cpp:601] [c10d] The client socket has failed";
  EXPECT_THAT(diagnose(e).findings.at(0).title, HasSubstr("exited with code 3: *****"));
  e.log_lines.back().text = "[default0]:step 0";
  // Its worker ended too, before it: it printed through the rank, prefixed, not the banner.
  killed(e, kWorker1, 1.3, SIGKILL);
  d = diagnose(e);
  ProcessTexts texts(e, d.processes);
  for (const ProcessSummary& p : d.processes) {
    if (p.record.pid == kRank1 || p.record.pid == kWorker1) {
      EXPECT_EQ(texts.last_words(p), nullptr) << p.record.pid;
    }
  }
}

// A logging library's warning or note is never a process's failure message: gloo's glog
// warning at start-up where the host name does not resolve (containers), Python's logging and
// warnings, c10's "[W ...]".
TEST(ProcessTexts, ALoggedWarningIsNoLastWords) {
  for (const char* warning :
       {"[default1]:W20261126 04:43:28.576334 4101 socket.cpp:436] Warning: Unable to resolve "
        "hostname to a (local) address. Using the loopback address as fallback.",
        "[default1]:I20261126 04:43:28.576334 4101 ProcessGroupGloo.cpp:50] connected",
        "[default1]:WARNING:root:no checkpoint found, starting afresh",
        "[default1]:/opt/train.py:12: UserWarning: the learning rate is large",
        "[default1]:[W socket.cpp:601] [c10d] The client socket has failed to connect"}) {
    Evidence e = torchrun_job();
    uint64_t number = 1;
    print_lines(e, 1.0, number, {"[default0]:step 0", warning});
    exited(e, kRank1, 1.4, 3);
    exited(e, kRank0, 3.0, 1);
    exited(e, kLauncher, 3.5, 1);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    EXPECT_EQ(d.findings[0].title, "rank 1 (pid 1011) exited with code 3") << warning;
  }
  // An error record is: what the process said as it failed.
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 1.0, number, {"[default1]:E20261126 04:43:28.576334 4101 main.cpp:9] no data"});
  exited(e, kRank1, 1.4, 3);
  exited(e, kRank0, 3.0, 1);
  exited(e, kLauncher, 3.5, 1);
  EXPECT_THAT(diagnose(e).findings.at(0).title, HasSubstr("exited with code 3: E20261126"));
}

TEST(ProcessTexts, UnprefixedOutputGoesToTheProcessThatFailedAfterPrintingIt) {
  // A single process whose worker crashed (seen dead just before the rank's traceback was
  // stamped) and which then raised: the traceback is the rank's, not the dead worker's.
  Evidence e = torchrun_job();
  e.processes.resize(1);
  e.processes.push_back(proc(kRank0, kLauncher, 500'100, "/usr/bin/python3.11 train.py"));
  e.processes.push_back(proc(kWorker0, kRank0, 500'300, "/usr/bin/python3.11 train.py"));
  e.run.root_pid = kRank0;
  e.processes.erase(e.processes.begin());
  killed(e, kWorker0, 3.0, SIGSEGV);
  e.log_lines = {
      stderr_line(3.01, 2, std::string("\0Traceback (most recent call last):", 35)),
      stderr_line(3.01, 3, "  File \"/home/user/proj/train.py\", line 9, in <module>"),
      stderr_line(3.02, 4, "RuntimeError: DataLoader worker (pid(s) 1020) exited unexpectedly"),
  };
  exited(e, kRank0, 3.6, 1);
  std::vector<ProcessSummary> processes = diagnose(e).processes;
  ProcessTexts texts(e, processes);
  const ProcessSummary& rank = processes[0];
  ASSERT_EQ(rank.record.pid, kRank0);
  const PythonTraceback* tb = texts.final_exception(rank);
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->first_line, 2u);  // the NUL before "Traceback" is not part of the line
  EXPECT_FALSE(tb->incomplete);
  EXPECT_EQ(texts.final_exception(processes[1]), nullptr);
}

// Two forkserver workers that cannot unpickle their dataset print the same traceback as each
// dies; the reader stamps a traceback's lines after its worker was seen dead (its last lines, or
// all of them), while the other worker and the rank end after. Each traceback is its own
// worker's, by the time each began.
TEST(ProcessTexts, WorkersFailingAlikeEachOwnTheirTraceback) {
  const std::vector<std::string> traceback = {
      "Traceback (most recent call last):",
      "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 130, in _main",
      "AttributeError: Can't get attribute 'Killed' on <module '__main__' (built-in)>"};
  const int kWorker2 = 1022;
  struct Times {
    double first_begins, first_ends, first_dies, second_begins, second_ends, second_dies;
  };
  for (const Times& at : {Times{4.2175, 4.2221, 4.2179, 4.2244, 4.2244, 4.2247},
                          Times{4.2500, 4.2500, 4.24991, 4.2710, 4.2790, 4.2750}}) {
    Evidence e = torchrun_job();
    e.processes.push_back(ranked(proc(kWorker2, kRank0, 500'302, "python3 train.py"), 0, true));
    uint64_t number = 1;
    print_lines(e, at.first_begins, number, {traceback[0]});
    print_lines(e, at.first_ends, number, {traceback[1], traceback[2]});
    exited(e, kWorker0, at.first_dies, 1);
    print_lines(e, at.second_begins, number, {traceback[0]});
    print_lines(e, at.second_ends, number, {traceback[1], traceback[2]});
    exited(e, kWorker2, at.second_dies, 1);
    exited(e, kRank0, 8.8, 1);
    std::vector<ProcessSummary> processes = diagnose(e).processes;
    ProcessTexts texts(e, processes);
    for (const ProcessSummary& p : processes) {
      const PythonTraceback* tb = texts.final_exception(p);
      if (p.record.pid == kWorker0 || p.record.pid == kWorker2) {
        ASSERT_NE(tb, nullptr) << p.record.pid;
        EXPECT_EQ(tb->first_line, p.record.pid == kWorker0 ? 1u : 4u);
      } else {
        EXPECT_EQ(tb, nullptr) << p.record.pid;
      }
    }
  }
}

// A job of one process, `pid`, started by the supervisor (pid - 1) as `command`.
Evidence job_of(int pid, const std::vector<std::string>& command, const std::string& cmdline) {
  Evidence e;
  e.run.command = command;
  e.run.root_pid = pid;
  e.run.supervisor_pid = pid - 1;
  e.run.start_ns = kT0;
  e.processes = {proc(pid, pid - 1, 500'000, cmdline)};
  return e;
}

// `python3 train.py` (pid `parent`) and the two processes it started with spawn (parent + 1
// and + 2): torch.multiprocessing.spawn's, or a DataLoader's workers.
Evidence spawning_job(int parent) {
  const std::string child =
      "/usr/bin/python3 -B -c from multiprocessing.spawn import spawn_main; spawn_main(8, 9)";
  Evidence e = job_of(parent, {"python3", "train.py"}, "/usr/bin/python3 train.py");
  e.processes.push_back(proc(parent + 1, parent, 500'010, child));
  e.processes.push_back(proc(parent + 2, parent, 500'011, child));
  return e;
}

// Each process's final exception, by the line its traceback began on.
std::map<int, uint64_t> final_lines(const Evidence& e) {
  std::vector<ProcessSummary> processes = diagnose(e).processes;
  ProcessTexts texts(e, processes);
  std::map<int, uint64_t> lines;
  for (const ProcessSummary& p : processes) {
    if (const PythonTraceback* tb = texts.final_exception(p)) lines[p.record.pid] = tb->first_line;
  }
  return lines;
}

// torch.multiprocessing.spawn outside the main guard, as recorded: both children raise as they
// start; spawn's parent stops the second after the first ended, then raises itself. Each
// traceback's outermost frame tells which code printed it.
TEST(ProcessTexts, SpawnedProcessesOwnTheTracebacksOfTheirCode) {
  const int kParent = 300, kChild0 = 301, kChild1 = 302;
  Evidence e = spawning_job(kParent);
  const std::vector<std::string> not_guarded = {
      "Traceback (most recent call last):", "  File \"<string>\", line 1, in <module>",
      "  File \"/usr/lib/python3.11/multiprocessing/spawn.py\", line 138, in "
      "_check_not_importing_main",
      "RuntimeError: An attempt has been made to start a new process before the"};
  uint64_t number = 1;
  print_lines(e, 0.188, number, not_guarded);
  print_lines(e, 0.512, number, not_guarded);
  exited(e, kChild0, 0.586, 1);
  killed(e, kChild1, 0.623, SIGTERM);
  print_lines(
      e, 0.624, number,
      {"Traceback (most recent call last):", "  File \"/tmp/job/train.py\", line 4, in <module>",
       "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with "
       "exit code 1"});
  exited(e, kParent, 1.134, 1);
  EXPECT_EQ(final_lines(e), (std::map<int, uint64_t>{{kChild0, 1}, {kChild1, 5}, {kParent, 9}}));
}

// `except Exception: logger.exception("failed"); raise` prints the same traceback twice; the
// launcher, whose command line names the script too, printed neither.
TEST(ProcessTexts, ALoggedAndReraisedExceptionIsItsOwnersBothTimes) {
  const int kMpirun = 400, kRank = 401;
  struct Launch {
    std::string rank, script;
  };
  // Python's options and their values, and a path with a space, come before the script.
  for (const Launch& launch : {Launch{"python3 train.py", "/job/train.py"},
                               Launch{"python3 -W ignore train.py --lr 0.1", "/job/train.py"},
                               Launch{"python3 -uX dev train.py", "/job/train.py"},
                               Launch{"python3 --check-hash-based-pycs never train.py", "train.py"},
                               Launch{"python3 -u /my job/train.py", "/my job/train.py"}}) {
    Evidence e = job_of(kMpirun, {"mpirun", "-np", "1"}, "mpirun -np 1 " + launch.rank);
    e.processes.push_back(ranked(proc(kRank, kMpirun, 500'010, launch.rank), 0));
    const std::vector<std::string> logged = {
        "Traceback (most recent call last):",
        "  File \"" + launch.script + "\", line 9, in <module>", "ValueError: bad config"};
    uint64_t number = 1;
    print_lines(e, 1.0, number, logged);
    print_lines(e, 1.01, number, logged);
    exited(e, kRank, 1.2, 1);
    exited(e, kMpirun, 1.5, 1);
    EXPECT_EQ(final_lines(e), (std::map<int, uint64_t>{{kRank, 4}})) << launch.rank;
  }
}

// A rank's last words, read just after the reaper saw it exit (argparse's error, exit 2), are
// its own; the launcher's report of that end, a moment later, is the launcher's.
TEST(ProcessTexts, LastWordsReadJustAfterTheirProcessEndedAreItsOwn) {
  Evidence e = torchrun_job();
  process(e, kLauncher).cmdline = "/usr/bin/python3.11 /usr/bin/torchrun --nproc_per_node 2 x.py";
  uint64_t number = 1;
  exited(e, kRank1, 3.0, 2);
  print_lines(e, 3.003, number, {"train.py: error: unrecognized arguments: --bacth-size 16"});
  print_lines(e, 3.1, number, {"ERROR:torch.distributed.elastic.multiprocessing.api:failed"});
  killed(e, kRank0, 3.2, SIGTERM);
  exited(e, kLauncher, 4.0, 1);
  std::vector<ProcessSummary> processes = diagnose(e).processes;
  ProcessTexts texts(e, processes);
  for (const ProcessSummary& p : processes) {
    const store::LogLine* words = texts.last_words(p);
    if (p.record.pid == kRank1) {
      ASSERT_NE(words, nullptr);
      EXPECT_THAT(words->text, HasSubstr("unrecognized arguments"));
    } else if (p.record.pid == kLauncher) {
      ASSERT_NE(words, nullptr);
      EXPECT_THAT(words->text, HasSubstr("elastic"));
    }
  }
}

// A spawn DataLoader whose workers cannot unpickle their dataset, as recorded: the worker that
// exited just before its rank's traceback began had printed its own; the rank printed that one.
TEST(ProcessTexts, AWorkerThatPrintedItsTracebackDoesNotTakeItsRanks) {
  const int kRank = 500, kWorkerA = 501, kWorkerB = 502;
  Evidence e = spawning_job(kRank);
  const std::vector<std::string> cannot_unpickle = {
      "Traceback (most recent call last):", "  File \"<string>\", line 1, in <module>",
      "AttributeError: Can't get attribute 'Squares' on <module '__mp_main__'>"};
  uint64_t number = 1;
  print_lines(e, 2.107, number, cannot_unpickle);
  print_lines(e, 2.512, number, cannot_unpickle);
  exited(e, kWorkerB, 2.516, 1);
  print_lines(e, 2.538, number,
              {"Traceback (most recent call last):",
               "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line "
               "1120, in _try_get_data",
               "RuntimeError: DataLoader worker (pid 502) exited unexpectedly with exit code 1."});
  killed(e, kWorkerA, 2.572, SIGTERM);
  exited(e, kRank, 3.105, 1);
  EXPECT_EQ(final_lines(e), (std::map<int, uint64_t>{{kWorkerB, 1}, {kWorkerA, 4}, {kRank, 7}}));
}

}  // namespace
}  // namespace traindoc::analysis
