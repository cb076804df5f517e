// Tests of the OOM evidence of a SIGKILLed process from its own memory cgroup (not traindoc's)
// and from the kernel log: a job that moved into a child cgroup with a limit, a kill the kernel
// named, a kill counted only in a cgroup the process was not in, and a kernel log that lost
// records around a process's end, whose silence then tells nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/oom_facts.h"
#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture
using store::CgroupSample;
using store::Evidence;
using store::HostSample;
using store::KernelOomKill;
using store::ProcessCgroup;
using testing::AllOf;
using testing::Contains;
using testing::HasSubstr;
using testing::Not;

const std::string kChild = "/sys/fs/cgroup/memory/job/step_0";

// traindoc's own cgroup: unlimited, no OOM kill at any time.
HostSample host(double seconds, uint64_t oom_kills = 0) {
  HostSample h;
  h.t_ns = at(seconds);
  h.mem_total = 16 * kGiB;
  h.mem_available = 9 * kGiB;
  h.cgroup_version = 1;
  h.cgroup_current = 900 * kMiB;
  h.cgroup_oom_kills = oom_kills;
  return h;
}

CgroupSample child(double seconds, uint64_t current, uint64_t oom_kills) {
  return {at(seconds), kChild, 1, current, 64 * kMiB, kChild, oom_kills};
}

// Rank 0 moved itself into kChild at 2 s, grew there and was killed at 10.5 s.
Evidence moved_rank() {
  Evidence e = torchrun_job();
  for (double t : {1.0, 4.0, 8.0, 10.0, 11.0}) e.host_samples.push_back(host(t));
  const store::ProcessRecord& r = process(e, kRank0);
  e.process_cgroups = {{at(1), kRank0, r.start_ticks, 1, "/job", "/sys/fs/cgroup/memory/job"},
                       {at(2), kRank0, r.start_ticks, 1, "/job/step_0", kChild}};
  e.cgroup_samples = {child(4, 12 * kMiB, 0), child(8, 40 * kMiB, 0),
                      child(10, 63 * kMiB + 900 * 1024, 0), child(10.6, 2 * kMiB, 1)};
  killed(e, kRank0, 10.5, SIGKILL);
  return e;
}

TEST(OomCgroup, AKillInTheProcessesOwnCgroupIsHostOomWithItsLimitAndGrowth) {
  Diagnosis d = diagnose(moved_rank());
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kHostOomKilled);
  EXPECT_TRUE(f.root_cause);
  EXPECT_THAT(f.title, HasSubstr("killed by the out-of-memory killer at its memory cgroup's "
                                 "64.0 MiB limit"));
  EXPECT_THAT(f.evidence, Contains("its memory cgroup " + kChild +
                                   " counted an OOM kill: its oom_kill count rose from 0 to 1"));
  EXPECT_THAT(f.evidence, Contains("its memory cgroup " + kChild +
                                   " at 63.9 MiB of its 64.0 "
                                   "MiB limit"));
  EXPECT_THAT(f.evidence, Contains("its memory cgroup " + kChild +
                                   " grew from 12.0 MiB to "
                                   "63.9 MiB in the 6.5 s before the kill (its limit: 64.0 MiB)"));
  // Nothing of traindoc's own cgroup, which the process had left.
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("traindoc's own"))));
  EXPECT_THAT(f.fix, HasSubstr("memory cgroup " + kChild));
}

TEST(OomCgroup, TheKernelLogNamingThePidIsEvidenceEnough) {
  Evidence e = moved_rank();
  e.cgroup_samples.clear();
  const store::ProcessRecord& r = process(e, kRank0);
  e.kernel_oom_kills = {{r.end_ns - 1'000'000, kRank0, "python3", true, "/job/step_0",
                         "/job/step_0", 100 * kMiB, 63 * kMiB, 1 * kMiB, 0}};
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(f.evidence,
              Contains("the kernel log: \"Memory cgroup out of memory: Killed process 1010 "
                       "(python3)\", with 63.0 MiB of anonymous memory; the limit hit was that "
                       "of cgroup /job/step_0"));
}

TEST(OomCgroup, TheKernelLogOfAMachineOomSaysSo) {
  Evidence e = moved_rank();
  e.cgroup_samples.clear();
  const store::ProcessRecord& r = process(e, kRank0);
  e.kernel_oom_kills = {{r.end_ns, kRank0, "python3", false, "", "/job", {}, {}, {}, {}}};
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings[0].kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(d.findings[0].title, HasSubstr(": the machine ran out of memory"));
}

// An OOM kill that traindoc's own cgroup counted is not one of a process that was elsewhere.
TEST(OomCgroup, AKillCountedInACgroupTheProcessWasNotInIsNoEvidence) {
  Evidence e = moved_rank();
  for (CgroupSample& s : e.cgroup_samples) {
    s.current = 10 * kMiB;
    s.oom_kills = 0;
  }
  e.host_samples = {host(8), host(10, 0), host(11, 1)};
  e.host_samples.back().cgroup_max = 1 * kGiB;
  e.host_samples.back().cgroup_current = 1 * kGiB;
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kKilledExternally);
  EXPECT_THAT(f.evidence, Contains("its memory cgroup " + kChild +
                                   " counted no OOM kill and was not near its 64.0 MiB limit"));
  EXPECT_THAT(f.evidence, Contains("the kernel log told no OOM kill of pid 1010"));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("traindoc's own"))));
}

// A worker gone before any walk read its own cgroup is taken to be in its parent's.
TEST(OomCgroup, AProcessNeverReadIsInItsParentsCgroup) {
  Evidence e = moved_rank();
  // The rank lives on; its worker, in the rank's cgroup, is the one killed.
  store::ProcessRecord& rank = process(e, kRank0);
  rank.end_ns = 0;
  rank.exit_signal.reset();
  rank.end_source = store::EndSource::kNone;
  killed(e, kWorker0, 10.5, SIGKILL);
  OomFacts facts = oom_facts(e, process(e, kWorker0));
  EXPECT_EQ(facts.cgroup_dir, kChild);
  EXPECT_THAT(facts.evidence, Contains(AllOf(HasSubstr("its parent's memory cgroup " + kChild),
                                             HasSubstr("oom_kill count rose from 0 to 1"))));
}

TEST(OomCgroup, AKernelLogThatCouldNotBeReadIsMissingEvidence) {
  Evidence e = moved_rank();
  e.events.push_back({at(0), store::EventKind::kKernelLogUnavailable, 0,
                      "the kernel log (/dev/kmsg) could not be read (Permission denied)"});
  e.cgroup_samples.clear();
  Diagnosis d = diagnose(e);
  EXPECT_THAT(d.missing_evidence, Contains(HasSubstr("/dev/kmsg")));
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings[0].evidence, Contains("the kernel log was not read"));
}

// The kernel log lost 37 records, written between `after` and `found` seconds into the run.
store::Event kernel_log_lost(double after, double found, int64_t total = 37) {
  return {at(found), store::EventKind::kKernelLogRecordsLost, 0, "", total, at(after)};
}

// A SIGKILL that neither the cgroup nor the kernel log tells as an OOM kill.
Evidence unexplained_kill() {
  Evidence e = moved_rank();
  for (CgroupSample& s : e.cgroup_samples) {
    s.current = 10 * kMiB;
    s.oom_kills = 0;
  }
  return e;
}

TEST(OomCgroup, AKernelLogThatLostRecordsAroundTheEndDoesNotTellNoKill) {
  Evidence e = unexplained_kill();
  e.events.push_back(kernel_log_lost(10.3, 10.6));
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_THAT(f.evidence, Contains("the kernel log lost records around the end of pid 1010, so "
                                   "its account of an OOM kill of it may be missing"));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("told no OOM kill"))));
}

// Found after the end, the loss may hold records written before it: a reader that lagged.
TEST(OomCgroup, ALossFoundLaterThatBeganBeforeTheEndCounts) {
  Evidence e = unexplained_kill();
  e.events.push_back(kernel_log_lost(9.0, 40.0));
  OomFacts facts = oom_facts(e, process(e, kRank0));
  EXPECT_THAT(facts.checked, Contains(HasSubstr("the kernel log lost records around the end")));
  // Without its start, the loss may have begun at any time before it was found.
  e.events.back().b.reset();
  facts = oom_facts(e, process(e, kRank0));
  EXPECT_THAT(facts.checked, Contains(HasSubstr("the kernel log lost records around the end")));
}

// Beyond the cap on events of a kind, the middle ones roll away: a loss may have been there.
TEST(OomCgroup, LossesRolledAwayMayHaveBeenAroundTheEnd) {
  Evidence e = unexplained_kill();
  e.events.push_back(kernel_log_lost(1.0, 2.0, 3));
  e.events.push_back(kernel_log_lost(30.0, 31.0, 9000));
  OomFacts facts = oom_facts(e, process(e, kRank0));
  EXPECT_THAT(facts.checked, Contains("the kernel log told no OOM kill of pid 1010"));
  e.events_dropped["kernel-log-records-lost"] = 12;
  facts = oom_facts(e, process(e, kRank0));
  EXPECT_THAT(facts.checked, Contains(HasSubstr("the kernel log lost records around the end")));
}

TEST(OomCgroup, ALossFarFromTheEndLeavesTheKernelLogsWord) {
  Evidence e = unexplained_kill();
  e.events.push_back(kernel_log_lost(1.0, 2.0));        // records of the run's start
  e.events.push_back(kernel_log_lost(13.0, 14.0, 40));  // after the kill's record
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings[0].evidence, Contains("the kernel log told no OOM kill of pid 1010"));
  EXPECT_THAT(d.findings[0].evidence, Not(Contains(HasSubstr("lost records"))));
}

TEST(OomCgroup, AKillTheKernelLogToldStandsDespiteALoss) {
  Evidence e = unexplained_kill();
  const store::ProcessRecord& r = process(e, kRank0);
  e.kernel_oom_kills = {{r.end_ns - 1'000'000, kRank0, "python3", true, "/job/step_0",
                         "/job/step_0", 100 * kMiB, 63 * kMiB, 1 * kMiB, 0}};
  e.events.push_back(kernel_log_lost(10.3, 10.6));
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& f = d.findings[0];
  EXPECT_EQ(f.kind, FindingKind::kHostOomKilled);
  EXPECT_THAT(f.evidence, Contains(HasSubstr("the kernel log: \"Memory cgroup out of memory: "
                                             "Killed process 1010 (python3)\"")));
  EXPECT_THAT(f.evidence, Not(Contains(HasSubstr("lost records"))));
}

TEST(OomCgroup, TheKernelLogsLostRecordsAreMissingEvidenceOnceWithTheirTotal) {
  Evidence e = unexplained_kill();
  EXPECT_THAT(diagnose(e).missing_evidence, Not(Contains(HasSubstr("kernel log"))));
  e.events.push_back(kernel_log_lost(1.0, 2.0, 3));
  e.events.push_back(kernel_log_lost(10.3, 10.6, 37));
  Diagnosis d = diagnose(e);
  EXPECT_THAT(d.missing_evidence,
              Contains("at least 37 kernel log records were lost (overwritten by the kernel "
                       "before traindoc read them): an OOM kill told in them is not known"));
  EXPECT_EQ(std::count_if(d.missing_evidence.begin(), d.missing_evidence.end(),
                          [](const std::string& s) { return s.find("kernel log") != s.npos; }),
            1);
  e.events = {kernel_log_lost(1.0, 2.0, 1)};
  EXPECT_THAT(diagnose(e).missing_evidence,
              Contains(HasSubstr("at least 1 kernel log record was lost")));
}

}  // namespace
}  // namespace traindoc::analysis
