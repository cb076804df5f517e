// Tests of diagnose(): per-process peaks from the samples, start order, roles, the notes on
// missing evidence; and of format_bytes.
#include "analysis/diagnosis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace traindoc::analysis {
namespace {

using store::Evidence;
using store::ProcessRecord;
using store::ProcSample;

constexpr uint64_t kMiB = 1024 * 1024;

ProcessRecord proc(int pid, int ppid, uint64_t start_ticks, const std::string& cmdline,
                   bool agent = true) {
  ProcessRecord p;
  p.pid = pid;
  p.ppid = ppid;
  p.start_ticks = start_ticks;
  p.start_ns = static_cast<int64_t>(start_ticks) * 10'000'000;
  p.cmdline = cmdline;
  p.argv0 = cmdline.substr(0, cmdline.find(' '));
  p.agent = agent;
  return p;
}

ProcSample sample(int pid, uint64_t start_ticks, int64_t t_ns, uint64_t rss) {
  ProcSample s;
  s.t_ns = t_ns;
  s.pid = pid;
  s.start_ticks = start_ticks;
  s.rss = rss;
  return s;
}

store::HostSample host_sample() {
  store::HostSample h;
  h.t_ns = 1;
  h.mem_total = 8ull << 30;
  h.mem_available = 4ull << 30;
  return h;
}

const ProcessSummary* find(const Diagnosis& d, int pid, uint64_t start_ticks) {
  for (const ProcessSummary& p : d.processes) {
    if (p.record.pid == pid && p.record.start_ticks == start_ticks) return &p;
  }
  return nullptr;
}

TEST(FormatBytes, Units) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1), "1 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(17 * 1024), "17.0 KiB");
  EXPECT_EQ(format_bytes(99 * 1024), "99.0 KiB");
  EXPECT_EQ(format_bytes(100 * 1024), "100 KiB");
  EXPECT_EQ(format_bytes(100 * kMiB), "100 MiB");
  EXPECT_EQ(format_bytes(512 * kMiB), "512 MiB");
  EXPECT_EQ(format_bytes(kMiB), "1.0 MiB");
  EXPECT_EQ(format_bytes(static_cast<uint64_t>(3.2 * (1ull << 30))), "3.2 GiB");
  EXPECT_EQ(format_bytes(5ull << 40), "5.0 TiB");
  // Beyond the last unit the number grows instead.
  EXPECT_EQ(format_bytes(2048ull << 40), "2048 TiB");
}

TEST(FormatBytes, JustBelowTheNextUnit) {
  // 1023.99 KiB: should read as the next unit, not as "1024 KiB".
  std::string text = format_bytes(kMiB - 10);
  EXPECT_EQ(text, "1.0 MiB");
}

TEST(Severity, Names) {
  EXPECT_STREQ(to_string(Severity::kError), "error");
  EXPECT_STREQ(to_string(Severity::kWarning), "warning");
  EXPECT_STREQ(to_string(Severity::kInfo), "info");
}

TEST(Diagnose, EmptyEvidence) {
  Evidence evidence;
  Diagnosis d = diagnose(evidence);
  EXPECT_TRUE(d.processes.empty());
  EXPECT_TRUE(d.findings.empty());
  // Nothing ran without the agent, but no host samples were taken either.
  EXPECT_EQ(d.missing_evidence, std::vector<std::string>{"no host memory samples were taken"});
}

TEST(Diagnose, CopiesTheRun) {
  Evidence evidence;
  evidence.run.command = {"python3", "train.py"};
  evidence.run.root_pid = 10;
  evidence.run.exit_code = 1;
  evidence.run.start_ns = 5;
  evidence.run.end_ns = 50;
  evidence.host_samples.push_back(host_sample());
  Diagnosis d = diagnose(evidence);
  EXPECT_EQ(d.run, evidence.run);
}

TEST(Diagnose, PeaksPerProcess) {
  Evidence evidence;
  evidence.run.root_pid = 10;
  evidence.host_samples.push_back(host_sample());
  evidence.processes.push_back(proc(10, 1, 100, "python3 train.py"));
  evidence.processes.push_back(proc(11, 10, 110, "python3 train.py"));

  ProcSample a = sample(10, 100, 1, 100 * kMiB);
  a.swap = 1 * kMiB;
  a.threads = 4;
  a.cpu_user_s = 1.0;
  a.cpu_sys_s = 0.5;
  ProcSample b = sample(10, 100, 2, 300 * kMiB);
  b.pss = 250 * kMiB;
  b.uss = 200 * kMiB;
  b.fds = 40;
  b.fd_limit = 1024;
  b.threads = 12;
  b.swap = 0;
  b.cpu_user_s = 3.0;
  b.cpu_sys_s = 1.0;
  ProcSample c = sample(10, 100, 3, 200 * kMiB);  // lower than b: the peak stays
  c.pss = 150 * kMiB;
  c.uss = 120 * kMiB;
  c.fds = 30;
  c.fd_limit = 4096;  // the latest limit (it can be raised by the process)
  c.threads = 8;
  c.cpu_user_s = 3.5;
  c.cpu_sys_s = 1.0;
  evidence.proc_samples = {a, b, c};

  Diagnosis d = diagnose(evidence);
  ASSERT_EQ(d.processes.size(), 2u);
  const ProcessSummary* root = find(d, 10, 100);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->peak_rss, 300 * kMiB);
  EXPECT_EQ(root->peak_pss, 250 * kMiB);
  EXPECT_EQ(root->peak_uss, 200 * kMiB);
  EXPECT_EQ(root->peak_swap, 1 * kMiB);
  EXPECT_EQ(root->peak_fds, 40);
  EXPECT_EQ(root->fd_limit, 4096);
  EXPECT_EQ(root->peak_threads, 12);
  EXPECT_DOUBLE_EQ(root->cpu_s, 4.5);

  // Without samples, nothing is made up; nor from a zombie's, which reads 0.
  evidence.proc_samples.push_back(sample(11, 110, 4, 0));
  d = diagnose(evidence);
  const ProcessSummary* worker = find(d, 11, 110);
  ASSERT_NE(worker, nullptr);
  EXPECT_FALSE(worker->peak_rss.has_value());
  EXPECT_FALSE(worker->peak_pss.has_value());
  EXPECT_FALSE(worker->peak_uss.has_value());
  EXPECT_FALSE(worker->peak_fds.has_value());
  EXPECT_FALSE(worker->fd_limit.has_value());
  EXPECT_FALSE(worker->peak_threads.has_value());
  EXPECT_EQ(worker->cpu_s, 0);
}

TEST(Diagnose, FastSamplesWithoutPssLeaveItAbsent) {
  // pss/uss/fds are sampled at a lower rate: a process with only fast samples has none.
  Evidence evidence;
  evidence.processes.push_back(proc(10, 1, 100, "python3 train.py"));
  evidence.proc_samples = {sample(10, 100, 1, 5 * kMiB), sample(10, 100, 2, 7 * kMiB)};
  Diagnosis d = diagnose(evidence);
  ASSERT_EQ(d.processes.size(), 1u);
  EXPECT_EQ(d.processes[0].peak_rss, 7 * kMiB);
  EXPECT_FALSE(d.processes[0].peak_pss.has_value());
  EXPECT_FALSE(d.processes[0].peak_uss.has_value());
  EXPECT_FALSE(d.processes[0].peak_fds.has_value());
  EXPECT_EQ(d.processes[0].peak_threads, 0);
}

TEST(Diagnose, SamplesGoToTheRightIncarnationOfAReusedPid) {
  Evidence evidence;
  evidence.processes.push_back(proc(10, 1, 100, "python3 train.py"));
  evidence.processes.push_back(proc(20, 10, 110, "python3 train.py"));
  evidence.processes.push_back(proc(20, 10, 900, "python3 train.py"));
  evidence.proc_samples = {
      sample(20, 110, 1, 50 * kMiB),  sample(20, 900, 2, 70 * kMiB), sample(20, 110, 3, 60 * kMiB),
      sample(20, 555, 4, 999 * kMiB),  // a process not in the table: ignored
      sample(77, 100, 5, 999 * kMiB),
  };
  Diagnosis d = diagnose(evidence);
  ASSERT_EQ(d.processes.size(), 3u);
  EXPECT_EQ(find(d, 20, 110)->peak_rss, 60 * kMiB);
  EXPECT_EQ(find(d, 20, 900)->peak_rss, 70 * kMiB);
  EXPECT_FALSE(find(d, 10, 100)->peak_rss.has_value());
}

// Each process's last count per kind, by incarnation; the step count prefers optimizer steps.
TEST(Diagnose, StepCountsPerProcess) {
  using store::StepKind;
  Evidence evidence;
  evidence.processes.push_back(proc(20, 1, 110, "python3 train.py"));
  evidence.processes.push_back(proc(20, 1, 900, "python3 train.py"));
  evidence.processes.push_back(proc(30, 1, 120, "python3 train.py"));
  evidence.steps = {
      {1, 20, 110, StepKind::kOptimizer, 5}, {2, 20, 110, StepKind::kBackward, 6},
      {3, 20, 900, StepKind::kBackward, 9},  {4, 20, 110, StepKind::kOptimizer, 8},
      {5, 77, 110, StepKind::kOptimizer, 1},  // a process not in the table: ignored
  };
  Diagnosis d = diagnose(evidence);
  EXPECT_EQ(find(d, 20, 110)->steps,
            (std::map<StepKind, int64_t>{{StepKind::kOptimizer, 8}, {StepKind::kBackward, 6}}));
  EXPECT_EQ(find(d, 20, 110)->step_count(), 8);
  EXPECT_EQ(find(d, 20, 900)->step_count(), 9);  // no optimizer: its backward calls
  EXPECT_EQ(find(d, 30, 120)->step_count(), std::nullopt);
}

TEST(Diagnose, ProcessesInStartOrderWithTheirRoles) {
  Evidence evidence;
  evidence.run.root_pid = 100;
  auto ranked = [](ProcessRecord p, int rank) {
    p.rank = rank;
    p.local_rank = rank;
    p.rank_source = common::RankSource::kTorch;
    return p;
  };
  // Listed out of order, as a store might return them.
  ProcessRecord worker = ranked(proc(103, 101, 1030, "python3 train.py"), 0);
  worker.forked = true;
  evidence.processes = {
      worker,
      ranked(proc(102, 100, 1011, "python3 train.py"), 1),
      proc(100, 1, 1000, "python3 /usr/bin/torchrun train.py"),
      ranked(proc(101, 100, 1010, "python3 train.py"), 0),
  };
  // Same start tick: start_ns, then pid, decide.
  ProcessRecord late = proc(99, 100, 1030, "nvidia-smi");
  late.start_ns = evidence.processes[0].start_ns + 1;
  evidence.processes.push_back(late);

  Diagnosis d = diagnose(evidence);
  ASSERT_EQ(d.processes.size(), 5u);
  std::vector<int> order;
  std::vector<std::string> roles;
  for (const ProcessSummary& p : d.processes) {
    order.push_back(p.record.pid);
    roles.push_back(describe(p.role));
  }
  EXPECT_EQ(order, (std::vector<int>{100, 101, 102, 103, 99}));
  EXPECT_EQ(roles, (std::vector<std::string>{"launcher", "rank 0", "rank 1", "worker 0 of rank 0",
                                             "other"}));
  // The record is carried over whole.
  EXPECT_EQ(d.processes[1].record, evidence.processes[3]);
}

TEST(Diagnose, MissingEvidenceNotes) {
  Evidence evidence;
  evidence.processes.push_back(proc(10, 1, 100, "python3 train.py"));
  evidence.processes.push_back(proc(11, 10, 110, "/usr/bin/sudo true", false));
  evidence.processes.push_back(proc(12, 10, 120, "./static-tool", false));
  evidence.events = {
      {1, store::EventKind::kSignalForwarded, 0, "SIGTERM, sent to 3 process(es)"},  // not a note
      {2, store::EventKind::kAgentNoSlot, 0,
       "3 process(es) started after all agent slots were taken"},
      {3, store::EventKind::kAgentRecordsDropped, 0, "7 agent record(s) were overwritten"},
      {4, store::EventKind::kAgentUnavailable, 0, "the agent could not start: no space"},
      {5, store::EventKind::kStoreFailed, 12, "cannot read /proc/12/smaps_rollup"},
  };
  Diagnosis d = diagnose(evidence);
  std::vector<std::string> expected = {
      "3 process(es) started after all agent slots were taken",
      "7 agent record(s) were overwritten",
      "the agent could not start: no space",
      "cannot read /proc/12/smaps_rollup",
      "2 process(es) ran without the agent (static or set-uid programs, programs given an "
      "environment of their own such as env -i or a traindoc inside the job, or gone before it "
      "started): only sampled from /proc",
      "no host memory samples were taken",
  };
  EXPECT_EQ(d.missing_evidence, expected);
}

TEST(Diagnose, CollectivesNotVisibleNameTheProcessAndWhy) {
  Evidence evidence;
  evidence.host_samples.push_back(host_sample());
  // Pid 10 was a rank that ended, then another process's: the event tells of the one alive then.
  evidence.processes.push_back(proc(10, 1, 100, "python3 train.py"));
  evidence.processes.back().rank = 1;
  evidence.processes.back().end_ns = 1'500'000'000;
  evidence.processes.push_back(proc(10, 1, 300, "python3 eval.py"));
  evidence.processes.push_back(proc(11, 1, 100, "python3 train.py"));
  auto why = static_cast<int64_t>(common::NcclNotVisible::kNoAudit);
  evidence.events = {
      {1'200'000'000, store::EventKind::kCollectivesNotVisible, 10, "", why},
      {3'200'000'000, store::EventKind::kCollectivesNotVisible, 10, "", why},
      {3'300'000'000, store::EventKind::kCollectivesNotVisible, 11, "", 99},  // a newer reason
  };
  Diagnosis d = diagnose(evidence);
  ASSERT_EQ(d.missing_evidence.size(), 3U);
  EXPECT_TRUE(d.missing_evidence[0].starts_with(
      "collectives not visible in pid 10 (rank 1): it loaded NCCL and traindoc saw none of its "
      "communicators; NCCL resolved by dlsym"))
      << d.missing_evidence[0];
  EXPECT_TRUE(d.missing_evidence[1].starts_with("collectives not visible in pid 10: it loaded"))
      << d.missing_evidence[1];
  EXPECT_EQ(d.missing_evidence[2],
            "collectives not visible in pid 11: its NCCL calls were not recorded");
}

TEST(Diagnose, NoNotesWhenEvidenceIsComplete) {
  Evidence evidence;
  evidence.processes.push_back(proc(10, 1, 100, "python3 train.py"));
  evidence.host_samples.push_back(host_sample());
  Diagnosis d = diagnose(evidence);
  EXPECT_TRUE(d.missing_evidence.empty());
}

TEST(Diagnose, CumulativeCountEventsGiveOneNote) {
  // The supervisor adds an agent-no-slot (and agent-records-dropped) event each time its running
  // count changes; each event's text carries the count so far.
  Evidence evidence;
  evidence.host_samples.push_back(host_sample());
  evidence.events = {
      {1, store::EventKind::kAgentNoSlot, 0,
       "1 process(es) started after all agent slots were taken"},
      {2, store::EventKind::kAgentNoSlot, 0,
       "4 process(es) started after all agent slots were taken"},
      {3, store::EventKind::kAgentRecordsDropped, 0, "2 agent record(s) were overwritten"},
      {4, store::EventKind::kAgentRecordsDropped, 0, "9 agent record(s) were overwritten"},
  };
  Diagnosis d = diagnose(evidence);
  EXPECT_EQ(d.missing_evidence,
            (std::vector<std::string>{"4 process(es) started after all agent slots were taken",
                                      "9 agent record(s) were overwritten"}));
}

}  // namespace
}  // namespace traindoc::analysis
