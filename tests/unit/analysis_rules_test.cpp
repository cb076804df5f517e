// Tests of the crash, killed and failed-exit rules and of the ordering by cause, through
// diagnose() on the evidence of a torchrun job: a launcher, two ranks, one DataLoader worker each.
#include "analysis/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture

using store::Crash;
using store::Evidence;
using store::HostSample;
using store::ProcessRecord;
using testing::Contains;
using testing::ElementsAre;
using testing::EndsWith;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;
using testing::UnorderedElementsAre;

store::NativeFrame frame(uint64_t address, const std::string& module, uint64_t load_base,
                         const std::string& function, const std::string& file = "", int line = 0) {
  store::NativeFrame f;
  f.address = address;
  f.module = module;
  f.module_offset = address - load_base;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

const char* const kMaps =
    "55d0c6a00000-55d0c6a6e000 r--p 00000000 08:01 1312345                    "
    "/usr/bin/python3.11\n"
    "55d0c6a6e000-55d0c6d4a000 r-xp 0006e000 08:01 1312345                    "
    "/usr/bin/python3.11\n"
    "7f2b14000000-7f2b18000000 rw-s 00000000 00:1a 4242                       "
    "/dev/shm/torch_123\n"
    "7f2b3e228000-7f2b3e3bd000 r-xp 00028000 08:01 1311111                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f2b3e601000-7f2b3e610000 r-xp 00001000 08:01 1600001                    "
    "/home/user/proj/build/libaugment.so\n"
    "7ffd4a1e0000-7ffd4a201000 rw-p 00000000 00:00 0                          [stack]\n";

// A SIGSEGV at address 0 in the user's augmentation library, called from memmove's caller.
Crash segv(int pid, uint64_t start_ticks, double seconds) {
  Crash c;
  c.pid = pid;
  c.start_ticks = start_ticks;
  c.tid = pid;
  c.thread_name = "python3.11";
  c.signo = SIGSEGV;
  c.code = SEGV_MAPERR;
  c.fault_addr = 0;
  c.time_ns = at(seconds);
  c.pc = 0x7f2b3e39dabc;
  c.sp = 0x7ffd4a1ff8a0;
  c.stack_lo = 0x7ffd4a201000 - 8 * kMiB;
  c.stack_hi = 0x7ffd4a201000;
  c.frames = {
      frame(0x7f2b3e39dabc, "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f2b3e200000,
            "__memmove_avx_unaligned_erms"),
      frame(0x7f2b3e6012f4, "/home/user/proj/build/libaugment.so", 0x7f2b3e600000,
            "augment::flip_rows(float*, int)", "/home/user/proj/src/augment.cpp", 42),
      frame(0x7f2b2c1d3e40, "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so",
            0x7f2b2a400000, "at::native::copy_"),
      frame(0x55d0c6b2f1a0, "/usr/bin/python3.11", 0x55d0c6a00000, "_PyEval_EvalFrameDefault"),
  };
  c.maps = kMaps;
  c.python_traceback =
      "Current thread 0x00007f2b3e1f4740 (most recent call first):\n"
      "  File \"/home/user/proj/augment.py\", line 12 in flip\n"
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 308 in "
      "_worker_loop\n";
  return c;
}

const std::string kDataLoaderError =
    "RuntimeError: DataLoader worker (pid 42) is killed by signal: Segmentation fault.";

// --- rule_native_crash ---------------------------------------------------------------------

TEST(RuleNativeCrash, CrashInAWorkerIsAWorkerCrash) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kWorker0, 500'300, 10)};
  killed(e, kWorker0, 10.05, SIGSEGV);  // the crash record explains it: no second finding
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "worker-crash");
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_TRUE(f.root_cause);
  EXPECT_THAT(f.ranks, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(kWorker0));
  EXPECT_THAT(f.title, HasSubstr("worker 0 of rank 0 (pid 1020) died of SIGSEGV"));
  EXPECT_THAT(f.title, HasSubstr("null pointer"));
  EXPECT_THAT(f.fix, HasSubstr("num_workers=0"));
  EXPECT_THAT(f.evidence,
              Contains(std::string("crash record of pid 1020, thread 1020 \"python3.11\": "
                                   "SIGSEGV si_code 1 at +10.0 s")));
  EXPECT_THAT(f.evidence, Contains(std::string("blame frame #1: augment::flip_rows(float*, int) "
                                               "(libaugment.so) at augment.cpp:42")));
  EXPECT_THAT(f.evidence, Contains(std::string("Python frame that called into native code: File "
                                               "\"/home/user/proj/augment.py\", line 12 in flip")));
  EXPECT_DOUBLE_EQ(f.confidence, 0.9);
}

TEST(RuleNativeCrash, ShmExhaustedInAWorkerStaysShmExhausted) {
  Evidence e = torchrun_job();
  Crash c = segv(kWorker1, 500'301, 10);
  c.signo = SIGBUS;
  c.code = BUS_ADRERR;
  c.fault_addr = 0x7f2b16000000;
  e.crashes = {c};
  HostSample h = e.host_samples.front();
  h.t_ns = at(9.8);
  h.shm_total = 64 * kMiB;
  h.shm_used = 64 * kMiB;
  e.host_samples.push_back(h);
  killed(e, kWorker1, 10.05, SIGBUS);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "shm-exhausted");
  EXPECT_THAT(f.ranks, ElementsAre(1));
  EXPECT_THAT(f.title, HasSubstr("worker 0 of rank 1 (pid 1021) died of SIGBUS"));
  EXPECT_THAT(f.evidence,
              Contains(std::string("/dev/shm at that time: 64.0 MiB used of 64.0 MiB")));
  EXPECT_THAT(f.fix, Not(HasSubstr("reproduce it in the main process")));
}

TEST(RuleNativeCrash, CrashInARankIsANativeCrash) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kRank1, 500'101, 10)};
  killed(e, kRank1, 10.05, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "native-crash");
  EXPECT_THAT(f.ranks, ElementsAre(1));
  EXPECT_THAT(f.pids, ElementsAre(kRank1));
  EXPECT_THAT(f.title, HasSubstr("rank 1 (pid 1011) died of SIGSEGV"));
  EXPECT_THAT(f.fix, Not(HasSubstr("num_workers=0, where")));
}

TEST(RuleNativeCrash, MissingPythonTracebackOfAPythonProcessIsExplained) {
  Evidence e = torchrun_job();
  Crash c = segv(kRank0, 500'100, 10);
  c.python_traceback.clear();
  e.crashes = {c};
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const std::vector<std::string>& evidence = d.findings[0].evidence;
  EXPECT_THAT(evidence, Contains(HasSubstr("CPython 3.13")));
  EXPECT_THAT(evidence, Not(Contains(HasSubstr("Python frame that called"))));
}

TEST(RuleNativeCrash, NoTracebackNoteForANonPythonProcess) {
  Evidence e;
  e.run.root_pid = 2000;
  e.processes = {proc(2000, 999, 600'000, "/home/user/proj/build/trainer --config run.yaml")};
  Crash c = segv(2000, 600'000, 5);
  c.python_traceback.clear();
  e.crashes = {c};
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "native-crash");
  EXPECT_THAT(d.findings[0].evidence, Not(Contains(HasSubstr("CPython"))));
}

TEST(RuleNativeCrash, CrashOfAnUnknownProcess) {
  Evidence e = torchrun_job();
  Crash c = segv(5555, 0, 10);
  c.other_crashes = 2;
  c.frames.clear();
  e.crashes = {c};
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "native-crash");
  EXPECT_THAT(f.title, HasSubstr("process 5555 died of SIGSEGV"));
  EXPECT_THAT(f.ranks, IsEmpty());
  EXPECT_THAT(f.evidence, Contains(std::string("2 other thread(s) crashed at the same time")));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("blame frame"))));
  EXPECT_DOUBLE_EQ(f.confidence, 0.7);
}

TEST(RuleNativeCrash, AtMostEightFramesAreListed) {
  Evidence e = torchrun_job();
  Crash c = segv(kRank0, 500'100, 10);
  while (c.frames.size() < 20) c.frames.push_back(c.frames.back());
  e.crashes = {c};
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_THAT(d.findings[0].evidence, Contains(HasSubstr("  #7 ")));
  EXPECT_THAT(d.findings[0].evidence, Not(Contains(HasSubstr("  #8 "))));
}

// --- rule_killed ---------------------------------------------------------------------------

HostSample host(double seconds) {
  HostSample h;
  h.t_ns = at(seconds);
  h.mem_total = 16 * kGiB;
  h.mem_available = 9 * kGiB;
  h.cgroup_version = 2;
  h.cgroup_current = 5 * kGiB;
  h.cgroup_max = 8 * kGiB;
  h.cgroup_oom_kills = 0;
  return h;
}

TEST(RuleKilled, SigkillWithOomKillCountRisingIsHostOom) {
  Evidence e = torchrun_job();
  e.host_samples = {host(8), host(9), host(10), host(11)};
  e.host_samples[3].cgroup_oom_kills = 1;
  killed(e, kWorker0, 10.5, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "host-oom-killed");
  EXPECT_THAT(f.ranks, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(kWorker0));
  EXPECT_THAT(f.title, HasSubstr("worker 0 of rank 0 (pid 1020) was killed by the out-of-memory"));
  EXPECT_THAT(f.evidence,
              Contains(std::string("the memory cgroup's oom_kill count rose from 0 to 1")));
  EXPECT_THAT(f.evidence,
              Contains(std::string("worker 0 of rank 0 (pid 1020) ended by SIGKILL (seen "
                                   "by parent) at +10.5 s")));
  EXPECT_THAT(f.fix, HasSubstr("dmesg"));
}

TEST(RuleKilled, SigkillWithCgroupAtItsLimitIsHostOom) {
  Evidence e = torchrun_job();
  e.host_samples = {host(17), host(19), host(21)};
  e.host_samples[1].cgroup_current = 8 * kGiB - 200 * kMiB;  // 97.6%
  killed(e, kRank0, 20, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "host-oom-killed");
  EXPECT_THAT(d.findings[0].evidence,
              Contains(std::string("memory cgroup at 7.8 GiB of its 8.0 GiB limit")));
}

TEST(RuleKilled, CgroupAtItsLimitLongBeforeTheEndIsNotEvidence) {
  Evidence e = torchrun_job();
  e.host_samples = {host(5), host(10), host(19), host(21)};
  e.host_samples[0].cgroup_current = 8 * kGiB - 100 * kMiB;  // 15 s before the end
  killed(e, kRank0, 20, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "killed-externally");
}

TEST(RuleKilled, SigkillWithHostMemoryExhaustedIsHostOom) {
  Evidence e = torchrun_job();
  HostSample h = host(19.5);
  h.cgroup_version = 0;
  h.cgroup_current.reset();
  h.cgroup_max.reset();
  h.cgroup_oom_kills.reset();
  h.mem_available = 256 * kMiB;  // 1.6% of 16 GiB
  e.host_samples = {h};
  killed(e, kRank1, 20, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "host-oom-killed");
  EXPECT_THAT(d.findings[0].ranks, ElementsAre(1));
  EXPECT_THAT(d.findings[0].evidence,
              Contains(std::string("the machine had 256 MiB available of 16.0 GiB")));
}

TEST(RuleKilled, HostMemoryAboveThreePercentIsNotEvidence) {
  Evidence e = torchrun_job();
  HostSample h = host(19.5);
  h.cgroup_max.reset();        // unlimited
  h.mem_available = 1 * kGiB;  // 6%
  e.host_samples = {h};
  killed(e, kRank1, 20, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "killed-externally");
}

TEST(RuleKilled, SigkillOfAWorkerWithoutOomEvidenceIsAWorkerCrash) {
  Evidence e = torchrun_job();
  e.host_samples = {host(9), host(11)};
  killed(e, kWorker1, 10, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "worker-crash");
  EXPECT_THAT(f.ranks, ElementsAre(1));
  EXPECT_THAT(f.title, HasSubstr("killed by SIGKILL from outside"));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("no OOM kill was counted")));
}

TEST(RuleKilled, SigkillOfARankWithoutOomEvidenceIsKilledExternally) {
  Evidence e = torchrun_job();
  e.host_samples = {host(9), host(11)};
  killed(e, kRank0, 10, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "killed-externally");
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_THAT(f.title, HasSubstr("rank 0 (pid 1010) was killed by SIGKILL from outside"));
  EXPECT_THAT(f.fix, HasSubstr("dmesg"));
  EXPECT_THAT(f.fix, HasSubstr("Out of memory: Killed process 1010"));
}

TEST(RuleKilled, PeakRssIsCited) {
  Evidence e = torchrun_job();
  store::ProcSample s;
  s.t_ns = at(9);
  s.pid = kWorker0;
  s.start_ticks = 500'300;
  s.rss = 3 * kGiB + 200 * kMiB;
  e.proc_samples = {s};
  killed(e, kWorker0, 10, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_THAT(d.findings[0].evidence, Contains(std::string("its peak RSS: 3.2 GiB")));
}

TEST(RuleKilled, SigtermIsAWarning) {
  Evidence e = torchrun_job();
  killed(e, kRank1, 12, SIGTERM);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "killed-externally");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.root_cause);
  EXPECT_THAT(f.title, HasSubstr("rank 1 (pid 1011) was stopped by SIGTERM"));
}

// --- rule_stop_request ---------------------------------------------------------------------

store::Event forwarded(double seconds, const std::string& text) {
  return {at(seconds), "signal-forwarded", 4242, text};
}

// torchrun sent SIGTERM by a scheduler, as Debian's PyTorch prints it.
TEST(RuleStopRequest, SchedulersSigtermIsTheCauseOfTheLaunchersExit) {
  Evidence e = torchrun_job();
  e.events = {forwarded(10, "SIGTERM from pid 4242 (slurmstepd), passed on to 5 process(es)")};
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
  e.events.push_back({at(10), "stack-at-stop", kRank1, rank1_stack});
  e.events.push_back({at(10), "stack-at-stop", kLauncher, rank1_stack});
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
  EXPECT_EQ(stop.kind, "stop-requested");
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
  EXPECT_EQ(d.findings[1].kind, "killed-externally");
  EXPECT_EQ(d.findings[1].title, "launcher (pid 1000): got SIGTERM and stopped its ranks");
}

TEST(RuleStopRequest, SecondInterruptKills) {
  Evidence e = torchrun_job();
  e.events = {forwarded(10, "SIGINT from the terminal, passed on to 0 process(es)"),
              forwarded(12, "SIGKILL at the second interrupt, sent to 5 process(es)")};
  killed(e, kRank0, 12.01, SIGKILL);
  e.run.exit_signal = SIGKILL;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].title,
            "the job was stopped by SIGINT from the terminal, then killed at the second interrupt");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("catches SIGINT"));
}

TEST(RuleStopRequest, AJobThatWentOnWasNotStopped) {
  Evidence e = torchrun_job();
  e.events = {forwarded(10, "SIGTERM from pid 4242 (bash), passed on to 5 process(es)")};
  exited(e, kLauncher, 30, 0);
  e.run.exit_code = 0;
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

TEST(RuleStopRequest, AFailureBeforeTheStopStaysTheRootCause) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(5, 95, "[default0]:Traceback (most recent call last):"),
                 stderr_line(5, 96, "[default0]:ValueError: bad")};
  exited(e, kRank0, 5.5, 1);
  e.events = {forwarded(10, "SIGTERM from pid 4242 (bash), passed on to 2 process(es)")};
  killed(e, kRank1, 10.1, SIGTERM);
  killed(e, kWorker0, 3, SIGTERM);  // before the request: its own finding
  e.run.exit_code = 1;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[0].kind, "python-exception");
  EXPECT_EQ(d.findings[1].kind, "stop-requested");
  EXPECT_EQ(d.findings[2].kind, "killed-externally");
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[0].consequences, Contains(1u));
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kRank1));
}

// --- rule_idle -------------------------------------------------------------------------------

const std::string kIdleText = "no process used CPU or printed for 30.0 s (told at +35.0 s)";

std::string stack_in(const std::string& file, int line, const std::string& function) {
  return "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n  File \"" + file +
         "\", line " + std::to_string(line) + " in " + function + "\nnative (main thread):\n";
}

TEST(RuleIdle, AJobStoppedWhileIdleSaysWhereEachProcessWaited) {
  Evidence e = torchrun_job();
  e.events = {
      {at(5), "job-idle", 0, kIdleText},
      {at(35.1), "stack-at-idle", kRank0,
       "python:\nCurrent thread 0x00007f473c8bd680 (most recent call first):\n"
       "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
       "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 930 in wait\n"
       "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 423 in _poll\n"
       "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1133 in "
       "_try_get_data\n"
       "  File \"/home/user/proj/train.py\", line 30 in <module>\n"},
      {at(35.1), "stack-at-idle", kWorker0, stack_in("/home/user/proj/data.py", 12, "__getitem__")},
      forwarded(40, "SIGINT from the terminal, passed on to 0 process(es)"),
  };
  for (int pid : {kRank0, kRank1, kWorker0, kWorker1}) killed(e, pid, 40.1, SIGINT);
  e.run.exit_signal = SIGINT;
  e.run.end_ns = at(40.5);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, "stop-requested");
  EXPECT_THAT(d.findings[0].evidence,
              Contains(std::string("the job went idle at +5.0 s and was still idle then: no "
                                   "process used CPU or printed anything")));
  const Finding& idle = d.findings[1];
  EXPECT_EQ(idle.kind, "job-idle");
  EXPECT_EQ(idle.severity, Severity::kWarning);
  EXPECT_EQ(idle.title,
            "the job went idle at +5.0 s and did not move again before it ended, 35.5 s later: no "
            "process used CPU or printed anything");
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
}

TEST(RuleIdle, APauseTheJobCameOutOfIsInfo) {
  Evidence e = torchrun_job();
  e.events = {{at(5), "job-idle", 0, kIdleText},
              {at(50), "job-resumed", 0, "45.0 s after the job went idle"}};
  exited(e, kLauncher, 80, 0);
  e.run.exit_code = 0;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].severity, Severity::kInfo);
  EXPECT_EQ(d.findings[0].title,
            "the job paused at +5.0 s for 45.0 s: no process used CPU or printed anything");

  // Idle until it ended well: a long wait, not a hang.
  e.events.pop_back();
  e.run.end_ns = at(80);
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].severity, Severity::kInfo);
  EXPECT_THAT(d.findings[0].title, HasSubstr("did not move again before it ended, 75.0 s later"));
}

TEST(RuleIdle, ACollectiveHangIsLeftToTheStallWatch) {
  Evidence e = torchrun_job();
  e.events = {{at(5), "job-idle", 0, kIdleText}};
  store::CollectiveIssue hang;
  hang.t_ns = at(35);
  hang.first_ns = at(4.5);
  hang.kind = "collective-missing";
  hang.message = "collective-missing: rank 1 never made all_reduce #3";
  e.collective_issues = {hang};
  for (const Finding& f : diagnose(e).findings) EXPECT_NE(f.kind, "job-idle");
}

// A breakpoint() left in the code, under a launcher: the rank at the prompt is named, and the fix
// is about the prompt, whether the idle watch or the stall watch saw it first.
TEST(RuleIdle, APromptNobodyAnswersIsNamed) {
  Evidence e = torchrun_job();
  const std::string prompt = "waits for input on its standard input (a pipe)";
  e.events = {
      {at(5), "job-idle", 0, kIdleText},
      {at(35.0), "stdin-wait", kRank0, prompt},
      {at(35.1), "stack-at-idle", kRank0, stack_in("/usr/lib/python3.11/cmd.py", 126, "cmdloop")}};
  killed(e, kRank0, 40.1, SIGTERM);
  e.run.exit_signal = SIGTERM;
  e.run.end_ns = at(40.5);
  std::vector<Finding> findings = diagnose(e).findings;
  auto idle = std::find_if(findings.begin(), findings.end(),
                           [](const Finding& f) { return f.kind == "job-idle"; });
  ASSERT_NE(idle, findings.end());
  EXPECT_THAT(idle->title, EndsWith(": rank 0 (pid 1010) " + prompt));
  EXPECT_THAT(idle->evidence, Contains("rank 0 (pid 1010) " + prompt));
  EXPECT_THAT(idle->pids, ElementsAre(kRank0));
  EXPECT_THAT(idle->fix, HasSubstr("breakpoint()"));

  // The stall watch told the hang first: its missing rank is the one at the prompt.
  store::CollectiveIssue hang;
  hang.t_ns = at(35);
  hang.first_ns = at(4.5);
  hang.kind = "collective-missing";
  hang.field = "missing";
  hang.op = "barrier";
  hang.number = 1;
  hang.message = "collective-missing: rank 0 never made barrier #1";
  hang.ranks.resize(2);
  hang.ranks[0].group_rank = 0;
  hang.ranks[0].pid = kRank0;
  hang.ranks[0].state = "never called it";
  hang.ranks[1].group_rank = 1;
  hang.ranks[1].pid = kRank1;
  hang.ranks[1].state = "waiting in it";
  e.collective_issues = {hang};
  findings = diagnose(e).findings;
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].kind, "collective-missing");
  EXPECT_THAT(findings[0].title, EndsWith("; rank 0 (pid 1010) " + prompt));
  EXPECT_THAT(findings[0].evidence, Contains("rank 0 (pid 1010) " + prompt + " at +35.0 s"));
  EXPECT_THAT(findings[0].fix, HasSubstr("breakpoint()"));
  for (const Finding& f : findings) EXPECT_NE(f.kind, "job-idle");
}

// Waits for peers that never started: the launcher at its rendezvous (a node missing), a rank in
// init_process_group (a rank missing). Real frames of PyTorch 1.13.
TEST(RuleIdle, AWaitForPeersThatNeverCameIsNamed) {
  const std::string elastic = "/usr/lib/python3/dist-packages/torch/distributed/elastic/";
  Evidence e = torchrun_job();
  e.events = {{at(2), "job-idle", 0, kIdleText},
              {at(32.1), "stack-at-idle", kLauncher,
               "python:\nCurrent thread 0x00007fa021851680 (most recent call first):\n  File \"" +
                   elastic + "rendezvous/utils.py\", line 161 in _delay\n  File \"" + elastic +
                   "rendezvous/dynamic_rendezvous.py\", line 643 in run\n  File \"" + elastic +
                   "agent/server/api.py\", line 538 in _rendezvous\n"}};
  e.run.exit_signal = SIGTERM;
  e.run.end_ns = at(40);
  std::vector<Finding> findings = diagnose(e).findings;
  auto idle = std::find_if(findings.begin(), findings.end(),
                           [](const Finding& f) { return f.kind == "job-idle"; });
  ASSERT_NE(idle, findings.end());
  EXPECT_THAT(idle->title, EndsWith(": launcher (pid 1000) waits at its rendezvous for the other "
                                    "nodes to join"));
  EXPECT_THAT(idle->evidence, Contains(HasSubstr("launcher (pid 1000) was in " + elastic +
                                                 "rendezvous/utils.py:161 in _delay")));
  EXPECT_THAT(idle->fix, HasSubstr("--nnodes"));

  e.events[1] = {at(32.1), "stack-at-idle", kRank0,
                 stack_in("/usr/lib/python3/dist-packages/torch/distributed/rendezvous.py", 177,
                          "_create_c10d_store")};
  findings = diagnose(e).findings;
  idle = std::find_if(findings.begin(), findings.end(),
                      [](const Finding& f) { return f.kind == "job-idle"; });
  ASSERT_NE(idle, findings.end());
  EXPECT_THAT(idle->title, EndsWith(": rank 0 (pid 1010) waits in init_process_group for the "
                                    "other ranks to join"));
}

TEST(RuleKilled, SegvWithoutCrashRecord) {
  Evidence e = torchrun_job();
  killed(e, kRank0, 10, SIGSEGV);
  killed(e, kWorker1, 10, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  for (const Finding& f : d.findings) {
    EXPECT_THAT(f.title, HasSubstr("died of SIGSEGV with no crash record"));
    if (f.pids == std::vector<int>{kRank0}) {
      EXPECT_EQ(f.kind, "native-crash");
    } else {
      EXPECT_EQ(f.kind, "worker-crash");
    }
  }
}

TEST(RuleKilled, CrashRecordWithoutStartTicksStillMatches) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kRank0, 0, 10)};
  killed(e, kRank0, 10.05, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "native-crash");
  EXPECT_THAT(d.findings[0].title, Not(HasSubstr("no crash record")));
}

TEST(RuleKilled, EarlierOomKillOfAnotherProcessIsNotEvidence) {
  // Worker 0 is OOM-killed at 10.5 s (the count goes 0 -> 1); at 60 s the launcher's teardown
  // SIGKILLs rank 1, with memory far from any limit and the count unchanged around it.
  Evidence e = torchrun_job();
  e.host_samples.clear();
  for (int s = 0; s <= 70; ++s) {
    HostSample h = host(s);
    h.cgroup_oom_kills = s >= 11 ? 1 : 0;
    e.host_samples.push_back(h);
  }
  killed(e, kWorker0, 10.5, SIGKILL);
  killed(e, kRank1, 60, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, "host-oom-killed");
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kWorker0));
  EXPECT_EQ(d.findings[1].kind, "killed-externally");
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kRank1));
}

// --- rule_failed_exit ----------------------------------------------------------------------

TEST(RuleFailedExit, RankCitesItsPythonException) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.2, 200, "Traceback (most recent call last):"),
      stderr_line(10.2, 201, "  File \"/home/user/proj/train.py\", line 77, in <module>"),
      stderr_line(10.3, 214, kDataLoaderError),
  };
  exited(e, kRank0, 10.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "python-exception");
  EXPECT_THAT(f.ranks, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(kRank0));
  EXPECT_EQ(f.title, "rank 0 (pid 1010) raised " + kDataLoaderError);
  EXPECT_THAT(f.evidence, Contains("stderr lines 200-214 at +10.3 s: " + kDataLoaderError));
  EXPECT_THAT(f.evidence, Contains("at /home/user/proj/train.py:77 in <module>"));
  EXPECT_THAT(f.evidence, Contains(std::string("rank 0 (pid 1010) exited with code 1 at +10.5 s")));
}

TEST(RuleFailedExit, AnExitWithoutATracebackCitesTheLastLineItPrinted) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.0, 7, "[default0]:usage: train.py [-h] [--batch-size BATCH_SIZE]"),
      stderr_line(10.0, 8, "[default0]:train.py: error: unrecognized arguments: --bacth-size 16"),
      stderr_line(10.1, 9, "[default1]:rank 1 is fine"),
      stderr_line(10.1, 10, "[default0]:"),
  };
  exited(e, kRank0, 10.3, 2);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "nonzero-exit");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010) exited with code 2: train.py: error: unrecognized arguments: "
            "--bacth-size 16");
  EXPECT_THAT(f.evidence, Contains(std::string("the last line it printed, stderr line 8 at +10.0 "
                                               "s: train.py: error: unrecognized arguments: "
                                               "--bacth-size 16")));
}

TEST(RuleFailedExit, ASyntaxErrorIsCompleteAndSaysNothingRan) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(1.0, 1, "  File \"/home/user/proj/train.py\", line 3"),
      stderr_line(1.0, 2, "    print(1)"),
      stderr_line(1.0, 3, "    ^"),
      stderr_line(1.0, 4,
                  "IndentationError: expected an indented block after 'if' statement on "
                  "line 2"),
  };
  exited(e, kRank0, 1.1, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "python-exception");
  EXPECT_THAT(f.evidence, Contains(std::string("at /home/user/proj/train.py:3: print(1)")));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("were not kept"))));
  EXPECT_THAT(f.fix, HasSubstr("nothing in it ran"));
}

// Everyday exceptions get a fix of their own, with what the text names.
TEST(RuleFailedExit, CommonExceptionsNameTheirFix) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ModuleNotFoundError: No module named 'wandb.sdk'", "no module 'wandb'"},
      {"FileNotFoundError: [Errno 2] No such file or directory: 'data/train.csv'",
       "The path 'data/train.csv' does not exist"},
      {"AssertionError: Torch not compiled with CUDA enabled", "CPU-only build"},
      {"RuntimeError: Found no NVIDIA driver on your system. Please check that you have an "
       "NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx",
       "no NVIDIA driver"},
      {"RuntimeError: No CUDA GPUs are available", "CUDA_VISIBLE_DEVICES"},
      {"RuntimeError: The NVIDIA driver on your system is too old (found version 12080). Please "
       "update your GPU driver by downloading and installing a new version from the URL: "
       "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to "
       "install a PyTorch version that has been compiled with your version of the CUDA driver.",
       "a cu128 wheel for a 12.8 driver"},
  };
  for (const auto& [text, fix] : cases) {
    Evidence e = torchrun_job();
    e.log_lines = {stderr_line(10.0, 1, "Traceback (most recent call last):"),
                   stderr_line(10.0, 2, "  File \"/home/user/proj/train.py\", line 7, in <module>"),
                   stderr_line(10.0, 3, text)};
    exited(e, kRank0, 10.3, 1);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 1u) << text;
    bool cuda = text.find("CUDA") != std::string::npos || text.find("NVIDIA") != std::string::npos;
    EXPECT_EQ(d.findings[0].kind, cuda ? "cuda-unavailable" : "python-exception") << text;
    EXPECT_THAT(d.findings[0].fix, HasSubstr(fix)) << text;
  }
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 1,
                             "RuntimeError: The NVIDIA driver on your system is too old "
                             "(found version 12080). Please update your GPU driver")};
  exited(e, kRank0, 10.3, 1);
  EXPECT_EQ(diagnose(e).findings[0].title,
            "rank 0 (pid 1010): the NVIDIA driver supports CUDA up to 12.8, older than the CUDA "
            "this program was built for");
}

// A native program (NCCL's own test, a C++ trainer) prints no traceback: the known error it
// printed before it exited is the finding, not its last line. Real text of NCCL 2.28 on a machine
// whose driver is older than its CUDA runtime.
TEST(RuleFailedExit, AnExitWithoutATracebackCitesAKnownErrorItPrinted) {
  Evidence e = torchrun_job();
  const std::string warn =
      "[2026-11-25 17:28:04] node7:1010:1010 [0] misc/cudawrap.cc:270 NCCL WARN Cuda failure "
      "'CUDA driver version is insufficient for CUDA runtime version'";
  e.log_lines = {
      {at(10.0), "stdout", 4, "[default0]:" + warn},
      stderr_line(10.1, 9, "[default0]:rank 0: ncclCommInitRank failed"),
  };
  exited(e, kRank0, 10.3, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "cuda-unavailable");
  EXPECT_EQ(
      f.title,
      "rank 0 (pid 1010): the NVIDIA driver is older than the CUDA runtime this program uses");
  EXPECT_THAT(f.evidence,
              ElementsAre("rank 0 (pid 1010) exited with code 1 at +10.3 s",
                          "the error it printed, stdout line 4 at +10.0 s: " + warn,
                          "known error cuda.driver-too-old: gpu 0, host node7, pid 1010"));
  // A text about another process (a peer that left) leaves the exit to the rules about it.
  e.log_lines = {stderr_line(10.0, 1,
                             "[default0]:ncclRemoteError: A call failed possibly due to "
                             "a network error or a remote process exiting prematurely.")};
  EXPECT_EQ(diagnose(e).findings[0].kind, "nonzero-exit");
}

// As PyTorch 1.13 prints a dataset's exception in worker 1.
TEST(RuleFailedExit, AWorkersExceptionCitesWhereTheWorkerRaisedIt) {
  Evidence e = torchrun_job();
  const std::vector<std::string> text = {
      "Traceback (most recent call last):",
      "  File \"/home/user/proj/train.py\", line 8, in <module>",
      "    for b in DataLoader(D(), batch_size=4, num_workers=2): pass",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 628, in "
      "__next__",
      "    data = self._next_data()",
      "           ^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1333, in "
      "_next_data",
      "    return self._process_data(data)",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1359, in "
      "_process_data",
      "    data.reraise()",
      "  File \"/usr/lib/python3/dist-packages/torch/_utils.py\", line 543, in reraise",
      "    raise exception",
      "KeyError: Caught KeyError in DataLoader worker process 1.",
      "Original Traceback (most recent call last):",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/worker.py\", line 302, in "
      "_worker_loop",
      "    data = fetcher.fetch(index)",
      "           ^^^^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58, in "
      "fetch",
      "    data = [self.dataset[idx] for idx in possibly_batched_index]",
      "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
      "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/fetch.py\", line 58, in "
      "<listcomp>",
      "    data = [self.dataset[idx] for idx in possibly_batched_index]",
      "            ~~~~~~~~~~~~^^^^^",
      "  File \"/home/user/proj/train.py\", line 6, in __getitem__",
      "    if i == 37: raise KeyError(\"label\")",
      "                ^^^^^^^^^^^^^^^^^^^^^^^",
      "KeyError: 'label'",
  };
  for (size_t i = 0; i < text.size(); ++i) e.log_lines.push_back(stderr_line(10.0, i + 1, text[i]));
  exited(e, kRank0, 10.3, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "python-exception");
  EXPECT_EQ(f.title, "rank 0 (pid 1010): DataLoader worker 1 raised KeyError: 'label'");
  EXPECT_THAT(f.evidence, Contains(std::string("in the worker: KeyError: 'label'")));
  EXPECT_THAT(f.evidence,
              Contains(std::string("in the worker, at /home/user/proj/train.py:6 in "
                                   "__getitem__: if i == 37: raise KeyError(\"label\")")));
  EXPECT_THAT(f.fix, HasSubstr("DataLoader worker 1"));
  EXPECT_THAT(f.fix, HasSubstr("num_workers=0"));

  // Where the worker's own exception is a known text (samples of unequal shapes, which the
  // default collate cannot stack), its fix comes before the re-raise's.
  e.log_lines.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    std::string line = text[i];
    if (line.starts_with("KeyError: Caught")) {
      line = "RuntimeError: Caught RuntimeError in DataLoader worker process 1.";
    } else if (i + 1 == text.size()) {
      line =
          "RuntimeError: stack expects each tensor to be equal size, but got [3, 512, 1024] at "
          "entry 0 and [3, 512, 1000] at entry 2";
    }
    e.log_lines.push_back(stderr_line(10.0, i + 1, line));
  }
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "python-exception");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("([3, 512, 1024] at entry 0, [3, 512, 1000] at entry "
                                           "2), so the default collate cannot stack them"));
}

TEST(RuleFailedExit, TorchrunPrefixedLinesMatch) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(10.0, 90, "[default0]:Traceback (most recent call last):"),
      stderr_line(10.1, 95, "[default0]:ValueError: bad"),
  };
  exited(e, kRank0, 10.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "python-exception");
  EXPECT_THAT(d.findings[0].title, HasSubstr("ValueError: bad"));

  e.log_lines = {stderr_line(10.1, 95, "[rank0]: torch.distributed.DistBackendError: NCCL error")};
  d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "python-exception");
  EXPECT_THAT(d.findings[0].title, HasSubstr("DistBackendError: NCCL error"));
}

TEST(RuleFailedExit, TheLastExceptionIsCited) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(9.0, 10, "KeyError: 'label'"),
      stderr_line(9.5, 20, "During handling of the above exception, another exception occurred:"),
      stderr_line(10.0, 30, "RuntimeError: Caught KeyError in DataLoader worker process 0."),
  };
  exited(e, kRank0, 10.5, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_THAT(d.findings[0].title, HasSubstr("Caught KeyError in DataLoader worker process 0."));
}

TEST(RuleFailedExit, LinesFarFromTheEndOrOnStdoutAreNotCited) {
  Evidence e = torchrun_job();
  e.log_lines = {
      stderr_line(100 - 61, 10, "ValueError: from a minute ago"),
      stderr_line(100 + 3, 90, "RuntimeError: printed after it ended"),
      {at(99.9), "stdout", 500, "AssertionError: printed by the user on stdout"},
      stderr_line(99.9, 60, "error: not an exception"),
  };
  exited(e, kRank0, 100, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "nonzero-exit");
  // No exception is cited: only the last line it printed on stderr by its end.
  EXPECT_EQ(f.title, "rank 0 (pid 1010) exited with code 1: error: not an exception");
}

TEST(RuleFailedExit, TheHooksClassCountCompletesALabelError) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 30, "IndexError: Target 255 is out of bounds.")};
  e.events = {{at(10.0), "label-out-of-range", kRank0, "label 255, 19 classes"},
              {at(10.0), "label-out-of-range", kRank1, "label 7, 5 classes"}};
  exited(e, kRank0, 10.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "label-out-of-range");
  EXPECT_EQ(f.title,
            "rank 0 (pid 1010): target label 255 is outside [0, 19): the loss's input has 19 "
            "classes");
  EXPECT_THAT(f.fix, HasSubstr("ignore_index=255"));
}

// Texts whose numbers say what went wrong give them in the title; MemoryError has none and is
// named as raised.
TEST(RuleFailedExit, KnownTextsNameTheirNumbers) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't "
       "allocate memory: you tried to allocate 274877906944 bytes. Error code 12 (Cannot "
       "allocate memory)",
       "rank 0 (pid 1010): a host allocation of 256 GiB was refused"},
      {"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB for an array with "
       "shape (100000, 10000) and data type float64",
       "rank 0 (pid 1010): a host allocation of 7.5 GiB was refused (an array of shape [100000, "
       "10000] float64)"},
      {"MemoryError", "rank 0 (pid 1010) raised MemoryError"},
      {"RuntimeError: The server socket has failed to listen on any local network address. The "
       "server socket has failed to bind to [::]:29611 (errno: 98 - Address already in use). The "
       "server socket has failed to bind to 0.0.0.0:29611 (errno: 98 - Address already in use).",
       "rank 0 (pid 1010): the store could not listen on port 29611: Address already in use"},
  };
  for (const auto& [line, title] : cases) {
    Evidence e = torchrun_job();
    e.log_lines = {
        stderr_line(10.0, 28, "Traceback (most recent call last):"),
        stderr_line(10.0, 29, "  File \"/home/user/proj/train.py\", line 12, in <module>"),
        stderr_line(10.0, 30, line)};
    exited(e, kRank0, 10.2, 1);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 1u) << line;
    EXPECT_EQ(d.findings[0].title, title);
    EXPECT_FALSE(d.findings[0].fix.empty()) << line;
  }
}

TEST(RuleFailedExit, WorkerExitCode) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 30, "ValueError: bad")};
  exited(e, kWorker1, 10.2, 3);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "worker-exit");
  EXPECT_THAT(f.ranks, ElementsAre(1));
  EXPECT_EQ(f.title, "worker 0 of rank 1 (pid 1021) exited with code 3");
  EXPECT_THAT(f.fix, HasSubstr("num_workers=0"));
}

TEST(RuleFailedExit, ProgramARankRanIsNotAFinding) {
  // wandb's `git rev-parse` outside a repository: the rank's own error is the failure.
  Evidence e = torchrun_job();
  e.processes.push_back(proc(1040, kRank0, 500'400, "git rev-parse HEAD"));
  exited(e, 1040, 1.0, 128);
  e.log_lines = {stderr_line(10.0, 30, "ValueError: bad config")};
  exited(e, kRank0, 10.2, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "python-exception");
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kRank0));
}

TEST(RuleFailedExit, SpawnedWorkerExitIsAFinding) {
  Evidence e = torchrun_job();
  e.processes.push_back(proc(1041, kRank0, 500'401,
                             "/usr/bin/python3.11 -c from multiprocessing.spawn import "
                             "spawn_main; spawn_main(tracker_fd=5, pipe_handle=7) "
                             "--multiprocessing-fork"));
  exited(e, 1041, 1.0, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, "worker-exit");
  EXPECT_THAT(d.findings[0].pids, ElementsAre(1041));
}

TEST(RuleFailedExit, LauncherExit) {
  Evidence e = torchrun_job();
  exited(e, kLauncher, 12, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, "launcher-exit");
  EXPECT_THAT(f.pids, ElementsAre(kLauncher));
  EXPECT_THAT(f.ranks, IsEmpty());
  EXPECT_EQ(f.title, "launcher (pid 1000) exited with code 1");
}

TEST(RuleFailedExit, ExitZeroIsNotAFinding) {
  Evidence e = torchrun_job();
  e.log_lines = {stderr_line(10.0, 30, "UserWarning: this DataLoader will create 8 workers")};
  exited(e, kRank0, 10.2, 0);
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

TEST(RuleFailedExit, HelperOutsideTheRanksIsNotAFinding) {
  // A probe the launcher ran (role other): its exit code is not the job's failure.
  Evidence e = torchrun_job();
  e.processes.push_back(proc(1030, kLauncher, 500'050, "/usr/bin/nvidia-smi -L"));
  exited(e, 1030, 2, 9);
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

// --- order_by_cause ------------------------------------------------------------------------

TEST(OrderByCause, WorkerCrashIsTheRootOfTheCascade) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kWorker0, 500'300, 10)};
  killed(e, kWorker0, 10.02, SIGSEGV);
  e.log_lines = {stderr_line(10.9, 214, kDataLoaderError)};
  exited(e, kRank0, 11, 1);
  exited(e, kLauncher, 12, 1);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 3u);
  EXPECT_EQ(d.findings[0].kind, "worker-crash");
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[0].consequences, ElementsAre(1u, 2u));
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kRank0));
  EXPECT_EQ(d.findings[1].kind, "python-exception");
  EXPECT_THAT(d.findings[2].pids, ElementsAre(kLauncher));
  for (size_t i = 1; i < d.findings.size(); ++i) {
    EXPECT_FALSE(d.findings[i].root_cause);
    EXPECT_THAT(d.findings[i].consequences, IsEmpty());
  }
}

// Both workers of rank 0 crash; the rank reports the first one's death while the second one's
// crash is still captured, so that worker dies after the rank printed its error and before the
// rank exits. A worker whose crash handler already ran prints no Python traceback: the rank's
// error stays the rank's.
TEST(OrderByCause, AWorkerStillInItsCrashHandlerDidNotPrintTheRanksError) {
  Evidence e = torchrun_job();
  constexpr int kWorker0b = 1022;
  e.processes.push_back(
      ranked(proc(kWorker0b, kRank0, 500'302, process(e, kWorker0).cmdline), 0, true));
  e.crashes = {segv(kWorker0b, 500'302, 10), segv(kWorker0, 500'300, 10.01)};
  killed(e, kWorker0, 10.2, SIGSEGV);
  e.log_lines = {stderr_line(10.5, 214, "Traceback (most recent call last):"),
                 stderr_line(10.5, 215, "  File \"/home/user/proj/train.py\", line 9, in <module>"),
                 stderr_line(10.5, 216, kDataLoaderError)};
  killed(e, kWorker0b, 10.7, SIGSEGV);
  exited(e, kRank0, 11, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, "worker-crash");
  std::vector<std::string> caused;
  for (size_t i : d.findings[0].consequences) {
    const Finding& f = d.findings[i];
    if (f.pids == std::vector<int>{kRank0}) caused.push_back(f.kind);
  }
  EXPECT_THAT(caused, ElementsAre("python-exception"));
}

TEST(OrderByCause, WarningsComeAfterErrors) {
  Evidence e = torchrun_job();
  killed(e, kRank1, 5, SIGTERM);  // earlier, but only a warning
  e.crashes = {segv(kRank0, 500'100, 10)};
  killed(e, kRank0, 10.05, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, "native-crash");
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[1].kind, "killed-externally");
  EXPECT_EQ(d.findings[1].severity, Severity::kWarning);
  EXPECT_FALSE(d.findings[1].root_cause);
  // Stopped before the crash: not something the crash caused.
  EXPECT_THAT(d.findings[0].consequences, IsEmpty());
}

// A stop request after the failure is the teardown it set off: a consequence, warning or not.
TEST(OrderByCause, AStopAfterTheRootCauseIsItsConsequence) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kRank0, 500'100, 10)};
  killed(e, kRank0, 10.05, SIGSEGV);
  killed(e, kRank1, 11, SIGTERM);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[1].severity, Severity::kWarning);
  EXPECT_THAT(d.findings[0].consequences, ElementsAre(1u));
}

TEST(OrderByCause, OnlyWarningsHaveNoRootCause) {
  Evidence e = torchrun_job();
  killed(e, kRank0, 30, SIGTERM);
  killed(e, kRank1, 30.01, SIGINT);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  for (const Finding& f : d.findings) {
    EXPECT_EQ(f.severity, Severity::kWarning);
    EXPECT_FALSE(f.root_cause);
    EXPECT_THAT(f.consequences, IsEmpty());
  }
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kRank0));
}

TEST(OrderByCause, CleanRunHasNoFindings) {
  Evidence e = torchrun_job();
  exited(e, kWorker0, 50, 0);
  exited(e, kWorker1, 50, 0);
  exited(e, kRank0, 51, 0);
  exited(e, kRank1, 51, 0);
  exited(e, kLauncher, 52, 0);
  e.run.end_ns = at(52);
  e.run.exit_code = 0;
  e.log_lines = {stderr_line(10, 1, "UserWarning: TypedStorage is deprecated")};
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

}  // namespace
}  // namespace traindoc::analysis
