// Tests of the stop-request and idle rules through diagnose() on the evidence of a torchrun job:
// a stop passed on to the job, a job that went idle, a prompt nobody answers, a wait for peers
// that never came.
#include "analysis/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include <optional>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"
#include "store/forwarded_signal.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture

using store::Evidence;
using testing::Contains;
using testing::ElementsAre;
using testing::EndsWith;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;
using testing::UnorderedElementsAre;

// Senders of stop signals, as the kernel tells them.
const store::SignalSender kTerminal{0, SI_KERNEL, ""};
const store::SignalSender kOutside{0, SI_USER, ""};  // the container's runtime
store::SignalSender sender_named(const std::string& name) {
  return {4242, SI_USER, name};
}

// A stop signal the supervisor passed on, as it stores it.
store::Event forwarded(double seconds, int sig, const store::SignalSender& sender, int sent) {
  return store::forwarded_event(at(seconds), {sig, sent, sender});
}

// torchrun sent SIGTERM by a scheduler, as Debian's PyTorch prints it.
TEST(RuleStopRequest, SchedulersSigtermIsTheCauseOfTheLaunchersExit) {
  Evidence e = torchrun_job();
  e.events = {forwarded(10, SIGTERM, sender_named("slurmstepd"), 5)};
  // The ranks' stacks, asked for before the signal was passed on (the launcher's is not cited).
  const std::string rank1_stack =
      "python:\n"
      "Thread 0x00007f87ae31d6c0 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "\n"
      "Current thread 0x00007f473c8bd680 (most recent call first):\n"
      "  File \"/usr/lib/python3/dist-packages/traindoc_hook/collectives.py\", line 80 in "
      "recorded\n"
      "  File \"/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py\", line 1541 "
      "in all_reduce\n"
      "  File \"/home/user/proj/train.py\", line 42 in step\n"
      "  File \"/home/user/proj/train.py\", line 60 in main\n"
      "  File \"/home/user/proj/train.py\", line 70 in <module>\n"
      "native (main thread):\n"
      "  #0 clock_nanosleep (libc.so.6+0xcf503)\n";
  e.events.push_back({at(10), store::EventKind::kStackAtStop, kRank1, rank1_stack});
  e.events.push_back({at(10), store::EventKind::kStackAtStop, kLauncher, rank1_stack});
  for (int pid : {kRank0, kRank1, kWorker0, kWorker1}) killed(e, pid, 10.1, SIGTERM);
  e.log_lines = {
      stderr_line(10.2, 30, "Traceback (most recent call last):"),
      stderr_line(10.2, 31,
                  "  File \"/usr/lib/python3/dist-packages/torch/distributed/elastic/"
                  "multiprocessing/api.py\", line 62, in _terminate_process_handler"),
      stderr_line(10.2, 32,
                  "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1000 "
                  "got signal: 15"),
  };
  exited(e, kLauncher, 10.6, 1);
  e.run.exit_code = 1;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  const Finding& stop = d.findings[0];
  EXPECT_EQ(stop.kind, FindingKind::kStopRequested);
  EXPECT_TRUE(stop.root_cause);
  EXPECT_EQ(stop.severity, Severity::kInfo);
  EXPECT_EQ(stop.title, "the job was stopped by SIGTERM from pid 4242 (slurmstepd)");
  EXPECT_THAT(stop.ranks, ElementsAre(0, 1));
  EXPECT_THAT(stop.pids, UnorderedElementsAre(kRank0, kRank1, kWorker0, kWorker1));
  EXPECT_THAT(stop.evidence,
              Contains(std::string("rank 1 (pid 1011) ended by SIGTERM at +10.1 s")));
  EXPECT_THAT(stop.evidence,
              Contains(std::string("rank 1 (pid 1011) was in "
                                   "/usr/lib/python3/dist-packages/torch/distributed/"
                                   "distributed_c10d.py:1541 in all_reduce, called from "
                                   "/home/user/proj/train.py:42 in step, called from "
                                   "/home/user/proj/train.py:60 in main")));
  EXPECT_THAT(stop.evidence, Not(Contains(HasSubstr("launcher (pid 1000) was in"))));
  EXPECT_THAT(stop.consequences, ElementsAre(1u));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kKilledExternally);
  EXPECT_EQ(d.findings[1].title, "launcher (pid 1000): got SIGTERM and stopped its ranks");
}

TEST(RuleStopRequest, SecondInterruptKills) {
  Evidence e = torchrun_job();
  e.events = {forwarded(10, SIGINT, kTerminal, 0), forwarded(12, SIGKILL, kTerminal, 5)};
  killed(e, kRank0, 12.01, SIGKILL);
  e.run.exit_signal = SIGKILL;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].title,
            "the job was stopped by SIGINT from the terminal, then killed at the second interrupt");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("catches SIGINT"));
}

constexpr int kTimeout = 998;

const std::string kWaitStack =
    "python:\n"
    "Current thread 0x00007f473c8bd680 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "  File \"/home/user/proj/train.py\", line 7 in wait_for_peer\n"
    "  File \"/home/user/proj/train.py\", line 9 in <module>\n"
    "native (main thread):\n"
    "  #0 clock_nanosleep (libc.so.6+0xcf503)\n";

// `WORDS torchrun ...`: coreutils' timeout around the job, which started 0.1 s before torchrun.
Evidence under_timeout(const std::string& words) {
  Evidence e = torchrun_job();
  ProcessRecord& launcher = process(e, kLauncher);
  e.processes.insert(e.processes.begin(),
                     proc(kTimeout, 999, 499'990, words + " " + launcher.cmdline));
  process(e, kLauncher).ppid = kTimeout;
  e.run.root_pid = kTimeout;
  return e;
}

// The limit ran out: timeout sent SIGTERM to torchrun, which stopped its ranks, and exited 124.
TEST(RuleStopRequest, ATimeoutThatRanOutIsTheJobsTimeLimit) {
  // It exits 124 once it sent its signal; 137 under --foreground when it had to kill; with -k it
  // kills its own process group, itself included.
  for (std::optional<int> code :
       {std::optional<int>(124), std::optional<int>(137), std::optional<int>()}) {
    Evidence e = under_timeout("/usr/bin/timeout -vs TERM --kill-after=30 1.5m");
    // The supervisor asked for the stacks a moment before the limit; those of a stop are not
    // this stop's.
    e.events = {{at(89.0), store::EventKind::kStackAtLimit, kRank1, kWaitStack},
                {at(89.0), store::EventKind::kStackAtStop, kRank0, kWaitStack}};
    for (int pid : {kRank0, kRank1, kWorker0, kWorker1}) killed(e, pid, 90.0, SIGTERM);
    exited(e, kLauncher, 90.1, 1);
    if (code) {
      exited(e, kTimeout, 90.2, *code);
    } else {
      killed(e, kTimeout, 120.1, SIGKILL);
    }
    e.run.exit_code = code.value_or(128 + SIGKILL);
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    const Finding& root = d.findings[0];
    EXPECT_TRUE(root.root_cause);
    EXPECT_EQ(root.kind, FindingKind::kStopRequested);
    EXPECT_EQ(root.title,
              "the job was stopped by its time limit: `timeout -vs TERM --kill-after=30 1.5m` ran "
              "out after 90.0 s");
    EXPECT_THAT(root.ranks, ElementsAre(0, 1));
    EXPECT_THAT(root.evidence, Contains(HasSubstr("rank 1 (pid 1011) ended by SIGTERM")));
    EXPECT_THAT(root.evidence, Contains(std::string("rank 1 (pid 1011) was in "
                                                    "/usr/lib/python3.11/threading.py:324 in "
                                                    "wait, called from /home/user/proj/train.py:7 "
                                                    "in wait_for_peer, called from "
                                                    "/home/user/proj/train.py:9 in <module>")));
    EXPECT_THAT(root.evidence, Not(Contains(HasSubstr("rank 0 (pid 1010) was in"))));
    EXPECT_THAT(root.fix, HasSubstr("time limit ran out"));
    // timeout's own exit is no finding, and the ranks' ends are not told apart.
    for (const Finding& f : d.findings) {
      EXPECT_THAT(f.pids, Not(Contains(kTimeout))) << f.title;
      EXPECT_NE(f.kind, FindingKind::kKilledExternally) << f.title;
    }
  }
}

TEST(RuleStopRequest, ATimeoutIsALimitOnlyWhenItRanOut) {
  // The job failed by itself before the limit: timeout passes its code on, 137 for a command
  // the OOM killer ended.
  for (int code : {1, 137}) {
    Evidence e = under_timeout("timeout 1h");
    exited(e, kRank0, 5, 3);
    exited(e, kLauncher, 6, code);
    exited(e, kTimeout, 6.1, code);
    e.run.exit_code = code;
    Diagnosis d = diagnose(e);
    ASSERT_FALSE(d.findings.empty());
    EXPECT_NE(d.findings[0].kind, FindingKind::kStopRequested) << code;
  }
  // No limit: a duration of 0 or beyond any job.
  for (const char* words : {"timeout 0", "timeout inf", "timeout 1e30", "timeout --signal=KILL"}) {
    Evidence e = under_timeout(words);
    exited(e, kRank0, 5, 3);
    exited(e, kLauncher, 6, 1);
    exited(e, kTimeout, 6.1, 1);
    e.run.exit_code = 1;
    EXPECT_NE(diagnose(e).findings.front().kind, FindingKind::kStopRequested) << words;
  }
  // A `timeout` that a rank runs around a command of its own is not the job's limit.
  Evidence e = torchrun_job();
  e.processes.push_back(proc(2000, kRank0, 500'200, "timeout 1 nvidia-smi"));
  exited(e, 2000, 3.0, 124);
  killed(e, kRank1, 10, SIGKILL);
  EXPECT_EQ(diagnose(e).findings.front().kind, FindingKind::kKilledExternally);
  // --preserve-status passes on the code of the command it stopped (128 + SIGTERM).
  e = under_timeout("timeout --preserve-status 10");
  killed(e, kRank0, 10.0, SIGTERM);
  exited(e, kLauncher, 10.1, 143);
  exited(e, kTimeout, 10.2, 143);
  e.run.exit_code = 143;
  EXPECT_EQ(diagnose(e).findings.front().title,
            "the job was stopped by its time limit: `timeout --preserve-status 10` ran out after "
            "10.0 s");
}

// It left on the request (a handler saved and exited 0, as on a preemption) or went on and
// finished: told, with how long after, and no failure is blamed on it.
TEST(RuleStopRequest, AJobThatExitedWellAfterAStopIsToldSo) {
  Evidence e = torchrun_job();
  e.events = {forwarded(10, SIGTERM, sender_named("bash"), 5)};
  exited(e, kLauncher, 30, 0);
  e.run.exit_code = 0;
  e.run.end_ns = kT0 + 30'200'000'000;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& stop = d.findings[0];
  EXPECT_EQ(stop.kind, FindingKind::kStopRequested);
  EXPECT_FALSE(stop.root_cause);
  EXPECT_EQ(stop.title, "the job exited with code 0 20.2 s after SIGTERM from pid 4242 (bash)");
  EXPECT_THAT(stop.fix, HasSubstr("resume from its last checkpoint"));
}

TEST(RuleStopRequest, AFailureBeforeTheStopStaysTheRootCause) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(5, 95, "[default0]:Traceback (most recent call last):"),
                 stderr_line(5, 96, "[default0]:ValueError: bad")};
  exited(e, kRank0, 5.5, 1);
  e.events = {forwarded(10, SIGTERM, sender_named("bash"), 2)};
  killed(e, kRank1, 10.1, SIGTERM);
  killed(e, kWorker0, 3, SIGTERM);  // before the request: its own finding
  e.run.exit_code = 1;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kPythonException);
  EXPECT_EQ(d.findings[1].kind, FindingKind::kStopRequested);
  EXPECT_EQ(d.findings[2].kind, FindingKind::kKilledExternally);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[0].consequences, Contains(1u));
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kRank1));
}

// --- rule_idle -------------------------------------------------------------------------------

// Every process of the job ended by `signal` at `seconds`, and the job with it.
void every_process_stopped(Evidence& e, double seconds, int signal) {
  for (int pid : {kRank0, kRank1, kWorker0, kWorker1}) killed(e, pid, seconds, signal);
  e.run.exit_signal = signal;
  e.run.end_ns = at(seconds + 0.4);
}

// A prefetch thread's death as threading prints it, in rank 0's torchrun prefix (`prefix`).
void prefetch_thread_died(Evidence& e, double seconds, uint64_t& number,
                          const std::string& prefix = "[default0]:") {
  print_lines(e, seconds, number,
              {"Exception in thread prefetch:", "Traceback (most recent call last):",
               "  File \"/home/user/proj/data.py\", line 6, in prefetch",
               "OSError: [Errno 5] Input/output error"},
              prefix);
}

const std::string kIdleText = "no process used CPU or printed for 30.0 s (told at +35.0 s)";

// The job-idle finding among `findings`, nullptr when none.
const Finding* idle_of(const std::vector<Finding>& findings) {
  auto idle = std::find_if(findings.begin(), findings.end(),
                           [](const Finding& f) { return f.kind == FindingKind::kJobIdle; });
  return idle == findings.end() ? nullptr : &*idle;
}

std::string stack_in(const std::string& file, int line, const std::string& function) {
  return "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n  File \"" + file +
         "\", line " + std::to_string(line) + " in " + function + "\nnative (main thread):\n";
}

TEST(RuleIdle, AJobStoppedWhileIdleSaysWhereEachProcessWaited) {
  Evidence e = torchrun_job();
  e.events = {
      {at(5), store::EventKind::kJobIdle, 0, kIdleText},
      {at(35.1), store::EventKind::kStackAtIdle, kRank0,
       "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n"
       "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
       "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 930 in wait\n"
       "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 423 in _poll\n"
       "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1133 in "
       "_try_get_data\n"
       "  File \"/home/user/proj/train.py\", line 30 in <module>\n"},
      {at(35.1), store::EventKind::kStackAtIdle, kWorker0,
       stack_in("/home/user/proj/data.py", 12, "__getitem__")},
      forwarded(40, SIGINT, kTerminal, 0),
  };
  every_process_stopped(e, 40.1, SIGINT);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  // It hung until it was stopped: the hang is why it was stopped, and the stop its consequence.
  const Finding& idle = d.findings[0];
  EXPECT_EQ(idle.kind, FindingKind::kJobIdle);
  EXPECT_TRUE(idle.root_cause);
  EXPECT_EQ(idle.severity, Severity::kError);
  EXPECT_EQ(idle.title,
            "the job hung at +5.0 s and did not move again until it was stopped, 35.0 s later: no "
            "process used CPU or printed anything; worker 0 of rank 0 (pid 1020) is at "
            "/home/user/proj/data.py:12 in __getitem__");
  EXPECT_EQ(d.findings[1].kind, FindingKind::kStopRequested);
  EXPECT_THAT(idle.consequences, ElementsAre(1u));
  EXPECT_THAT(d.findings[1].evidence,
              Contains(std::string("the job went idle at +5.0 s and was still idle then: no "
                                   "process used CPU or printed anything")));
  EXPECT_THAT(idle.evidence, Contains(kIdleText));
  EXPECT_THAT(idle.evidence, Contains(std::string("worker 0 of rank 0 (pid 1020) was in "
                                                  "/home/user/proj/data.py:12 in __getitem__")));
  // Library frames only, innermost: the user's line where it waits follows them.
  EXPECT_THAT(idle.evidence, Contains(std::string(
                                 "rank 0 (pid 1010) was in /usr/lib/python3.11/selectors.py:415 in "
                                 "select, called from /usr/lib/python3.11/multiprocessing/"
                                 "connection.py:930 in wait, called from /usr/lib/python3.11/"
                                 "multiprocessing/connection.py:423 in _poll, from your code at "
                                 "/home/user/proj/train.py:30 in <module>")));
  EXPECT_THAT(idle.pids, ElementsAre(kRank0, kWorker0));
  EXPECT_THAT(idle.ranks, ElementsAre(0));
  EXPECT_THAT(idle.fix, HasSubstr("cv2.setNumThreads(0)"));

  // Moving as it was stopped (KeyboardInterrupt's traceback, a checkpoint saved on the way out
  // and then told) is no recovery from the hang.
  for (double resumed : {40.3, 45.0}) {
    Evidence moved = e;
    moved.events.push_back({at(resumed), store::EventKind::kJobResumed, 0, ""});
    d = diagnose(moved);
    ASSERT_EQ(d.findings.size(), 2u);
    EXPECT_TRUE(d.findings[0].root_cause);
    EXPECT_THAT(d.findings[0].title, HasSubstr("did not move again until it was stopped"));
  }
}

// A worker's dump as a DataLoader's worker started by fork has it: the parent's frames, copied
// at fork, below multiprocessing's _bootstrap. `inner`: its own frames, innermost first.
std::string worker_stack(const std::string& inner) {
  return "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n" + inner +
         "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302 "
         "in _worker_loop\n"
         "  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 108 in run\n"
         "  File \"/usr/lib/python3.11/multiprocessing/process.py\", line 314 in _bootstrap\n"
         "  File \"/usr/lib/python3.11/multiprocessing/popen_fork.py\", line 71 in _launch\n"
         "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1034 in "
         "__init__\n"
         "  File \"/home/user/proj/train.py\", line 30 in <module>\n"
         "native (main thread):\n";
}

const std::string kWaitsForBatch =
    "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
    "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 113 in get\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1120 in "
    "_try_get_data\n"
    "  File \"/home/user/proj/train.py\", line 30 in <module>\n";

// The rank waits for a batch, and its worker is in the middle of a sample (in the fetcher),
// where a read without a timeout never returns: the worker, and the DataLoader's timeout.
TEST(RuleIdle, AWorkerInTheMiddleOfASampleIsWhatItsRankWaitsFor) {
  Evidence e = torchrun_job();
  const std::string fetching = worker_stack(
      "  File \"/usr/lib/python3.11/socket.py\", line 706 in readinto\n"
      "  File \"/home/user/proj/data.py\", line 12 in __getitem__\n"
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58 in "
      "fetch\n");
  const std::string idle_worker = worker_stack(
      "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
      "  File \"/usr/lib/python3.11/multiprocessing/queues.py\", line 113 in get\n");
  e.events = {
      {at(5), store::EventKind::kJobIdle, 0, kIdleText},
      {at(35.1), store::EventKind::kStackAtIdle, kRank0, kWaitsForBatch},
      {at(35.1), store::EventKind::kStackAtIdle, kWorker0, fetching},
      {at(35.1), store::EventKind::kStackAtIdle, kWorker1, idle_worker},
      forwarded(40, SIGINT, kTerminal, 0),
  };
  every_process_stopped(e, 40.1, SIGINT);
  Diagnosis d = diagnose(e);
  const Finding* idle = idle_of(d.findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title,
              testing::EndsWith("no process used CPU or printed anything; rank 0 (pid 1010) waits "
                                "for a batch from worker 0 of rank 0 (pid 1020), which is at "
                                "/home/user/proj/data.py:12 in __getitem__, in "
                                "/usr/lib/python3.11/socket.py:706 in readinto"));
  EXPECT_THAT(idle->fix, HasSubstr("Pass timeout=SECONDS to the DataLoader"));
  // The frames below a forked worker's start are its parent's: not where the worker is.
  EXPECT_THAT(idle->evidence,
              Contains(std::string("worker 0 of rank 1 (pid 1021) was in "
                                   "/usr/lib/python3.11/selectors.py:415 in select, called from "
                                   "/usr/lib/python3.11/multiprocessing/queues.py:113 in get, "
                                   "called from /usr/lib/python3/dist-packages/torch/utils/data/"
                                   "_utils/worker.py:302 in _worker_loop")));

  // Two workers of rank 0 in the middle of a sample: which one it waits for depends on the order
  // of the batches. Rank 1's worker is rank 1's matter, and a process that a worker forked runs
  // the fetcher only in its parent's copied frames.
  Evidence two = e;
  two.events[3].text = fetching;
  const std::string worker_cmdline = process(two, kWorker0).cmdline;
  two.processes.push_back(proc(1022, kRank0, 500'302, worker_cmdline));
  two.processes.back().forked = true;
  two.processes.push_back(proc(1030, kWorker0, 500'400, worker_cmdline));
  two.processes.back().forked = true;
  two.events.insert(two.events.begin() + 4,
                    {{at(35.1), store::EventKind::kStackAtIdle, kRank1, kWaitsForBatch},
                     {at(35.1), store::EventKind::kStackAtIdle, 1022, fetching},
                     {at(35.1), store::EventKind::kStackAtIdle, 1030,
                      worker_stack("  File \"/usr/lib/python3.11/multiprocessing/pool.py\", line "
                                   "114 in worker\n"
                                   "  File \"/usr/lib/python3.11/multiprocessing/process.py\", "
                                   "line 314 in _bootstrap\n"
                                   "  File \"/usr/lib/python3/dist-packages/torch/utils/data/"
                                   "_utils/fetch.py\", line 58 in fetch\n")}});
  d = diagnose(two);
  idle = idle_of(d.findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title, HasSubstr("rank 0 (pid 1010) waits for a batch from worker 0 of rank 0 "
                                     "(pid 1020)"));
  EXPECT_THAT(idle->title, testing::EndsWith("(1 other worker is in the middle of a sample too)"));

  // A rank that waits elsewhere does not wait for its worker's sample.
  e.events[1].text = stack_in("/home/user/proj/train.py", 44, "<module>");
  d = diagnose(e);
  idle = idle_of(d.findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title, Not(HasSubstr("waits for a batch")));
  EXPECT_THAT(idle->fix, Not(HasSubstr("timeout=SECONDS")));
}

TEST(RuleIdle, APauseTheJobCameOutOfIsInfo) {
  Evidence e = torchrun_job();
  e.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText},
              {at(50), store::EventKind::kJobResumed, 0, "45.0 s after the job went idle"}};
  exited(e, kLauncher, 80, 0);
  e.run.exit_code = 0;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].severity, Severity::kInfo);
  EXPECT_EQ(d.findings[0].title,
            "the job paused at +5.0 s for 45.0 s: no process used CPU or printed anything");
  // A stop it handled and went on from (a SIGHUP it ignores) is no end of the pause.
  for (double resumed : {50.0, 20.5}) {
    Evidence handled = e;
    handled.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText},
                      forwarded(20, SIGHUP, sender_named("bash"), 5),
                      {at(resumed), store::EventKind::kJobResumed, 0, ""}};
    Diagnosis h = diagnose(handled);
    ASSERT_FALSE(h.findings.empty());
    EXPECT_THAT(h.findings[0].title, HasSubstr("the job paused at +5.0 s")) << resumed;
  }

  // Idle until it ended well: a long wait, not a hang.
  e.events.pop_back();
  e.run.end_ns = at(80);
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].severity, Severity::kInfo);
  EXPECT_THAT(d.findings[0].title, HasSubstr("did not move again before it ended, 75.0 s later"));
}

// A DataLoader worker of rank 1 hangs; rank 0 waits in DDP's all-reduce (unseen by the stall
// watch under gloo) until its timeout, whose traceback ends the spell: no recovery, a hang, and
// the timeout its consequence.
TEST(RuleIdle, ASpellEndedByATimeoutIsTheHang) {
  Evidence e = torchrun_job();
  e.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText},
              {at(9), store::EventKind::kStackAtIdle, kWorker1,
               stack_in("/home/user/proj/data.py", 8, "__getitem__")},
              {at(15.2), store::EventKind::kJobResumed, 0, "10.2 s after the job went idle"}};
  e.log_lines = {
      stderr_line(15, 1, "[default0]:Traceback (most recent call last):"),
      stderr_line(15, 2, "[default0]:  File \"/home/user/proj/train.py\", line 12, in <module>"),
      stderr_line(15, 3,
                  "[default0]:RuntimeError: [./gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
                  "waiting 8000ms for recv operation to complete"),
  };
  exited(e, kRank0, 15.1, 1);
  killed(e, kRank1, 15.3, SIGTERM);
  exited(e, kLauncher, 15.5, 1);
  e.run.exit_code = 1;
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& idle = d.findings[0];
  EXPECT_EQ(idle.kind, FindingKind::kJobIdle);
  EXPECT_TRUE(idle.root_cause);
  EXPECT_EQ(idle.title,
            "the job hung at +5.0 s until rank 0 (pid 1010) gave up waiting, 10.2 s later: no "
            "process used CPU or printed anything; worker 0 of rank 1 (pid 1021) is at "
            "/home/user/proj/data.py:8 in __getitem__");
  bool timeout_caused = false;
  for (size_t i : idle.consequences)
    timeout_caused |= d.findings[i].kind == FindingKind::kCollectiveMissing;
  EXPECT_TRUE(timeout_caused);
}

TEST(RuleIdle, ACollectiveHangIsLeftToTheStallWatch) {
  Evidence e = torchrun_job();
  e.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText}};
  store::CollectiveIssue hang;
  hang.t_ns = at(35);
  hang.first_ns = at(4.5);
  hang.kind = store::IssueKind::kMissing;
  hang.field = store::IssueField::kMissing;
  e.collective_issues = {hang};
  for (const Finding& f : diagnose(e).findings) EXPECT_NE(f.kind, FindingKind::kJobIdle);
}

// A breakpoint() left in the code, under a launcher: the rank at the prompt is named, and the fix
// is about the prompt, whether the idle watch or the stall watch saw it first.
TEST(RuleIdle, APromptNobodyAnswersIsNamed) {
  Evidence e = torchrun_job();
  const std::string prompt = "waits for input on its standard input (a pipe)";
  e.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText},
              {at(35.0), store::EventKind::kStdinWait, kRank0, prompt},
              {at(35.1), store::EventKind::kStackAtIdle, kRank0,
               stack_in("/usr/lib/python3.11/cmd.py", 126, "cmdloop")}};
  killed(e, kRank0, 40.1, SIGTERM);
  e.run.exit_signal = SIGTERM;
  e.run.end_ns = at(40.5);
  std::vector<Finding> findings = diagnose(e).findings;
  const Finding* idle = idle_of(findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title, EndsWith(": rank 0 (pid 1010) " + prompt));
  EXPECT_THAT(idle->evidence, Contains("rank 0 (pid 1010) " + prompt));
  EXPECT_THAT(idle->pids, ElementsAre(kRank0));
  EXPECT_THAT(idle->fix, HasSubstr("breakpoint()"));

  // The stall watch told the hang first: its missing rank is the one at the prompt.
  store::CollectiveIssue hang;
  hang.t_ns = at(35);
  hang.first_ns = at(4.5);
  hang.kind = store::IssueKind::kMissing;
  hang.field = store::IssueField::kMissing;
  hang.op = "barrier";
  hang.number = 1;
  hang.ranks.resize(2);
  hang.ranks[0].group_rank = 0;
  hang.ranks[0].pid = kRank0;
  hang.ranks[0].state = store::RankState::kNeverCalled;
  hang.ranks[1].group_rank = 1;
  hang.ranks[1].pid = kRank1;
  hang.ranks[1].state = store::RankState::kWaiting;
  e.collective_issues = {hang};
  findings = diagnose(e).findings;
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, FindingKind::kCollectiveMissing);
  EXPECT_THAT(findings[0].title, EndsWith("; rank 0 (pid 1010) " + prompt));
  EXPECT_THAT(findings[0].evidence, Contains("rank 0 (pid 1010) " + prompt + " at +35.0 s"));
  EXPECT_THAT(findings[0].fix, HasSubstr("breakpoint()"));
  for (const Finding& f : findings) EXPECT_NE(f.kind, FindingKind::kJobIdle);
}

// Waits for peers that never started: the launcher at its rendezvous (a node missing), a rank in
// init_process_group (a rank missing). Real frames of PyTorch 1.13.
TEST(RuleIdle, AWaitForPeersThatNeverCameIsNamed) {
  const std::string elastic = "/usr/lib/python3/dist-packages/torch/distributed/elastic/";
  Evidence e = torchrun_job();
  e.events = {{at(2), store::EventKind::kJobIdle, 0, kIdleText},
              {at(32.1), store::EventKind::kStackAtIdle, kLauncher,
               "python:\nCurrent thread 0x00007fa021851680 (most recent call first):\n  File \"" +
                   elastic + "rendezvous/utils.py\", line 161 in _delay\n  File \"" + elastic +
                   "rendezvous/dynamic_rendezvous.py\", line 643 in run\n  File \"" + elastic +
                   "agent/server/api.py\", line 538 in _rendezvous\n"}};
  e.run.exit_signal = SIGTERM;
  e.run.end_ns = at(40);
  std::vector<Finding> findings = diagnose(e).findings;
  const Finding* idle = idle_of(findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title, EndsWith(": launcher (pid 1000) waits at its rendezvous for the other "
                                    "nodes to join"));
  EXPECT_THAT(idle->evidence, Contains(HasSubstr("launcher (pid 1000) was in " + elastic +
                                                 "rendezvous/utils.py:161 in _delay")));
  EXPECT_THAT(idle->fix, HasSubstr("--nnodes"));

  const std::string torch = "/usr/lib/python3/dist-packages/torch/distributed/";
  e.events[1] = {at(32.1), store::EventKind::kStackAtIdle, kRank0,
                 "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n  File \"" +
                     torch + "rendezvous.py\", line 177 in _create_c10d_store\n  File \"" + torch +
                     "distributed_c10d.py\", line 754 in init_process_group\n"};
  findings = diagnose(e).findings;
  idle = idle_of(findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title, EndsWith(": rank 0 (pid 1010) waits in init_process_group for the "
                                    "other ranks to join"));

  // It waits for ranks the launch never started: the code asked for a world of 4.
  for (ProcessRecord& p : e.processes) {
    if (p.rank && !p.forked) p.init_world_size = 4;
  }
  findings = diagnose(e).findings;
  idle = idle_of(findings);
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->title, EndsWith(" to join; init_process_group was asked for a world of 4 "
                                    "ranks, but the launcher set WORLD_SIZE=2"));
  EXPECT_THAT(idle->evidence,
              Contains("rank 1 (pid 1011) called init_process_group(world_size=4)"));
  EXPECT_THAT(idle->fix, HasSubstr("leave out rank= and world_size="));
}

// A thread died of an exception; its process went on and waited for it, and the job hung until
// it was stopped: the thread's exception is the root cause, the hang its consequence. Had the
// job gone on moving, it would be a warning.
TEST(RuleIdle, AThreadThatDiedBeforeAHangIsItsCause) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  prefetch_thread_died(e, 4.9, number);
  e.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText},
              {at(35.1), store::EventKind::kStackAtIdle, kRank0,
               stack_in("/usr/lib/python3.11/queue.py", 171, "get")},
              forwarded(40, SIGTERM, kOutside, 1)};
  every_process_stopped(e, 40.1, SIGTERM);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings[0];
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.kind, FindingKind::kPythonException);
  EXPECT_EQ(root.title,
            "thread prefetch of rank 0 (pid 1010) raised OSError: [Errno 5] Input/output error; "
            "the job then hung");
  EXPECT_THAT(root.fix, HasSubstr("queue.get(timeout=...)"));
  auto idle = std::find_if(d.findings.begin(), d.findings.end(),
                           [](const Finding& f) { return f.kind == FindingKind::kJobIdle; });
  ASSERT_NE(idle, d.findings.end());
  EXPECT_THAT(root.consequences, Contains(idle - d.findings.begin()));

  // The job moved again: the thread's death is a warning, and the rank's own end is its own.
  e.events = {{at(5), store::EventKind::kJobIdle, 0, kIdleText},
              {at(9), store::EventKind::kJobResumed, 0, ""}};
  for (int pid : {kRank0, kRank1, kWorker0, kWorker1}) {
    process(e, pid).exit_signal.reset();
    exited(e, pid, 40.1, 0);
  }
  e.run.exit_signal.reset();
  e.run.exit_code = 0;
  d = diagnose(e);
  auto thread = std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.kind == FindingKind::kPythonException;
  });
  ASSERT_NE(thread, d.findings.end());
  EXPECT_EQ(thread->severity, Severity::kWarning);
  EXPECT_THAT(thread->title, EndsWith("; the process went on without it"));
}

// A thread that died minutes before the job hung (a logger's upload) did not cause the hang; one
// that died after its process's own exception died in its teardown, and is no finding.
TEST(RuleIdle, AThreadThatDiedLongBeforeAHangOrInTeardownIsNoCause) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  prefetch_thread_died(e, 4.9, number);
  e.events = {{at(400), store::EventKind::kJobIdle, 0, kIdleText},
              forwarded(440, SIGTERM, kOutside, 1)};
  every_process_stopped(e, 440.1, SIGTERM);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kJobIdle);
  auto thread = std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.title.starts_with("thread prefetch of rank 0");
  });
  ASSERT_NE(thread, d.findings.end());
  EXPECT_EQ(thread->severity, Severity::kWarning);

  Evidence teardown = torchrun_job();
  number = 1;
  print_lines(teardown, 3.0, number,
              {"Traceback (most recent call last):",
               "  File \"/home/user/proj/train.py\", line 30, in <module>", "KeyError: 'label'"},
              "[default0]:");
  prefetch_thread_died(teardown, 3.5, number);
  exited(teardown, kRank0, 3.6, 1);
  for (const Finding& f : diagnose(teardown).findings) {
    EXPECT_EQ(f.title.find("thread prefetch"), std::string::npos) << f.title;
  }
}

// Output without a launcher prefix, where no process failed: the hook's mark of the thread's
// death names the process that printed its traceback.
TEST(RuleIdle, AThreadsTracebackIsTheProcessThatMarkedItsDeath) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  prefetch_thread_died(e, 4.9, number, "");
  e.events = {{at(4.85), store::EventKind::kThreadDied, kRank1, ""}};
  for (int pid : {kLauncher, kRank0, kRank1, kWorker0, kWorker1}) exited(e, pid, 9, 0);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].title,
            "thread prefetch of rank 1 (pid 1011) raised OSError: [Errno 5] Input/output error; "
            "the process went on without it");
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kRank1));
}

// Two ranks' threads die at once, their tracebacks unprefixed and read in the other order than
// the marks: each goes to the process that marked a thread of its name.
TEST(RuleIdle, ThreadTracebacksGoToTheProcessThatMarkedThatName) {
  Evidence e = torchrun_job();
  e.events = {{at(4.80), store::EventKind::kThreadDied, kRank1, "prefetch"},
              {at(4.81), store::EventKind::kThreadDied, kRank0, "Thread-3 (load_s"}};
  uint64_t number = 1;
  print_lines(e, 4.9, number,
              {"Exception in thread Thread-3 (load_shard):", "Traceback (most recent call last):",
               "  File \"/home/user/proj/data.py\", line 9, in load_shard", "KeyError: 'shard-7'"},
              "");
  prefetch_thread_died(e, 4.95, number, "");
  for (int pid : {kLauncher, kRank0, kRank1, kWorker0, kWorker1}) exited(e, pid, 9, 0);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  for (const Finding& f : d.findings) {
    EXPECT_THAT(f.pids, ElementsAre(f.title.starts_with("thread prefetch") ? kRank1 : kRank0))
        << f.title;
  }
}

// The process failed soon after its thread died (it gave up waiting for the thread's work): the
// thread's exception is the cause, the process's own its consequence.
TEST(RuleIdle, AThreadThatDiedJustBeforeItsProcessFailedIsTheCause) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  prefetch_thread_died(e, 3.0, number);
  print_lines(e, 5.0, number,
              {"Traceback (most recent call last):",
               "  File \"/home/user/proj/train.py\", line 30, in <module>",
               "  File \"/usr/lib/python3.11/queue.py\", line 179, in get", "_queue.Empty"},
              "[default0]:");
  exited(e, kRank0, 5.1, 1);
  Diagnosis d = diagnose(e);
  ASSERT_GE(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].title,
            "thread prefetch of rank 0 (pid 1010) raised OSError: [Errno 5] Input/output error; "
            "its process failed 2.0 s later");
  EXPECT_THAT(d.findings[0].consequences, Contains(1u));
  EXPECT_EQ(d.findings[1].title, "rank 0 (pid 1010) raised _queue.Empty");
}

}  // namespace
}  // namespace traindoc::analysis
