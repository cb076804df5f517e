// The collectives rule: the checker's issues become findings with ranks, sites, stacks and fixes,
// and the first divergent call comes before the failures it caused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include <string>

#include "analysis/diagnosis.h"
#include "store/collective_words.h"
#include "store/collective_words_v9.h"

namespace traindoc::analysis {
namespace {

using store::RankState;
using testing::Contains;
using testing::HasSubstr;
using testing::Not;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

// A rank's state, as the checker's words say it ("killed by SIGTERM without calling it").
void set_state(store::CollectiveIssueRank& rank, const std::string& words) {
  store::rank_facts_from_words(words, rank);
}

// The title the checker's first issue makes, before the rule adds to it.
std::string title_of(const store::Evidence& e) {
  return store::issue_title(e.collective_issues.at(0));
}

store::ProcessRecord rank(int pid, int rank, uint64_t start_ticks) {
  store::ProcessRecord p;
  p.pid = pid;
  p.ppid = 10;
  p.start_ticks = start_ticks;
  p.start_ns = kT0;
  p.cmdline = "python train.py";
  p.argv0 = "python";
  p.agent = true;
  p.rank = rank;
  p.world_size = 2;
  p.rank_source = common::RankSource::kTorch;
  return p;
}

store::Evidence job_with_issue(FindingKind kind, const std::string& field) {
  store::Evidence e;
  e.run.root_pid = 10;
  e.run.start_ns = kT0;
  store::ProcessRecord launcher;
  launcher.pid = 10;
  launcher.start_ticks = 1;
  launcher.cmdline = "torchrun train.py";
  launcher.argv0 = "torchrun";
  launcher.exit_code = 1;
  launcher.end_ns = kT0 + 9 * kSecond;
  launcher.end_source = store::EndSource::kSupervisor;
  e.processes = {launcher, rank(11, 0, 2), rank(12, 1, 3)};
  // Rank 0 dies of the mismatch later on, as gloo makes it.
  e.processes[1].exit_code = 1;
  e.processes[1].end_ns = kT0 + 8 * kSecond;
  e.processes[1].end_source = store::EndSource::kParent;
  store::CollectiveIssue issue;
  issue.t_ns = kT0 + 2 * kSecond;
  issue.first_ns = kT0 + kSecond;
  issue.kind = store::issue_kind_named(to_string(kind)).value();
  issue.field = store::issue_field_named(field).value();
  issue.group_size = 2;
  issue.default_group = true;
  issue.op = "all_reduce";
  issue.number = 4;
  issue.ranks.push_back({.group_rank = 0,
                         .job_rank = 0,
                         .pid = 11,
                         .start_ticks = 2,
                         .state = RankState::kCalled,
                         .op = "all_reduce",
                         .value = "[10]",
                         .site = "train.py:6",
                         .last_call = "all_reduce #3 at train.py:6",
                         .calls = 3,
                         .stack = ""});
  issue.ranks.push_back(
      {.group_rank = 1,
       .job_rank = 1,
       .pid = 12,
       .start_ticks = 3,
       .state = RankState::kCalled,
       .op = "all_reduce",
       .value = "[20]",
       .site = "train.py:6",
       .last_call = "all_reduce #3 at train.py:6",
       .calls = 3,
       .stack = "python:\n  File \"/opt/traindoc/python/traindoc_hook/collectives.py\", "
                "line 245 in recorded\n  File \"train.py\", line 6 in main\n"});
  e.collective_issues = {issue};
  return e;
}

// The missing rank's own end leads (`kind`), and the others' wait is its peer-exited consequence.
// Rank 1 (pid 12) ended at +3 s without calling all_reduce #4, which the stall watch says as
// `state`; its exit code or signal is the caller's.
void rank1_ended(store::Evidence& e, const std::string& state) {
  e.processes[2].end_ns = kT0 + 3 * kSecond;
  e.processes[2].end_source = store::EndSource::kParent;
  set_state(e.collective_issues[0].ranks[1], state);
}

void expect_its_end_leads(const Diagnosis& d, FindingKind kind) {
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.kind, kind);
  EXPECT_EQ(root.ranks, (std::vector<int>{1}));
  auto waited = std::find_if(d.findings.begin(), d.findings.end(),
                             [](const Finding& f) { return f.kind == FindingKind::kPeerExited; });
  ASSERT_NE(waited, d.findings.end());
  EXPECT_NE(
      std::find(root.consequences.begin(), root.consequences.end(), waited - d.findings.begin()),
      root.consequences.end());
}

TEST(CollectivesRule, AMismatchIsTheRootCauseOfTheLaterFailures) {
  Diagnosis d = diagnose(job_with_issue(FindingKind::kCollectiveMismatch, "shape"));
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMismatch);
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.title,
            "all_reduce #4 in the default group (2 ranks) has a different shape across ranks: "
            "rank 0: [10] at train.py:6; rank 1: [20] at train.py:6");
  EXPECT_EQ(root.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(root.pids, (std::vector<int>{11, 12}));
  ASSERT_GE(root.evidence.size(), 3u);
  EXPECT_NE(root.evidence[0].find("shape [10]; at train.py:6"), std::string::npos)
      << root.evidence[0];
  EXPECT_NE(root.evidence[2].find("line 6 in main"), std::string::npos) << root.evidence[2];
  EXPECT_EQ(root.evidence[2].find("traindoc_hook"), std::string::npos) << root.evidence[2];
  EXPECT_NE(root.fix.find("pad"), std::string::npos);
  EXPECT_FALSE(root.consequences.empty());
}

// Rank 0's own account of the same mismatch (TORCH_DISTRIBUTED_DEBUG=DETAIL) merges into the
// checker's finding without naming rank 0 twice, which would read as a restart of it.
TEST(CollectivesRule, AMergedAccountNamesEachProcessOnce) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMismatch, "shape");
  e.log_lines = {{kT0 + 7 * kSecond, "stderr", 1, "Traceback (most recent call last):"},
                 {kT0 + 7 * kSecond, "stderr", 2, "  File \"train.py\", line 6, in main"},
                 {kT0 + 7 * kSecond, "stderr", 3,
                  "RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is "
                  "running collective: CollectiveFingerPrint(OpType=ALLREDUCE, "
                  "TensorShape=[10]), but Rank 1 is running collective: "
                  "CollectiveFingerPrint(OpType=ALLREDUCE, TensorShape=[20])."}};
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMismatch);
  EXPECT_EQ(root.pids, (std::vector<int>{11, 12}));
  EXPECT_THAT(root.evidence, Contains(HasSubstr("the same failure, also: rank 0 (pid 11)")));
  EXPECT_THAT(root.title, Not(HasSubstr("attempts")));
}

// Rank 1's prefetch thread died, and rank 1 then never made the collective the others waited in
// (it waited for a batch the thread would have made): the thread's exception is the cause.
TEST(CollectivesRule, AThreadThatDiedBeforeItsRankWentMissingIsTheCause) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  set_state(e.collective_issues[0].ranks[1], "never called it");
  e.processes[2].rank = 1;
  uint64_t number = 1;
  for (const char* text :
       {"Exception in thread prefetch:", "Traceback (most recent call last):",
        "  File \"data.py\", line 9, in prefetch", "OSError: [Errno 5] Input/output error"}) {
    e.log_lines.push_back(
        {kT0 + kSecond / 2, "stderr", number++, std::string("[default1]:") + text});
  }
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.title,
            "thread prefetch of rank 1 (pid 12) raised OSError: [Errno 5] Input/output error; the "
            "job then hung");
  auto missing = std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.kind == FindingKind::kCollectiveMissing;
  });
  ASSERT_NE(missing, d.findings.end());
  EXPECT_THAT(root.consequences, Contains(missing - d.findings.begin()));
}

TEST(CollectivesRule, EachKindHasItsFix) {
  EXPECT_NE(diagnose(job_with_issue(FindingKind::kCollectiveMismatch, "dtype"))
                .findings[0]
                .fix.find("Cast"),
            std::string::npos);
  EXPECT_NE(diagnose(job_with_issue(FindingKind::kCollectiveOrder, "op"))
                .findings[0]
                .fix.find("same order"),
            std::string::npos);
  EXPECT_NE(diagnose(job_with_issue(FindingKind::kCollectiveMissing, "missing"))
                .findings[0]
                .fix.find("unconditional"),
            std::string::npos);
  EXPECT_NE(diagnose(job_with_issue(FindingKind::kUnevenInputs, "calls"))
                .findings[0]
                .fix.find("drop_last"),
            std::string::npos);
  store::Evidence deadlock = job_with_issue(FindingKind::kCollectiveOrder, "deadlock");
  std::swap(deadlock.collective_issues[0].ranks[0], deadlock.collective_issues[0].ranks[1]);
  Diagnosis d = diagnose(deadlock);
  EXPECT_NE(d.findings[0].fix.find("batch_isend_irecv"), std::string::npos);
  EXPECT_EQ(d.findings[0].ranks, (std::vector<int>{0, 1}));
}

// T14: rank 0's monitored barrier timed out, then the launcher stopped rank 1, which never
// called it: the missing call is the cause, rank 1's SIGTERM a consequence.
TEST(CollectivesRule, AMissingRankStoppedAfterTheWaitFailedStaysMissing) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  e.processes[2].exit_signal = 15;
  rank1_ended(e, "never called it");
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.findings.front().kind, FindingKind::kCollectiveMissing);
  EXPECT_EQ(d.findings.front().ranks, (std::vector<int>{1}));
  // One that ended while the others waited is the cause: peer-exited.
  set_state(e.collective_issues[0].ranks[1], "killed by SIGTERM without calling it");
  EXPECT_EQ(diagnose(e).findings.front().kind, FindingKind::kPeerExited);
}

// The missing rank waited elsewhere (a collective only it makes); rank 0, waiting in the call,
// timed out first and left, and the missing rank then failed on the lost connection: the hang is
// the cause, whichever rank's timeout came first.
TEST(CollectivesRule, AMissingRankThatLostAWaitingRankThatLeftStaysMissing) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  set_state(e.collective_issues[0].ranks[1], "never called it");
  e.processes[2].exit_code = 1;
  e.processes[2].end_ns = kT0 + 9 * kSecond;  // after rank 0's, at 8 s
  e.processes[2].end_source = store::EndSource::kParent;
  for (std::string text : {"Traceback (most recent call last):",
                           "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by "
                           "peer [127.0.0.1]:61103"}) {
    e.log_lines.push_back(
        {kT0 + 9 * kSecond - kSecond / 10, "stderr", e.log_lines.size() + 1, "[default1]:" + text});
  }
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.findings.front().kind, FindingKind::kCollectiveMissing);
  EXPECT_EQ(d.findings.front().ranks, (std::vector<int>{1}));
  // Ended before rank 0 gave up, or of a failure of its own (a crash held it past rank 0's
  // end): it left the others waiting, and its end is the cause.
  for (bool own_failure : {false, true}) {
    store::Evidence before = e;
    if (own_failure) {
      before.log_lines.back().text = "[default1]:ValueError: bad batch";
    } else {
      before.processes[2].end_ns = kT0 + 7 * kSecond;
      for (store::LogLine& line : before.log_lines) line.t_ns -= 2 * kSecond;
    }
    EXPECT_NE(diagnose(before).findings.front().kind, FindingKind::kCollectiveMissing)
        << own_failure;
  }
}

// The checker files a missing rank's failed end as peer-exited when it saw that end before any
// waiting rank gave up (under load, the waiting rank's error comes late): the same story.
TEST(CollectivesRule, AMissingRanksEndSeenFirstIsItsOwnFinding) {
  store::Evidence e = job_with_issue(FindingKind::kPeerExited, "missing");
  e.processes[2].exit_signal = SIGKILL;
  e.processes[2].end_ns = kT0 + kSecond;
  e.processes[2].end_source = store::EndSource::kParent;
  set_state(e.collective_issues[0].ranks[1], "killed by SIGKILL without calling it");
  Diagnosis d = diagnose(e);
  expect_its_end_leads(d, FindingKind::kKilledExternally);
  auto waited = std::find_if(d.findings.begin(), d.findings.end(),
                             [](const Finding& f) { return f.kind == FindingKind::kPeerExited; });
  ASSERT_NE(waited, d.findings.end());
  EXPECT_EQ(
      waited->title,
      "rank 1 (pid 12) died of SIGKILL before all_reduce #4, which the other ranks waited in");
  EXPECT_EQ(waited->pids, (std::vector<int>{12}));
}

// A hang its user gave up on: the interrupt reached the job, and the launcher's teardown killed
// the missing rank. The missing call stays the cause, and the title says where that rank was.
TEST(CollectivesRule, AMissingRankKilledAfterAStopRequestStaysMissingAndIsPlaced) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  store::CollectiveIssueRank& missing = e.collective_issues[0].ranks[1];
  set_state(missing, "never called it");
  missing.stack =
      "python:\nCurrent thread 0x00007f3860601800 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/utils.py\", line 112 in "
      "_verify_param_shape_across_processes\n"
      "  File \"/usr/lib/python3/dist-packages/torch/nn/parallel/distributed.py\", line 655 in "
      "__init__\n"
      "  File \"/home/user/proj/train.py\", line 7 in <module>\n"
      "native (main thread):\n  #0 __futex_abstimed_wait_common (libc.so.6+0x85f14)\n";
  store::Event stop;
  stop.kind = store::EventKind::kSignalForwarded;
  stop.t_ns = kT0 + 5 * kSecond;
  stop.text = "SIGINT from the terminal, passed on to 1 process(es)";
  e.events = {stop};
  e.processes[2].exit_signal = SIGKILL;
  e.processes[2].end_ns = kT0 + 7 * kSecond;
  e.processes[2].end_source = store::EndSource::kParent;
  Diagnosis d = diagnose(e);
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMissing);
  EXPECT_EQ(root.title, title_of(e) +
                            "; rank 1 (pid 12) is at /home/user/proj/train.py:7 in "
                            "<module>, in torch/nn/parallel/distributed.py:655 in __init__");
  // Killed without a stop request, it died while the others waited: peer-exited.
  e.events.clear();
  expect_its_end_leads(diagnose(e), FindingKind::kKilledExternally);
}

// The missing rank waits for a batch its DataLoader worker never finishes: the stall watch's
// stack of the worker names it and its line, with the worker fix; a worker idle between samples
// does not.
TEST(CollectivesRule, AMissingRankWaitingForItsStalledWorkerNamesTheWorker) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  store::CollectiveIssueRank& missing = e.collective_issues[0].ranks[1];
  set_state(missing, "never called it");
  missing.stack =
      "python:\nThread 0x00007fab4a5d26c0 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 231 in _feed\n\n"
      "Current thread 0x00007f4c79e2e800 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1120 in "
      "_try_get_data\n"
      "  File \"/home/user/proj/train.py\", line 12 in <module>\n"
      "native (main thread):\n  #0 __poll (libc.so.6+0xfc26f)\n";
  // Started by a forkserver of the rank, as in Python 3.14's default and the forkserver context.
  store::ProcessRecord forkserver = rank(14, 1, 4);
  forkserver.ppid = 12;
  forkserver.cmdline = "python -c from multiprocessing.forkserver import main; main(8, 9)";
  forkserver.rank.reset();
  store::ProcessRecord worker = forkserver;
  worker.pid = 13;
  worker.ppid = 14;
  worker.start_ticks = 5;
  worker.forked = true;
  worker.worker_id = 0;
  e.processes.push_back(forkserver);
  e.processes.push_back(worker);
  const std::string worker_frames =
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302 in "
      "_worker_loop\n"
      "  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 314 in _bootstrap\n"
      "  File \"/home/user/proj/train.py\", line 12 in <module>\n";
  store::Event stall;
  stall.kind = store::EventKind::kStackAtStall;
  stall.t_ns = kT0 + 2 * kSecond + kSecond / 2;  // read a moment after the issue was found
  stall.pid = 13;
  stall.text =
      "python:\nCurrent thread 0x00007f4c79e2e800 (most recent call first):\n"
      "  File \"/home/user/proj/data.py\", line 9 in __getitem__\n"
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58 in "
      "fetch\n" +
      worker_frames;
  e.events = {stall};
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.findings.front().title,
            title_of(e) +
                "; rank 1 (pid 12) waits for a batch from worker "
                "0 of rank 1 (pid 13), which is at /home/user/proj/data.py:9 in __getitem__");
  EXPECT_THAT(d.findings.front().fix, HasSubstr("Pass timeout=SECONDS to the DataLoader"));
  // The stacks in the evidence are the main threads': a queue's feeder thread waits as always.
  EXPECT_THAT(d.findings.front().evidence,
              Contains(HasSubstr("worker 0 of rank 1 (pid 13) stack: Current thread "
                                 "0x00007f4c79e2e800 (most recent call first): |   File "
                                 "\"/home/user/proj/data.py\", line 9 in __getitem__")));
  EXPECT_THAT(d.findings.front().evidence,
              Contains(HasSubstr("rank 1 (pid 12) stack: Current thread 0x00007f4c79e2e800")));
  for (const std::string& line : d.findings.front().evidence) {
    EXPECT_THAT(line, Not(HasSubstr("_feed"))) << line;
  }

  // A dump of an earlier stall is not this one's.
  e.events[0].t_ns = kT0 + kSecond + kSecond / 2;
  d = diagnose(e);
  EXPECT_THAT(d.findings.front().title, Not(HasSubstr("waits for a batch")));
  e.events[0].t_ns = kT0 + 2 * kSecond + kSecond / 2;
  e.events[0].text =
      "python:\nCurrent thread 0x00007f4c79e2e800 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 113 in get\n" +
      worker_frames;
  d = diagnose(e);
  EXPECT_THAT(d.findings.front().title, Not(HasSubstr("waits for a batch")));
}

// The missing rank's samples while the others waited: `cpu_s` seconds of CPU in each second.
void sample_cpu(store::Evidence& e, double cpu_s) {
  for (int i = 0; i <= 2; ++i) {
    store::ProcSample s;
    s.pid = 12;
    s.start_ticks = 3;
    s.t_ns = kT0 + kSecond + i * kSecond / 2;
    s.cpu_user_s = 1.0 + cpu_s * i / 2;
    e.proc_samples.push_back(s);
  }
}

// A job whose rank 1 never made the call the others wait in, its stack in a Python loop, using
// `cpu` of a core meanwhile. Real stack of PyTorch 1.13.
store::Evidence missing_rank_in_a_loop(double cpu) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  store::CollectiveIssueRank& missing = e.collective_issues[0].ranks[1];
  set_state(missing, "never called it");
  missing.stack =
      "python:\nCurrent thread 0x00007f4c79e2e800 (most recent call first):\n"
      "  File \"/tmp/busy.py\", line 12 in <module>\n"
      "native (main thread):\n  #0 _PyEval_EvalFrameDefault (python3.11+0x52db92)\n";
  sample_cpu(e, cpu);
  return e;
}

// A loop that shares its core with other work (a loaded machine) is still busy.
TEST(CollectivesRule, AMissingRankBusyOnASharedCoreIsSaidSo) {
  store::Evidence e = missing_rank_in_a_loop(0.3);
  EXPECT_EQ(
      diagnose(e).findings.front().title,
      title_of(e) + "; rank 1 (pid 12) is busy at /tmp/busy.py:12 in <module> (30% of a core)");
}

// A missing rank that runs its own code (a loop) or waits on a lock while the others wait: the
// title says which, with a fix for it; without samples, where it is. Real stacks of PyTorch 1.13.
TEST(CollectivesRule, AMissingRankBusyOrWaitingOnALockIsSaidSo) {
  store::Evidence e = missing_rank_in_a_loop(0.98);
  store::CollectiveIssueRank& missing = e.collective_issues[0].ranks[1];
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.findings.front().title, title_of(e) +
                                          "; rank 1 (pid 12) is busy at /tmp/busy.py:12 in "
                                          "<module> (98% of a core)");
  EXPECT_THAT(d.findings.front().fix, HasSubstr("a loop that does not end"));

  missing.stack =
      "python:\nCurrent thread 0x00007fd791e19800 (most recent call first):\n"
      "  File \"/tmp/busy.py\", line 8 in <module>\n"
      "native (main thread):\n  #0 __futex_abstimed_wait_common (libc.so.6+0x85f14)\n"
      "  #1 __new_sem_wait_slow64.constprop.0 (libc.so.6+0x90d90)\n"
      "  #2 PyThread_acquire_lock_timed (python3.11+0x4f905f)\n";
  e.proc_samples.clear();
  sample_cpu(e, 0.0);
  d = diagnose(e);
  EXPECT_EQ(d.findings.front().title, title_of(e) +
                                          "; rank 1 (pid 12) waits on a lock or a queue at "
                                          "/tmp/busy.py:8 in <module>");
  EXPECT_THAT(d.findings.front().fix, HasSubstr("a wait that does not end"));

  // A thread of its own burns CPU while its main thread waits on the lock: the lock it is.
  e.proc_samples.clear();
  sample_cpu(e, 1.0);
  EXPECT_THAT(diagnose(e).findings.front().title, HasSubstr(" waits on a lock or a queue at "));

  // CUDA spins while the main thread waits for the GPU: CPU, yet no work of its own.
  missing.stack =
      "python:\nCurrent thread 0x00007fd791e19800 (most recent call first):\n"
      "  File \"/tmp/train.py\", line 30 in <module>\n"
      "native (main thread):\n  #0 ?? (libcuda.so.1+0x2f1a5e)\n"
      "  #1 cudaStreamSynchronize (libcudart.so.12+0x4f1a0)\n";
  EXPECT_EQ(diagnose(e).findings.front().title, title_of(e) +
                                                    "; rank 1 (pid 12) is at /tmp/train.py:30 in "
                                                    "<module>");

  // Idle without a lock (sleeping, reading a file): where it is, and the general fix.
  e.proc_samples.clear();
  sample_cpu(e, 0.0);
  missing.stack =
      "python:\nCurrent thread 0x00007fd791e19800 (most recent call first):\n"
      "  File \"/tmp/busy.py\", line 8 in <module>\n";
  d = diagnose(e);
  EXPECT_EQ(d.findings.front().title, title_of(e) +
                                          "; rank 1 (pid 12) is at /tmp/busy.py:8 in "
                                          "<module>");
  EXPECT_THAT(d.findings.front().fix, HasSubstr("Make the collective unconditional"));
}

// Both ranks wait, each in another call, until gloo's timeout; the missing one times out too.
// Neither end is a failure of its own: the hang is the cause, it names the missing rank only, and
// the timeouts are its evidence.
TEST(CollectivesRule, RanksThatTimedOutWaitingAreTheHangsEvidence) {
  // The waits the checker saw began before the ranks' timeouts, or, stamped from a rank's own
  // idea of its wait, after: the checker's account leads either way.
  for (int64_t first_ns : {kT0 + kSecond, kT0 + 7 * kSecond + kSecond / 2}) {
    store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
    e.collective_issues[0].first_ns = first_ns;
    set_state(e.collective_issues[0].ranks[1], "never called it");
    set_state(e.collective_issues[0].ranks[0], "waiting in it");
    for (int r = 0; r < 2; ++r) {
      std::string prefix = "[default" + std::to_string(r) + "]:";
      e.processes[static_cast<size_t>(r) + 1].local_rank = r;
      e.processes[static_cast<size_t>(r) + 1].exit_code = 1;
      e.processes[static_cast<size_t>(r) + 1].end_ns = kT0 + (7 + r) * kSecond;
      e.processes[static_cast<size_t>(r) + 1].end_source = store::EndSource::kParent;
      for (std::string text :
           {prefix + "Traceback (most recent call last):",
            prefix + "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
                     "Timed out waiting 6000ms for recv operation to complete"}) {
        store::LogLine line;
        line.stream = "stderr";
        line.number = e.log_lines.size() + 1;
        line.t_ns = kT0 + (7 + r) * kSecond - kSecond / 10;
        line.text = text;
        e.log_lines.push_back(line);
      }
    }
    Diagnosis d = diagnose(e);
    const Finding& root = d.findings.front();
    EXPECT_EQ(root.kind, FindingKind::kCollectiveMissing);
    EXPECT_EQ(root.ranks, (std::vector<int>{1}));
    EXPECT_EQ(root.title, title_of(e));
    EXPECT_EQ(std::count_if(root.evidence.begin(), root.evidence.end(),
                            [](const std::string& line) {
                              return line.starts_with("the same failure, also: ");
                            }),
              2);
  }
}

// A rank of torch.multiprocessing.spawn that raised: spawn's wrapper leaves through sys.exit(1),
// which runs the exit handlers, so the hook marked its program finished. Its exception, not a
// skipped call, is why the other rank waited, however late its end was seen.
TEST(CollectivesRule, AMissingRankThatRaisedLeadsThoughItsProgramWasMarkedFinished) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  e.processes[2].exit_code = 1;
  rank1_ended(e, "exited 1 without calling it");
  e.events.push_back({kT0 + 3 * kSecond - kSecond / 10, store::EventKind::kScriptFinished, 12, ""});
  for (std::string text :
       {"Traceback (most recent call last):", "  File \"/home/user/train.py\", line 9, in run",
        "RuntimeError: bad batch on rank 1"}) {
    store::LogLine line;
    line.stream = "stderr";
    line.number = e.log_lines.size() + 1;
    line.t_ns = kT0 + 3 * kSecond - kSecond / 5;
    line.text = "[default1]:" + text;
    e.log_lines.push_back(line);
  }
  expect_its_end_leads(diagnose(e), FindingKind::kPythonException);
}

// H08 (c) with a teardown abort: rank 1 skipped the call, finished its program, then aborted at
// exit. The skip is the cause; the abort is told as a crash at exit, not as a death mid-work.
TEST(CollectivesRule, AMissingRankThatFinishedThenAbortedAtExitStaysMissing) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  e.processes[2].exit_signal = SIGABRT;
  e.processes[2].end_ns = kT0 + 3 * kSecond;
  e.processes[2].end_source = store::EndSource::kParent;
  set_state(e.collective_issues[0].ranks[1], "killed by SIGABRT without calling it");
  store::Crash crash;
  crash.pid = 12;
  crash.start_ticks = 3;
  crash.signo = SIGABRT;
  crash.time_ns = kT0 + 3 * kSecond - 1;
  e.crashes = {crash};
  // Without the hook's mark, a rank that died before the call is the cause.
  expect_its_end_leads(diagnose(e), FindingKind::kAbort);

  e.events.push_back({kT0 + 2 * kSecond, store::EventKind::kScriptFinished, 12, ""});
  Diagnosis d = diagnose(e);
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.kind, FindingKind::kCollectiveMissing);
  EXPECT_EQ(root.ranks, (std::vector<int>{1}));
  EXPECT_NE(root.evidence.back().find("finished its program at +2.0 s, then died of SIGABRT in "
                                      "its teardown at exit"),
            std::string::npos)
      << root.evidence.back();
  auto abort = std::find_if(d.findings.begin(), d.findings.end(),
                            [](const Finding& f) { return f.kind == FindingKind::kAbort; });
  ASSERT_NE(abort, d.findings.end());
  EXPECT_NE(abort->title.find("(at exit, after its program had finished)"), std::string::npos)
      << abort->title;
  EXPECT_NE(abort->fix.find("destroy_process_group"), std::string::npos);
  // A mark from an earlier process that held the same pid says nothing of this one.
  e.events.back().t_ns = kT0 - kSecond;
  expect_its_end_leads(diagnose(e), FindingKind::kAbort);
}

// H14: the stall ended when rank 1 came to the same call late; the job then finished.
TEST(CollectivesRule, AStragglerThatCameIsAWarningWithItsOwnFix) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  set_state(e.collective_issues[0].ranks[1], "never called it");
  store::CollectiveIssue late = e.collective_issues[0];
  late.field = store::IssueField::kLate;
  late.t_ns = kT0 + 6 * kSecond;
  late.waited_ns = 5 * kSecond;
  late.ranks[0].state = RankState::kWaited;
  late.ranks[1].state = RankState::kCameLate;
  late.ranks[1].late_ns = 5 * kSecond;
  e.collective_issues.push_back(late);
  for (store::ProcessRecord& p : e.processes) p.exit_code = 0;
  e.run.exit_code = 0;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);  // the late arrival is told with its stall
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kCollectiveMissing);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.root_cause);
  EXPECT_EQ(f.ranks, (std::vector<int>{1}));
  EXPECT_NE(f.title.find("5.0 s after the others: a straggler"), std::string::npos) << f.title;
  EXPECT_NE(f.fix.find("timeout"), std::string::npos);
  EXPECT_NE(f.evidence[1].find("made it 5.0 s after the first rank; at train.py:6"),
            std::string::npos)
      << f.evidence[1];
  EXPECT_EQ(
      f.evidence[4].rfind("during the wait, group rank 1, rank 1 (pid 12): never called it", 0), 0u)
      << f.evidence[4];
  // A job that failed of something else: the straggler only slowed it.
  e.run.exit_code = 1;
  EXPECT_EQ(diagnose(e).findings.front().severity, Severity::kWarning);
  // Rank 0 gave up waiting before rank 1 came (gloo's timeout): the straggler failed the job.
  uint64_t line = 1;
  auto print = [&](double seconds, const std::string& prefix, const std::string& error) {
    for (const std::string& text : {std::string("Traceback (most recent call last):"),
                                    std::string("  File \"train.py\", line 6, in main"), error}) {
      e.log_lines.push_back(
          {kT0 + static_cast<int64_t>(seconds * 1e9), "stderr", line++, prefix + text});
    }
  };
  print(5.5, "[default0]:",
        "RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 4000ms for "
        "recv operation to complete");
  d = diagnose(e);
  EXPECT_EQ(d.findings.front().severity, Severity::kError);
  EXPECT_THAT(d.findings.front().title, HasSubstr("5.0 s after the others: a straggler"));
  // Rank 1 then failed on the connection rank 0's end closed: a straggler still, not a rank
  // that died before the call.
  e.processes[2].exit_code = 1;
  e.processes[2].end_ns = kT0 + 8 * kSecond + kSecond / 2;
  e.processes[2].end_source = store::EndSource::kParent;
  print(8.0, "[default1]:",
        "RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
        "[127.0.0.1]:61103");
  d = diagnose(e);
  EXPECT_EQ(d.findings.front().kind, FindingKind::kCollectiveMissing);
  EXPECT_THAT(d.findings.front().title, HasSubstr("5.0 s after the others: a straggler"));
  // The call came from a restarted attempt's rank 1: this one died before it.
  e.collective_issues[1].ranks[1].pid = 22;
  for (const Finding& later : diagnose(e).findings) {
    EXPECT_THAT(later.title, Not(HasSubstr("a straggler"))) << later.title;
  }
  e.collective_issues[1].ranks[1].pid = 12;
  // It came, then failed of its own: its own finding, and never "before the call".
  e.log_lines.back().text = "[default1]:RuntimeError: CUDA error: an illegal memory access";
  d = diagnose(e);
  bool straggler = false;
  for (const Finding& later : d.findings) {
    EXPECT_THAT(later.title, Not(HasSubstr("before all_reduce #4"))) << later.title;
    straggler = straggler || later.title.find("a straggler") != std::string::npos;
  }
  EXPECT_TRUE(straggler);
  // The stall took rank 0's call for one of its own; its late peer shows it was not.
  set_state(e.collective_issues[0].ranks[0], "the odd one: waiting in it");
  set_state(e.collective_issues[0].ranks[1], "never calls from there");
  EXPECT_EQ(diagnose(e).findings.front().ranks, (std::vector<int>{1}));
}

// CASES.md H16: rank 0 alone made a call from its rank-0-only code; it alone is named, and the
// finding is a warning while the job still finished.
TEST(CollectivesRule, TheOddRankAloneIsNamed) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveOrder, "site");
  set_state(e.collective_issues[0].ranks[0], "the odd one: made all_reduce #4 from another place");
  set_state(e.collective_issues[0].ranks[1], "made all_reduce #4");
  Diagnosis d = diagnose(e);
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kCollectiveOrder);
  EXPECT_EQ(f.severity, Severity::kError);  // rank 0 exited 1
  EXPECT_EQ(f.ranks, (std::vector<int>{0}));
  EXPECT_NE(f.fix.find("rank_zero_only=True"), std::string::npos) << f.fix;
  for (store::ProcessRecord& p : e.processes) p.exit_code = 0;
  e.run.exit_code = 0;
  EXPECT_EQ(diagnose(e).findings.front().severity, Severity::kWarning);
  // A call only rank 0 made, which the others never make: rank 0, not the ranks that did not.
  e = job_with_issue(FindingKind::kCollectiveMissing, "missing");
  set_state(e.collective_issues[0].ranks[0], "the odd one: waiting in it");
  set_state(e.collective_issues[0].ranks[1], "exited 0; never calls from there");
  d = diagnose(e);
  EXPECT_EQ(d.findings.front().kind, FindingKind::kCollectiveMissing);
  EXPECT_EQ(d.findings.front().ranks, (std::vector<int>{0}));
}

// H11: the rank that ran out of batches and left first is named; the one that then failed is a
// victim, in the evidence.
TEST(CollectivesRule, UnevenInputsNameTheRankThatLeftFirst) {
  store::Evidence e = job_with_issue(FindingKind::kUnevenInputs, "calls");
  std::swap(e.collective_issues[0].ranks[0], e.collective_issues[0].ranks[1]);
  set_state(e.collective_issues[0].ranks[0], "exited 0");
  set_state(e.collective_issues[0].ranks[1], "exited 1");
  Diagnosis d = diagnose(e);
  const Finding& f = d.findings.front();
  EXPECT_EQ(f.kind, FindingKind::kUnevenInputs);
  EXPECT_EQ(f.ranks, (std::vector<int>{1}));
}

// Rank 1 was done; rank 0 evaluated alone, then failed to save its checkpoint: its own error,
// not uneven inputs; so is any failure after as many steps as its peer ran. A lost peer
// (gloo's closed connection, or a text no signature knows) with fewer steps is uneven inputs.
TEST(CollectivesRule, ARankThatFailedOnItsOwnAfterItsPeerLeftIsNoUnevenInputs) {
  struct Case {
    const char* error;
    int64_t steps_of_rank_0;  // rank 1 ran 5; 0: not counted
    bool uneven;
  };
  for (const Case& c :
       {Case{"OSError: [Errno 28] No space left on device", 0, false},
        Case{"RuntimeError: Parent directory /ckpt does not exist.", 5, false},
        Case{"RuntimeError: [/build/gloo/transport/tcp/pair.cc:598] Connection "
             "closed by peer [127.0.0.1]:29500",
             0, true},
        Case{"torch.distributed.DistNetworkError: Connection reset by peer", 6, true}}) {
    store::Evidence e = job_with_issue(FindingKind::kUnevenInputs, "calls");
    std::swap(e.collective_issues[0].ranks[0], e.collective_issues[0].ranks[1]);
    set_state(e.collective_issues[0].ranks[0], "exited 0");
    set_state(e.collective_issues[0].ranks[1], "exited 1");
    e.steps.push_back({kT0 + 5 * kSecond, 12, 3, store::StepKind::kBackward, 5});
    if (c.steps_of_rank_0 > 0) {
      e.steps.push_back({kT0 + 5 * kSecond, 11, 2, store::StepKind::kBackward, c.steps_of_rank_0});
    }
    uint64_t number = 1;
    for (const char* text : {"Traceback (most recent call last):",
                             "  File \"train.py\", line 40, in <module>", c.error}) {
      e.log_lines.push_back(
          {kT0 + 7 * kSecond, "stderr", number++, std::string("[default0]:") + text});
    }
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    bool uneven = std::any_of(d.findings.begin(), d.findings.end(), [](const Finding& f) {
      return f.kind == FindingKind::kUnevenInputs;
    });
    EXPECT_EQ(uneven, c.uneven) << c.error;
  }
}

TEST(CollectivesRule, AnAbortIsSaid) {
  store::Evidence e = job_with_issue(FindingKind::kCollectiveMismatch, "shape");
  e.collective_issues[0].aborted = true;
  Diagnosis d = diagnose(e);
  EXPECT_EQ(d.findings.front().evidence.back(),
            "traindoc ended the job at this finding (--on-mismatch abort)");
}

}  // namespace
}  // namespace traindoc::analysis
