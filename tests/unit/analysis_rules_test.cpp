// Tests of the crash and killed rules and of the ordering by cause, through diagnose() on the
// evidence of a torchrun job: a launcher, two ranks, one DataLoader worker each.
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
using testing::Contains;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;

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

// --- rule_native_crash ---------------------------------------------------------------------

TEST(RuleNativeCrash, CrashInAWorkerIsAWorkerCrash) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kWorker0, 500'300, 10)};
  killed(e, kWorker0, 10.05, SIGSEGV);  // the crash record explains it: no second finding
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kWorkerCrash);
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
  EXPECT_EQ(f.kind, FindingKind::kShmExhausted);
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
  EXPECT_EQ(f.kind, FindingKind::kNativeCrash);
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
  EXPECT_THAT(evidence, Contains(HasSubstr("free-threaded")));
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kNativeCrash);
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
  EXPECT_EQ(f.kind, FindingKind::kNativeCrash);
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
  EXPECT_EQ(f.kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(f.ranks, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(kWorker0));
  EXPECT_THAT(f.title, HasSubstr("worker 0 of rank 0 (pid 1020) was killed by the out-of-memory"));
  EXPECT_THAT(f.evidence,
              Contains(std::string("traindoc's own memory cgroup counted an OOM kill: its "
                                   "oom_kill count rose from 0 to 1")));
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(
      d.findings[0].evidence,
      Contains(std::string("traindoc's own memory cgroup at 7.8 GiB of its 8.0 GiB limit")));
}

TEST(RuleKilled, CgroupAtItsLimitLongBeforeTheEndIsNotEvidence) {
  Evidence e = torchrun_job();
  e.host_samples = {host(5), host(10), host(19), host(21)};
  e.host_samples[0].cgroup_current = 8 * kGiB - 100 * kMiB;  // 15 s before the end
  killed(e, kRank0, 20, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kKilledExternally);
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kHostOomKilled);
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kKilledExternally);
}

TEST(RuleKilled, SigkillOfAWorkerWithoutOomEvidenceIsAWorkerCrash) {
  Evidence e = torchrun_job();
  e.host_samples = {host(9), host(11)};
  killed(e, kWorker1, 10, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kWorkerCrash);
  EXPECT_THAT(f.ranks, ElementsAre(1));
  EXPECT_THAT(f.title, HasSubstr("killed by SIGKILL from outside"));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("memory cgroup counted no OOM kill")));
}

// The OOM killer ended worker 0 while rank 0 fetched the file descriptors of a batch it had
// made (CASES.md T03 at another moment): rank 0's ConnectionResetError names the worker, and
// comes after the worker's end, which rank 0 saw only when it reaped it, after its traceback.
TEST(RuleKilled, ARankThatLostItsWorkerMidBatchNamesIt) {
  for (bool through_sharer : {true, false}) {
    Evidence e = torchrun_job();
    e.host_samples = {host(9), host(11)};
    killed(e, kWorker0, through_sharer ? 10.5 : 10, SIGKILL);
    uint64_t number = 1;
    std::vector<std::string> lines = {
        "Traceback (most recent call last):",
        "  File \"/home/user/proj/train.py\", line 30, in <module>",
        "  File \"/usr/lib/python3/dist-packages/torch/multiprocessing/reductions.py\", line "
        "305, in rebuild_storage_fd",
        "  File \"/usr/lib/python3.11/multiprocessing/resource_sharer.py\", line 57, in detach",
        "  File \"/usr/lib/python3.11/multiprocessing/connection.py\", line 378, in _recv",
        "ConnectionResetError: [Errno 104] Connection reset by peer"};
    if (!through_sharer) lines.erase(lines.begin() + 2, lines.begin() + 4);
    print_lines(e, 10.1, number, lines, "[default0]:");
    exited(e, kRank0, 10.3, 1);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 2u) << through_sharer;
    EXPECT_EQ(d.findings[0].kind, FindingKind::kWorkerCrash);
    const Finding& rank = d.findings[1];
    EXPECT_EQ(rank.kind, FindingKind::kPythonException);
    if (!through_sharer) {
      EXPECT_EQ(rank.title,
                "rank 0 (pid 1010) raised ConnectionResetError: [Errno 104] Connection reset by "
                "peer");
      continue;
    }
    EXPECT_EQ(rank.title,
              "rank 0 (pid 1010) was receiving a batch from DataLoader worker 0 of rank 0 (pid "
              "1020) when it died of SIGKILL: ConnectionResetError: [Errno 104] Connection reset "
              "by peer");
    EXPECT_THAT(rank.fix, HasSubstr("Not a network fault"));
    EXPECT_THAT(d.findings[0].consequences, ElementsAre(1));
  }
}

// The same where the worker's end interrupted the rank's traceback as Python printed it (the
// DataLoader's SIGCHLD handler raised amid it): CPython dumped the exception alone, no frames
// (the fault zoo's T03 on a busy machine printed these lines).
TEST(RuleKilled, ARankWhoseTracebackTheWorkersEndCutShortNamesIt) {
  for (const char* type : {"ConnectionResetError", "ValueError"}) {
    Evidence e = torchrun_job();
    e.host_samples = {host(9), host(11)};
    killed(e, kWorker0, 10.5, SIGKILL);
    uint64_t number = 1;
    print_lines(e, 10.1, number,
                {"Traceback (most recent call last):", "object address  : 0x7f8298ea35c0",
                 "object refcount : 2", "object type     : 0x9ec680",
                 std::string("object type name: ") + type,
                 std::string("object repr     : ") + type + "(104, 'Connection reset by peer')",
                 "lost sys.stderr"},
                "[default0]:");
    exited(e, kRank0, 10.3, 1);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 2u) << type;
    std::string says = std::string(type) + ": 104, 'Connection reset by peer'";
    if (std::string(type) == "ValueError") {  // no error of a connection: the rank's own
      EXPECT_EQ(d.findings[0].title, "rank 0 (pid 1010) raised " + says);
      continue;
    }
    EXPECT_EQ(d.findings[0].kind, FindingKind::kWorkerCrash);
    EXPECT_EQ(d.findings[1].title,
              "rank 0 (pid 1010) was receiving a batch from DataLoader worker 0 of rank 0 (pid "
              "1020) when it died of SIGKILL: " +
                  says);
    EXPECT_THAT(d.findings[0].consequences, ElementsAre(1));
  }
}

// A SIGTERM from outside ended worker 0 while rank 0 fetched a batch from it: the stop is the
// root cause, as where PyTorch names the worker.
TEST(RuleKilled, AWorkerStoppedMidBatchIsTheCauseOfItsRanksFailure) {
  Evidence e = torchrun_job();
  killed(e, kWorker0, 10.5, SIGTERM);
  uint64_t number = 1;
  print_lines(
      e, 10.1, number,
      {"Traceback (most recent call last):",
       "  File \"/home/user/proj/train.py\", line 30, in <module>",
       "  File \"/usr/lib/python3.11/multiprocessing/resource_sharer.py\", line 57, in detach",
       "EOFError"},
      "[default0]:");
  exited(e, kRank0, 10.6, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[0].title,
            "worker 0 of rank 0 (pid 1020) was stopped by SIGTERM, and rank 0 (pid 1010) failed "
            "for it");
}

TEST(RuleKilled, SigkillOfARankWithoutOomEvidenceIsKilledExternally) {
  Evidence e = torchrun_job();
  e.host_samples = {host(9), host(11)};
  killed(e, kRank0, 10, SIGKILL);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kKilledExternally);
  EXPECT_EQ(f.severity, Severity::kError);
  EXPECT_THAT(f.title, HasSubstr("rank 0 (pid 1010) was killed by SIGKILL from outside"));
  EXPECT_THAT(f.fix, HasSubstr("dmesg"));
  EXPECT_THAT(f.fix, HasSubstr("Out of memory: Killed process 1010"));
}

// A SIGKILL whose sender is in the job, as its agent noted the kill() call: the rank itself, or
// the launcher tearing down.
TEST(RuleKilled, ASigkillSentFromTheJobNamesItsSender) {
  for (int sender : {kRank0, kLauncher}) {
    Evidence e = torchrun_job();
    e.host_samples = {host(9), host(11)};
    // torchrun ends a rank's process group (killpg), which the rank leads.
    e.events = {{at(9.99), store::EventKind::kKillSent, sender,
                 sender == kRank0 ? "pid 1010" : "process group 1010",
                 sender == kRank0 ? 1010 : -1010}};
    killed(e, kRank0, 10, SIGKILL);
    Diagnosis d = diagnose(e);
    ASSERT_EQ(d.findings.size(), 1u);
    const Finding& f = d.findings[0];
    if (sender == kRank0) {
      EXPECT_EQ(f.kind, FindingKind::kNonzeroExit);
      EXPECT_EQ(f.title, "rank 0 (pid 1010) killed itself with SIGKILL");
      EXPECT_TRUE(f.root_cause);
    } else {
      EXPECT_EQ(f.kind, FindingKind::kKilledExternally);
      EXPECT_EQ(f.severity, Severity::kInfo);
      EXPECT_EQ(f.title, "rank 0 (pid 1010) was killed by SIGKILL from launcher (pid 1000)");
    }
    EXPECT_THAT(f.fix, Not(HasSubstr("dmesg")));
  }
  // The OOM killer's SIGKILL, then the launcher's own to a rank already gone: the OOM kill.
  Evidence e = torchrun_job();
  HostSample before = host(9);
  HostSample after = host(11);
  before.cgroup_oom_kills = 0;
  after.cgroup_oom_kills = 1;
  e.host_samples = {before, after};
  e.events = {{at(10.2), store::EventKind::kKillSent, kLauncher, "pid 1010", 1010}};
  killed(e, kRank0, 10, SIGKILL);
  EXPECT_EQ(diagnose(e).findings.at(0).kind, FindingKind::kHostOomKilled);
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
  EXPECT_EQ(f.kind, FindingKind::kKilledExternally);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.root_cause);
  EXPECT_THAT(f.title, HasSubstr("rank 1 (pid 1011) was stopped by SIGTERM"));
}

// A multiprocessing Pool's `with` block terminates its workers as the exception leaves it: the
// workers' SIGTERM is their rank's end, not a stop of their own; a DataLoader's error that names
// the worker it lost makes that worker's stop the failure.
// Through a forkserver, the rank that stops the worker is above the forkserver.
TEST(RuleKilled, AWorkerStoppedAsItsRankEndedIsItsRanksEnd) {
  for (auto [named, forkserver] :
       {std::pair{false, false}, {true, false}, {false, true}, {true, true}}) {
    Evidence e = torchrun_job();
    if (forkserver) through_forkserver(e, kWorker0);
    killed(e, kWorker0, 3.0, SIGTERM);
    uint64_t number = 1;
    print_lines(e, 3.1, number,
                {"Traceback (most recent call last):",
                 "  File \"/home/user/proj/prepare.py\", line 6, in <module>",
                 named ? "RuntimeError: DataLoader worker (pid 1020) is killed by signal: "
                         "Terminated. "
                       : "ZeroDivisionError: integer division or modulo by zero"},
                "[default0]:");
    exited(e, kRank0, 3.2, 1);
    Diagnosis d = diagnose(e);
    auto worker = std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) {
      return f.pids == std::vector<int>{kWorker0};
    });
    ASSERT_NE(worker, d.findings.end());
    if (named) {
      // The worker alone was stopped, and its rank failed for it: the stop is the root cause.
      EXPECT_EQ(worker->severity, Severity::kError);
      EXPECT_TRUE(worker->root_cause);
      EXPECT_EQ(worker->title,
                "worker 0 of rank 0 (pid 1020) was stopped by SIGTERM, and rank 0 (pid 1010) "
                "failed for it");
      continue;
    }
    EXPECT_EQ(worker->severity, Severity::kInfo);
    EXPECT_EQ(worker->title,
              "worker 0 of rank 0 (pid 1020) was stopped by SIGTERM as rank 0 (pid 1010) ended");
  }
}

// An unprefixed traceback printed just before a worker was stopped silently (SIGTERM, as its rank
// shut it down) is not that worker's: Python's exit after a traceback is an exit code.
TEST(RuleKilled, ATracebackIsNotAWorkersThatWasStoppedSilently) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 3.1, number,
              {"Traceback (most recent call last):",
               "  File \"/home/user/proj/train.py\", line 7, in <module>",
               "RuntimeError: DataLoader worker (pid(s) 1020) exited unexpectedly"},
              "");
  killed(e, kWorker0, 3.0, SIGTERM);
  killed(e, kWorker1, 3.15, SIGTERM);
  exited(e, kRank0, 3.4, 1);
  Diagnosis d = diagnose(e);
  auto raised = std::find_if(d.findings.begin(), d.findings.end(), [](const Finding& f) {
    return f.kind == FindingKind::kPythonException;
  });
  ASSERT_NE(raised, d.findings.end());
  EXPECT_THAT(raised->pids, ElementsAre(kRank0));
}

// --- rule_stop_request ---------------------------------------------------------------------

TEST(RuleKilled, SegvWithoutCrashRecord) {
  Evidence e = torchrun_job();
  killed(e, kRank0, 10, SIGSEGV);
  killed(e, kWorker1, 10, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  for (const Finding& f : d.findings) {
    EXPECT_THAT(f.title, HasSubstr("died of SIGSEGV with no crash record"));
    if (f.pids == std::vector<int>{kRank0}) {
      EXPECT_EQ(f.kind, FindingKind::kNativeCrash);
    } else {
      EXPECT_EQ(f.kind, FindingKind::kWorkerCrash);
    }
  }
}

TEST(RuleKilled, CrashRecordWithoutStartTicksStillMatches) {
  Evidence e = torchrun_job();
  e.crashes = {segv(kRank0, 0, 10)};
  killed(e, kRank0, 10.05, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kNativeCrash);
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(d.findings[0].pids, ElementsAre(kWorker0));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kKilledExternally);
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kRank1));
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kWorkerCrash);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[0].consequences, ElementsAre(1u, 2u));
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kRank0));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kPythonException);
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
  EXPECT_EQ(d.findings[0].kind, FindingKind::kWorkerCrash);
  std::vector<FindingKind> caused;
  for (size_t i : d.findings[0].consequences) {
    const Finding& f = d.findings[i];
    if (f.pids == std::vector<int>{kRank0}) caused.push_back(f.kind);
  }
  EXPECT_THAT(caused, ElementsAre(FindingKind::kPythonException));
}

TEST(OrderByCause, WarningsComeAfterErrors) {
  Evidence e = torchrun_job();
  killed(e, kRank1, 5, SIGTERM);  // earlier, but only a warning
  e.crashes = {segv(kRank0, 500'100, 10)};
  killed(e, kRank0, 10.05, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kNativeCrash);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[1].kind, FindingKind::kKilledExternally);
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
