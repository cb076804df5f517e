// Tests of the memory-leak rule through diagnose(): growth per step from the hook's step counts,
// per minute without them (a DataLoader worker's per its rank's steps), the projection of
// exhaustion, the leak as the root cause of the OOM kill it led to, DataLoader workers copying
// their dataset (USS up, RSS flat), clean runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::analysis {
namespace {

using store::Evidence;
using testing::Contains;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::IsEmpty;
using testing::Not;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;
constexpr int kRank = 2000;
constexpr int kWorker0 = 2010;
constexpr int kWorker1 = 2011;
constexpr uint64_t kRankTicks = 7000;

// python train.py (rank 0) with two DataLoader workers, sampled every second (two minutes unless
// a test says otherwise); every process's memory flat unless a test says otherwise.
Evidence job(int seconds = 120) {
  Evidence e;
  e.run.command = {"python3", "train.py"};
  e.run.root_pid = kRank;
  e.run.start_ns = kT0;
  store::ProcessRecord rank;
  rank.pid = kRank;
  rank.ppid = 1;
  rank.start_ticks = kRankTicks;
  rank.start_ns = kT0;
  rank.cmdline = "python3 train.py";
  rank.argv0 = "python3";
  rank.agent = true;
  e.processes.push_back(rank);
  for (int pid : {kWorker0, kWorker1}) {
    store::ProcessRecord worker = rank;
    worker.pid = pid;
    worker.ppid = kRank;
    worker.start_ticks = kRankTicks + 100 + static_cast<uint64_t>(pid - kWorker0);
    worker.start_ns = kT0 + 5 * kSecond;
    worker.forked = true;
    e.processes.push_back(worker);
  }
  for (int s = 0; s < seconds; ++s) {
    for (const store::ProcessRecord& p : e.processes) {
      store::ProcSample sample;
      sample.t_ns = kT0 + s * kSecond;
      sample.pid = p.pid;
      sample.start_ticks = p.start_ticks;
      sample.rss = 600 * kMiB + (s % 3) * kMiB;
      if (s % 5 == 0) sample.uss = 20 * kMiB;
      e.proc_samples.push_back(sample);
    }
    store::HostSample h;
    h.t_ns = kT0 + s * kSecond;
    h.mem_total = 32 * kGiB;
    h.mem_available = 10 * kGiB;
    e.host_samples.push_back(h);
  }
  return e;
}

void set_rss(Evidence& e, int pid, uint64_t (*rss)(int second)) {
  for (store::ProcSample& s : e.proc_samples) {
    if (s.pid == pid) s.rss = rss(static_cast<int>((s.t_ns - kT0) / kSecond));
  }
}

// Two optimizer steps a second from second 10 on, reported every second.
void add_steps(Evidence& e) {
  for (int s = 10; s < 120; ++s) {
    e.steps.push_back(
        {kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kOptimizer, 2 * (s - 10)});
    e.steps.push_back(
        {kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kBackward, 2 * (s - 10)});
  }
}

// 5 MiB per optimizer step once training runs (10 MiB a second).
uint64_t leaking(int second) {
  return 600 * kMiB + static_cast<uint64_t>(std::max(0, second - 10)) * 10 * kMiB +
         (second % 4) * kMiB;
}

// CASES.md H01: both workers' USS grows by 1 MiB a second; their RSS stays flat.
void copying_workers(Evidence& e) {
  for (store::ProcSample& s : e.proc_samples) {
    if (s.pid != kRank && s.uss) {
      s.uss = 6 * kMiB + static_cast<uint64_t>(s.t_ns - kT0) / kSecond * kMiB;
    }
  }
}

// The OOM killer ends process `index` of job() half a second after `second`, when the host has
// 100 MiB left.
void oom_killed(Evidence& e, size_t index, int second) {
  e.host_samples[static_cast<size_t>(second)].mem_available = 100 * kMiB;
  store::ProcessRecord& p = e.processes[index];
  p.exit_signal = SIGKILL;
  p.end_ns = kT0 + second * kSecond + kSecond / 2;
  p.end_source = index == 0 ? store::EndSource::kSupervisor : store::EndSource::kParent;
}

std::vector<const Finding*> leaks(const Diagnosis& d) {
  std::vector<const Finding*> out;
  for (const Finding& f : d.findings) {
    if (f.kind == FindingKind::kMemoryLeak) out.push_back(&f);
  }
  return out;
}

TEST(RuleMemoryLeak, GrowthPerStepFromTheStepCounts) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, leaking);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kMemoryLeak);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_FALSE(f.root_cause);
  EXPECT_THAT(f.pids, ElementsAre(kRank));
  EXPECT_THAT(f.ranks, ElementsAre(0));
  EXPECT_EQ(f.title, "rank 0 (pid 2000): host memory grows 5.00 MiB per step");
  EXPECT_THAT(f.evidence[0], HasSubstr("RSS of rank 0 (pid 2000) grew from"));
  EXPECT_THAT(f.evidence[0], HasSubstr("between steps 44 and 218"));
  EXPECT_EQ(f.evidence[1],
            "a step is one of the process's optimizer steps, counted by traindoc's Python hook");
  // 10 GiB left at 5 MiB a step: 2048 more steps, at 120 steps a minute.
  EXPECT_THAT(f.evidence, Contains(HasSubstr("the 10.0 GiB available on the host (MemAvailable) "
                                             "runs out after about 2048 more steps, near step "
                                             "2266 (about 17 minutes at 120 steps per minute)")));
  EXPECT_THAT(f.fix, HasSubstr("total_loss += loss.item()"));
  EXPECT_THAT(f.fix, HasSubstr(".detach()"));
}

// A dataset read through a memory-mapped file fills RSS with its pages, which the kernel may
// drop again: growth of file pages is no leak; what else grows is measured.
TEST(RuleMemoryLeak, PagesOfMappedFilesAreNoLeak) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, leaking);
  for (store::ProcSample& s : e.proc_samples) s.rss_file = s.rss - 500 * kMiB;
  EXPECT_THAT(leaks(diagnose(e)), IsEmpty());
  for (store::ProcSample& s : e.proc_samples) s.rss_file = 100 * kMiB;
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  EXPECT_THAT(leaks(d)[0]->evidence[0],
              HasSubstr("RSS without the pages of mapped files of rank 0 (pid 2000) grew from"));
}

TEST(RuleMemoryLeak, GrowthPerMinuteWithoutStepCounts) {
  Evidence e = job(300);
  set_rss(e, kRank, leaking);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  const Finding& f = *leaks(d)[0];
  EXPECT_EQ(f.title, "rank 0 (pid 2000): host memory grows 600 MiB per minute");
  EXPECT_THAT(f.evidence, Contains(HasSubstr("no training steps were counted")));
}

// Training from second 10 to 40 (two steps, backward calls and DDP forwards a second), then
// DDP forwards alone, four a second until the end (evaluation through the DDP model); without
// `forwards`, an evaluation through the model itself, which the hook does not count.
void add_evaluation(Evidence& e, bool forwards = true) {
  for (int s = 10; s < 120; ++s) {
    int64_t steps = 2 * (std::min(s, 40) - 10);
    e.steps.push_back({kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kOptimizer, steps});
    e.steps.push_back({kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kBackward, steps});
    if (!forwards) continue;
    e.steps.push_back({kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kDdpForward,
                       steps + 4 * std::max(0, s - 40)});
  }
}

// 2 MiB per forward pass of the evaluation (8 MiB a second), flat before.
uint64_t evaluation_leaking(int second) {
  return 600 * kMiB + static_cast<uint64_t>(std::max(0, second - 40)) * 8 * kMiB +
         (second % 3) * kMiB;
}

TEST(RuleMemoryLeak, GrowthAfterTheLastStepIsPerDdpForwardPassOfTheEvaluation) {
  Evidence e = job();
  add_evaluation(e);
  set_rss(e, kRank, evaluation_leaking);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u) << (d.findings.empty() ? "" : d.findings[0].title);
  const Finding& f = *leaks(d)[0];
  EXPECT_EQ(f.title,
            "rank 0 (pid 2000): host memory grows 2.00 MiB per forward pass after its last "
            "training step");
  EXPECT_THAT(f.evidence[0], HasSubstr("between forward passes"));
  EXPECT_THAT(f.evidence[0], HasSubstr("of the phase"));
  EXPECT_THAT(f.evidence,
              Contains(HasSubstr("the growth came after the process's last training step "
                                 "(optimizer steps 60, 40.0 s into the run): 316 forward passes "
                                 "through DistributedDataParallel followed and no backward call")));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("forward passes per minute")));
  EXPECT_THAT(f.fix, HasSubstr("torch.no_grad()"));
  EXPECT_THAT(f.fix, HasSubstr("loss.item()"));
  // Training steps alone: the steps' span is flat, and the evaluation's 80 s are too short for
  // growth per minute.
  Evidence before = job();
  add_evaluation(before, false);
  set_rss(before, kRank, evaluation_leaking);
  EXPECT_THAT(leaks(diagnose(before)), IsEmpty());
}

TEST(RuleMemoryLeak, GrowthAfterTheLastStepWithoutForwardPassesIsPerMinute) {
  Evidence e = job(300);
  add_evaluation(e, false);
  set_rss(e, kRank, evaluation_leaking);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  const Finding& f = *leaks(d)[0];
  EXPECT_EQ(f.title,
            "rank 0 (pid 2000): host memory grows 480 MiB per minute after its last training "
            "step");
  EXPECT_THAT(f.evidence, Contains(HasSubstr("no DDP forward was counted after it")));
  EXPECT_THAT(f.fix, HasSubstr("after the last training step"));
  EXPECT_THAT(f.fix, HasSubstr("torch.no_grad()"));
}

// Data preparation: 4 MiB a second for the first 170 s, flat once training starts at 180 s.
uint64_t preparing(int second) {
  return 600 * kMiB + static_cast<uint64_t>(std::min(second, 170)) * 4 * kMiB + (second % 3) * kMiB;
}

// Optimizer steps from `from` seconds on, two a second.
void add_steps_from(Evidence& e, int from, int to) {
  for (int s = from; s < to; ++s) {
    e.steps.push_back(
        {kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kOptimizer, 2 * (s - from + 1)});
  }
}

TEST(RuleMemoryLeak, GrowthBeforeTheFirstStepIsPerMinuteOfThePreparation) {
  Evidence e = job(300);
  add_steps_from(e, 180, 300);
  set_rss(e, kRank, preparing);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u) << (d.findings.empty() ? "" : d.findings[0].title);
  const Finding& f = *leaks(d)[0];
  EXPECT_EQ(f.title,
            "rank 0 (pid 2000): host memory grows 240 MiB per minute before its first training "
            "step");
  // The phase ended as training began: information, not a leak that will run out.
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_THAT(f.evidence[0], HasSubstr("of the phase"));
  EXPECT_THAT(f.evidence,
              Contains(HasSubstr("the growth came before the process's first training step (its "
                                 "optimizer steps were first counted, 180.0 s into the run)")));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("runs out"))));
  EXPECT_THAT(f.fix, HasSubstr("before the first training step"));
  EXPECT_THAT(f.fix, HasSubstr("memory-map"));
  // Under two minutes of preparation is a process loading its libraries and data.
  Evidence shorter = job(300);
  add_steps_from(shorter, 100, 300);
  set_rss(shorter, kRank, [](int second) {
    return 600 * kMiB + static_cast<uint64_t>(std::min(second, 95)) * 4 * kMiB;
  });
  EXPECT_THAT(leaks(diagnose(shorter)), IsEmpty());
}

// A sample whose time tells no duration since the process's first (a clock far off, a damaged
// run.db) is left out of growth per minute: the span in words is the minutes the samples tell.
TEST(RuleMemoryLeak, ASampleCenturiesAwayIsNoPartOfGrowthPerMinute) {
  Evidence e = job(300);
  set_rss(e, kRank, leaking);
  for (auto it = e.proc_samples.rbegin(); it != e.proc_samples.rend(); ++it) {
    if (it->pid != kRank) continue;
    it->t_ns = INT64_MAX - 1;
    break;
  }
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  for (const std::string& line : leaks(d)[0]->evidence) {
    std::smatch span;
    if (!std::regex_search(line, span, std::regex("([0-9.]+) minutes"))) continue;
    EXPECT_LE(std::stod(span[1]), 5.0) << line;
  }
  EXPECT_EQ(leaks(d)[0]->title, "rank 0 (pid 2000): host memory grows 600 MiB per minute");
}

// Without step counts, growth over less than two minutes is a process importing its libraries
// and loading its data as much as a leak.
TEST(RuleMemoryLeak, ShortGrowthWithoutStepCountsIsNotALeak) {
  Evidence e = job(150);
  set_rss(e, kRank, leaking);
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

TEST(RuleMemoryLeak, TheCgroupLimitIsTheHeadroomWhenItIsCloser) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, leaking);
  for (store::HostSample& h : e.host_samples) {
    h.cgroup_version = 2;
    h.cgroup_current = 3 * kGiB;
    h.cgroup_max = 4 * kGiB;
  }
  Diagnosis d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  EXPECT_THAT(leaks(d)[0]->evidence,
              Contains(HasSubstr("the 1.0 GiB left under the limit of traindoc's own memory "
                                 "cgroup runs out after about 205 more steps")));

  // The process in a cgroup of its own: that cgroup's limit, not traindoc's, is its headroom.
  const std::string own = "/sys/fs/cgroup/job/rank0";
  e.process_cgroups = {
      {e.processes[0].start_ns, kRank, e.processes[0].start_ticks, 2, "/job/rank0", own}};
  for (const store::HostSample& h : e.host_samples) {
    e.cgroup_samples.push_back({h.t_ns, own, 2, 3 * kGiB + 512 * kMiB, 4 * kGiB, own, 0});
  }
  d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  EXPECT_THAT(leaks(d)[0]->evidence,
              Contains(HasSubstr("the 512 MiB left under the limit of its memory cgroup " + own +
                                 " runs out after about 102 more steps")));
  // Unlimited there: the host's memory, never traindoc's limit, which it is not under.
  for (store::CgroupSample& s : e.cgroup_samples) s.max.reset();
  d = diagnose(e);
  ASSERT_EQ(leaks(d).size(), 1u);
  EXPECT_THAT(leaks(d)[0]->evidence, Not(Contains(HasSubstr("memory cgroup"))));
  EXPECT_THAT(leaks(d)[0]->evidence, Contains(HasSubstr("available on the host")));
}

// The leak fills memory until the OOM killer ends the process: the leak is the root cause, the
// kill its consequence, though the kill is what ended the job.
TEST(RuleMemoryLeak, ALeakThatEndsInAnOomKillIsTheRootCause) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, leaking);
  oom_killed(e, 0, 119);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  const Finding& leak = d.findings[0];
  EXPECT_EQ(leak.kind, FindingKind::kMemoryLeak);
  EXPECT_EQ(leak.severity, Severity::kError);
  EXPECT_TRUE(leak.root_cause);
  EXPECT_THAT(leak.consequences, ElementsAre(1));
  EXPECT_THAT(leak.evidence, Contains(HasSubstr("(host-oom-killed): memory ran out")));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kHostOomKilled);
}

// The OOM killer picked one of the leaking rank's workers, which share its pages: still the
// leak's consequence.
TEST(RuleMemoryLeak, AnOomKillOfTheLeakingRanksWorkerIsItsConsequence) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, leaking);
  oom_killed(e, 2, 119);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kMemoryLeak);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kWorker1));
  EXPECT_EQ(d.findings[1].kind, FindingKind::kHostOomKilled);
}

// A kill before the growth began is not the growth's consequence.
TEST(RuleMemoryLeak, AnOomKillBeforeTheGrowthIsNotItsConsequence) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, leaking);
  oom_killed(e, 2, 8);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kHostOomKilled);
  EXPECT_EQ(d.findings[1].kind, FindingKind::kMemoryLeak);
  EXPECT_EQ(d.findings[1].severity, Severity::kWarning);
  // Nor is the growth that came after the kill the kill's consequence: a finding of its own.
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_THAT(d.findings[0].consequences, IsEmpty());
}

TEST(RuleMemoryLeak, FlatMemoryIsClean) {
  Evidence e = job();
  add_steps(e);
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

// GPU 0 of 80 GiB, sampled every second: the rank holds `held(second)` of it, the device's
// used memory is that and 1 GiB of others'.
void on_gpu(Evidence& e, uint64_t (*held)(int second)) {
  e.gpu.nvml_loaded = true;
  e.gpu.devices.push_back({0, "GPU-0", "00000000:06:00.0", "NVIDIA H100 80GB HBM3", 80 * kGiB});
  for (int s = 0; s < 120; ++s) {
    store::GpuSample g;
    g.t_ns = kT0 + s * kSecond;
    g.memory_used = held(s) + kGiB;
    e.gpu.samples.push_back(g);
    store::GpuProcessSample p;
    p.t_ns = g.t_ns;
    p.nvml_pid = p.pid = kRank;
    p.start_ticks = kRankTicks;
    p.used_bytes = held(s);
    p.type = "compute";
    e.gpu.process_samples.push_back(p);
  }
}

TEST(RuleMemoryLeak, GpuMemoryGrowingWithTheStepsIsALeak) {
  Evidence e = job();
  add_steps(e);
  on_gpu(e, leaking);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);  // the host memory stayed flat
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kMemoryLeak);
  EXPECT_EQ(f.title, "rank 0 (pid 2000): GPU memory grows 5.00 MiB per step");
  EXPECT_THAT(f.evidence[0], HasSubstr("GPU memory held (NVML, all its GPUs) of rank 0"));
  // 80 GiB less the rank's 1693 MiB and 1 GiB of others' at the last sample: 79203 MiB, at
  // 5 MiB a step.
  EXPECT_THAT(f.evidence,
              Contains(HasSubstr("the 77.3 GiB free on GPU 0 runs out after about 15841 more "
                                 "steps")));
  // Flat GPU memory (the caching allocator's pool, reserved once) is clean.
  Evidence flat = job();
  add_steps(flat);
  on_gpu(flat, [](int second) { return (second < 5 ? 500 : 4000) * kMiB; });
  EXPECT_THAT(diagnose(flat).findings, IsEmpty());
}

// "CUDA out of memory after 3 hours": the growth began long before the OOM, which it explains.
TEST(RuleMemoryLeak, AGpuLeakThatEndsInCudaOomIsTheRootCause) {
  Evidence e = job();
  add_steps(e);
  on_gpu(e, leaking);
  int64_t t = kT0 + 119 * kSecond;
  uint64_t number = 1;
  for (const char* line :
       {"Traceback (most recent call last):",
        "  File \"/home/user/train.py\", line 88, in <module>", "    loss = model(x).sum()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.65 GiB of which 1.06 GiB is free. Including non-PyTorch memory, "
        "this process has 78.50 GiB memory in use. Of the allocated memory 77.20 GiB is "
        "allocated by PyTorch, and 0.20 GiB is reserved by PyTorch but unallocated."}) {
    e.log_lines.push_back({t, "stderr", number++, line});
  }
  e.processes[0].exit_code = 1;
  e.processes[0].end_ns = t + kSecond / 10;
  e.processes[0].end_source = store::EndSource::kSupervisor;
  e.run.exit_code = 1;
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  EXPECT_EQ(root.kind, FindingKind::kMemoryLeak);
  EXPECT_TRUE(root.root_cause);
  EXPECT_EQ(root.severity, Severity::kError);
  EXPECT_THAT(root.title, HasSubstr("GPU memory grows 5.00 MiB per step"));
  EXPECT_THAT(root.evidence, Contains(HasSubstr("(gpu-oom): memory ran out")));
  std::vector<FindingKind> consequences;
  for (size_t i : root.consequences) consequences.push_back(d.findings[i].kind);
  EXPECT_THAT(consequences, Contains(FindingKind::kGpuOom));
}

TEST(RuleMemoryLeak, OneLargeAllocationIsNotALeak) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kRank, [](int second) { return (second < 50 ? 600 : 2600) * kMiB; });
  EXPECT_THAT(diagnose(e).findings, IsEmpty());
}

TEST(RuleMemoryLeak, WorkersCopyingTheirDatasetGetOneFinding) {
  Evidence e = job();
  copying_workers(e);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kMemoryLeak);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_THAT(f.title, HasSubstr("DataLoader workers copy the Python objects they read"));
  EXPECT_THAT(f.title, HasSubstr("in 2 worker(s)"));
  EXPECT_THAT(f.pids, ElementsAre(kWorker0, kWorker1));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("worker 0 of rank 0 (pid 2010): private memory (USS) "
                                             "grew from")));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("60.0 MiB per minute) while its RSS stayed near")));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("with 2 workers per rank")));
  EXPECT_THAT(f.fix, HasSubstr("numpy"));
}

// A worker copying its dataset until the OOM killer ends it: the copying is the root cause.
TEST(RuleMemoryLeak, WorkersCopyingUntilOneIsOomKilledAreTheRootCause) {
  Evidence e = job();
  copying_workers(e);
  oom_killed(e, 1, 119);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0].kind, FindingKind::kMemoryLeak);
  EXPECT_THAT(d.findings[0].title, HasSubstr("DataLoader workers copy"));
  EXPECT_EQ(d.findings[0].severity, Severity::kError);
  EXPECT_TRUE(d.findings[0].root_cause);
  EXPECT_EQ(d.findings[1].kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(d.findings[1].pids, ElementsAre(kWorker0));
  EXPECT_THAT(d.findings[0].evidence, Contains(HasSubstr("(host-oom-killed): memory ran out")));
}

// A worker whose RSS grows with its USS leaks like any process.
TEST(RuleMemoryLeak, AWorkerWhoseRssGrowsTooIsAnOrdinaryLeak) {
  Evidence e = job(300);
  set_rss(e, kWorker1, leaking);
  for (store::ProcSample& s : e.proc_samples) {
    if (s.pid == kWorker1 && s.uss) s.uss = s.rss - 500 * kMiB;
  }
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].title,
            "worker 1 of rank 0 (pid 2011): host memory grows 600 MiB per minute");
  EXPECT_THAT(d.findings[0].fix, HasSubstr("a cache that grows with every sample read"));
}

// Workers make their rank's batches, one per step: their growth is per rank step, where the
// rank counts steps, and both workers' growth is one finding, its headroom used by both.
TEST(RuleMemoryLeak, WorkersGrowingWithTheirRanksStepsAreOneFinding) {
  Evidence e = job();
  add_steps(e);
  set_rss(e, kWorker0, leaking);
  set_rss(e, kWorker1, leaking);
  Diagnosis d = diagnose(e);
  ASSERT_EQ(d.findings.size(), 1u);
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.title,
            "2 DataLoader workers of rank 0 (pid 2000): host memory grows 10.0 MiB per step "
            "together");
  EXPECT_THAT(f.pids, ElementsAre(kWorker0, kWorker1));
  EXPECT_THAT(f.evidence, Contains(HasSubstr("RSS of worker 1 of rank 0 (pid 2011) grew from")));
  EXPECT_THAT(f.evidence, Contains(std::string("a step is one of the optimizer steps of their "
                                               "rank, rank 0 (pid 2000), whose batches they make, "
                                               "counted by traindoc's Python hook")));
  // 10 GiB left at 10 MiB a step.
  EXPECT_THAT(f.evidence, Contains(HasSubstr("runs out after about 1024 more steps")));
  EXPECT_THAT(f.fix, HasSubstr("functools.lru_cache(maxsize=...)"));

  // One worker alone is named, per its rank's steps.
  Evidence one = job();
  add_steps(one);
  set_rss(one, kWorker1, leaking);
  d = diagnose(one);
  ASSERT_EQ(leaks(d).size(), 1u);
  EXPECT_EQ(leaks(d)[0]->title,
            "worker 1 of rank 0 (pid 2011): host memory grows 5.00 MiB per step");
  EXPECT_THAT(leaks(d)[0]->evidence,
              Contains(std::string("a step is one of the optimizer steps of its rank, rank 0 (pid "
                                   "2000), whose batches it makes, counted by traindoc's Python "
                                   "hook")));

  // A new epoch's workers (the DataLoader starts new ones) are not alive with the last epoch's:
  // a finding for each pair, whose growth together is theirs.
  Evidence epochs = job(300);
  for (int s = 10; s < 300; ++s) {
    epochs.steps.push_back(
        {kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kOptimizer, 2 * (s - 10)});
  }
  for (int pid : {kWorker1 + 1, kWorker1 + 2}) {
    store::ProcessRecord next = epochs.processes[1];
    next.pid = pid;
    next.start_ticks += 1000 + static_cast<uint64_t>(pid);
    next.start_ns = kT0 + 150 * kSecond;
    epochs.processes.push_back(next);
    for (store::ProcSample sample : e.proc_samples) {
      if (sample.pid != kWorker0) continue;
      sample.pid = pid;
      sample.start_ticks = next.start_ticks;
      sample.t_ns += 150 * kSecond;
      epochs.proc_samples.push_back(sample);
    }
  }
  std::erase_if(epochs.proc_samples, [](const store::ProcSample& sample) {
    return (sample.pid == kWorker0 || sample.pid == kWorker1) && sample.t_ns >= kT0 + 150 * kSecond;
  });
  for (int pid : {kWorker0, kWorker1}) set_rss(epochs, pid, leaking);
  d = diagnose(epochs);
  ASSERT_EQ(leaks(d).size(), 2u);
  EXPECT_THAT(leaks(d)[0]->pids, ElementsAre(kWorker0, kWorker1));
  EXPECT_THAT(leaks(d)[1]->pids, ElementsAre(kWorker1 + 1, kWorker1 + 2));
  EXPECT_THAT(leaks(d)[1]->title, HasSubstr("host memory grows 10.0 MiB per step together"));

  // A worker alive while its rank trained no steps (a validation loader's) grows per minute.
  Evidence validation = job(300);
  for (int s = 10; s < 20; ++s) {
    validation.steps.push_back(
        {kT0 + s * kSecond, kRank, kRankTicks, store::StepKind::kOptimizer, s - 10});
  }
  set_rss(validation, kWorker0, leaking);
  d = diagnose(validation);
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0].title,
            "worker 0 of rank 0 (pid 2010): host memory grows 600 MiB per minute");
}

}  // namespace
}  // namespace traindoc::analysis
