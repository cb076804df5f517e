// One diagnosis for a job of two nodes: rank 0 on nodeA, rank 1 on nodeB, each node's evidence
// as its own traindoc stored it, nodeB's clock running ahead by a known offset.
#include "analysis/job_diagnosis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture

using testing::HasSubstr;

constexpr int64_t kSkew = 3'700'000'000;  // nodeB's clock ahead of nodeA's
constexpr uint64_t kWorld = 7;            // the world group's identity, alike on every rank

const std::string kClosed =
    "[default0]:RuntimeError: [./gloo/transport/tcp/pair.cc:598] Connection closed by peer "
    "[127.0.0.1]:61103";

// The torchrun job's processes of one node: its launcher, and `rank` with its worker.
Evidence node_of(int rank) {
  Evidence e = torchrun_job();
  int other = rank == 0 ? kRank1 : kRank0;
  int other_worker = rank == 0 ? kWorker1 : kWorker0;
  std::erase_if(e.processes,
                [&](const ProcessRecord& p) { return p.pid == other || p.pid == other_worker; });
  return e;
}

// Both ranks' all_reduce #1 to #5, a second apart; this node's rank left each `jitter_ns` after
// the moment on the true clock.
void all_reduces(Evidence& e, int pid, int rank, int64_t jitter_ns) {
  for (uint64_t n = 1; n <= 5; ++n) {
    store::CollectiveCall call;
    call.pid = pid;
    call.group = kWorld;
    call.number = n;
    call.group_rank = rank;
    call.group_size = 2;
    call.source = "python";
    call.op = "all_reduce";
    call.t_ns = at(static_cast<double>(n)) - 1'000'000;
    call.end_ns = at(static_cast<double>(n)) + (n % 2 == 0 ? jitter_ns : -jitter_ns);
    e.collectives.push_back(call);
  }
}

// The node's clock `ahead_ns` ahead of the true one: every time it stored.
void clock_ahead(Evidence& e, int64_t ahead_ns) {
  e.run.start_ns += ahead_ns;
  if (e.run.end_ns != 0) e.run.end_ns += ahead_ns;
  for (ProcessRecord& p : e.processes) {
    p.start_ns += ahead_ns;
    if (p.end_ns != 0) p.end_ns += ahead_ns;
  }
  for (store::LogLine& line : e.log_lines) line.t_ns += ahead_ns;
  for (store::HostSample& h : e.host_samples) h.t_ns += ahead_ns;
  for (store::CollectiveCall& call : e.collectives) {
    call.t_ns += ahead_ns;
    call.end_ns += ahead_ns;
  }
}

// nodeA: rank 0 loses its connection at 5.1 s; nodeB: rank 1 dies of SIGSEGV at 5.0 s (true
// times), its clock ahead by kSkew.
struct TwoNodes {
  Evidence a = node_of(0);
  Evidence b = node_of(1);

  TwoNodes() {
    a.run.node = "nodeA";
    b.run.node = "nodeB";
    a.log_lines = {
        stderr_line(5.1, 10, "[default0]:Traceback (most recent call last):"),
        stderr_line(5.1, 11,
                    "[default0]:  File \"/home/user/proj/train.py\", line 18, in <module>"),
        stderr_line(5.1, 12, kClosed),
    };
    exited(a, kRank0, 5.3, 1);
    exited(a, kLauncher, 6.0, 1);
    a.run.end_ns = at(6.1);
    a.run.exit_code = 1;
    killed(b, kRank1, 5.0, SIGSEGV);
    exited(b, kLauncher, 5.5, 1);
    b.run.end_ns = at(5.6);
    b.run.exit_code = 1;
    all_reduces(a, kRank0, 0, 0);
    all_reduces(b, kRank1, 1, 200'000);
    clock_ahead(b, kSkew);
  }

  std::vector<NodeEvidence> nodes() const { return {{"nodeA", &a}, {"nodeB", &b}}; }
};

TEST(JobDiagnosis, ANodesClockIsAlignedOnTheCallsBothLeft) {
  TwoNodes job;
  std::vector<NodeClock> clocks = align_clocks(job.nodes());
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_EQ(clocks[0].offset_ns, 0);
  EXPECT_EQ(clocks[1].calls, 5u);
  EXPECT_LE(std::llabs(clocks[1].offset_ns - kSkew), 200'000);
  EXPECT_LE(clocks[1].residual_ns, 400'000);
  EXPECT_GE(clocks[1].residual_ns, 200'000);  // the jitter shows in the residual
}

TEST(JobDiagnosis, TheCrashOnOneNodeIsTheRootOfTheLostConnectionOnAnother) {
  TwoNodes job;
  Diagnosis d = diagnose_job(job.nodes());
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  ASSERT_TRUE(root.root_cause) << root.title;
  EXPECT_THAT(root.title, HasSubstr("rank 1 (pid 1011 on nodeB)"));
  EXPECT_LE(std::llabs(root.t_ns - at(5.0)), 1'000'000);  // on nodeA's clock
  bool lost = false;
  for (size_t k : root.consequences) {
    ASSERT_LT(k, d.findings.size());
    const Finding& f = d.findings[k];
    EXPECT_FALSE(f.root_cause);
    if (f.kind == FindingKind::kPeerExited) {
      lost = true;
      EXPECT_THAT(f.title, HasSubstr("rank 0 (pid 1010 on nodeA)"));
    }
  }
  EXPECT_TRUE(lost) << "nodeA's lost connection is not among the root's consequences";
  EXPECT_EQ(std::count_if(d.findings.begin(), d.findings.end(),
                          [](const Finding& f) { return f.root_cause; }),
            1);
  // Both launchers (pid 1000 on each node) and both ranks, each with its node.
  ASSERT_EQ(d.processes.size(), 6u);
  EXPECT_EQ(d.nodes.size(), 2u);
  EXPECT_EQ(d.nodes[1].ranks, std::vector<int>{1});
  EXPECT_EQ(d.run.exit_code, 1);
  for (const ProcessSummary& p : d.processes) EXPECT_FALSE(p.node.empty());
}

TEST(JobDiagnosis, ARankOfAFailureOwnIsTheRootThoughItsClockIsNotAligned) {
  TwoNodes job;
  job.b.collectives.clear();  // nodeB stored no call: its clock stays 3.7 s ahead
  Diagnosis d = diagnose_job(job.nodes());
  ASSERT_FALSE(d.findings.empty());
  EXPECT_THAT(d.findings.front().title, HasSubstr("on nodeB"));
  EXPECT_EQ(d.nodes[1].clock.calls, 0u);
  EXPECT_THAT(d.missing_evidence,
              testing::Contains(HasSubstr("nodeB's clock is not aligned with nodeA's")));
}

TEST(JobDiagnosis, AMissingNodeFolderIsNamedByItsRanks) {
  TwoNodes job;
  Diagnosis d = diagnose_job({{"nodeA", &job.a}});
  EXPECT_THAT(d.missing_evidence,
              testing::Contains(HasSubstr("rank 1 of 2 ran on no node whose folder was given")));
  // Alone, nodeA's lost connection is its root cause, as its own report says.
  ASSERT_FALSE(d.findings.empty());
  EXPECT_EQ(d.findings.front().kind, FindingKind::kPeerExited);
}

TEST(JobDiagnosis, ANodeWhoseTraindocDidNotSeeTheEndIsCutShort) {
  TwoNodes job;
  job.b.run.end_ns = 0;
  job.b.run.exit_code.reset();
  Diagnosis d = diagnose_job(job.nodes());
  EXPECT_FALSE(d.nodes[1].ended);
  EXPECT_EQ(d.run.end_ns, 0);
  EXPECT_THAT(d.missing_evidence,
              testing::Contains(HasSubstr("nodeB: its traindoc did not see the job end")));
}

}  // namespace
}  // namespace traindoc::analysis
