// The live collective checker: calls compared across ranks, stalls, ends of ranks.
#include "supervisor/collective_checker.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstring>

#include "supervisor/collective_text.h"

namespace traindoc::supervisor {
namespace {

using common::CollectiveOp;

constexpr uint64_t kWorld = 0xabc;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

AgentCollective call(int rank, uint64_t number, CollectiveOp op, std::vector<uint32_t> shape = {4},
                     uint8_t dtype = 7, const char* site = "train.py", int line = 10,
                     int64_t t = kT0) {
  AgentCollective out;
  out.pid = 100 + rank;
  out.start_ticks = 7;
  common::CollectiveCall& c = out.call;
  c.group = kWorld;
  c.number = number;
  c.time_ns = t + static_cast<int64_t>(number) * 1000;
  c.group_rank = rank;
  c.group_size = 2;
  c.peer = -1;
  c.line = line;
  c.op = static_cast<uint16_t>(op);
  c.event = static_cast<uint8_t>(common::CollectiveEvent::kEnter);
  c.source = static_cast<uint8_t>(common::CollectiveSource::kPython);
  c.dtype = dtype;
  c.redop = op == CollectiveOp::kAllReduce ? 0 : common::kRedOpNone;
  c.tensor_count = shape.empty() ? 0 : 1;
  c.ndims[0] = static_cast<uint8_t>(shape.size());
  c.tensor_dtypes[0] = dtype;
  for (size_t d = 0; d < shape.size(); ++d) c.dims[0][d] = shape[d];
  strncpy(c.site, site, sizeof(c.site) - 1);
  return out;
}

AgentCollective exit_of(const AgentCollective& enter, int64_t t) {
  AgentCollective out = enter;
  out.call.event = static_cast<uint8_t>(common::CollectiveEvent::kExit);
  out.call.time_ns = t;
  return out;
}

store::ProcessRecord ended(int rank, int status, int64_t t) {
  store::ProcessRecord p;
  p.pid = 100 + rank;
  p.start_ticks = 7;
  p.rank = rank;
  if (WIFEXITED(status)) p.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) p.exit_signal = WTERMSIG(status);
  p.end_ns = t;
  return p;
}

class CheckerTest : public ::testing::Test {
 protected:
  CheckerTest() : checker({.stall_ns = 3 * kSecond}) {
    for (int r = 0; r < 2; ++r) checker.process_started(100 + r, 7, r, 2);
  }
  // Both ranks make the same synchronous call, which returns.
  void both(uint64_t number, CollectiveOp op) {
    for (int r = 0; r < 2; ++r) {
      AgentCollective c = call(r, number, op);
      checker.add(c);
      checker.add(exit_of(c, c.call.time_ns + 10));
    }
  }
  CollectiveChecker checker;
};

TEST_F(CheckerTest, EqualCallsGiveNothing) {
  both(1, CollectiveOp::kAllReduce);
  both(2, CollectiveOp::kBroadcast);
  EXPECT_TRUE(checker.check(kT0 + 100 * kSecond).empty());
}

TEST_F(CheckerTest, ShapeMismatchNamesEachRanksShapeAndSite) {
  checker.add(call(0, 1, CollectiveOp::kAllReduce, {10}));
  EXPECT_TRUE(checker.check(kT0).empty());  // rank 1 has not called yet
  checker.add(call(1, 1, CollectiveOp::kAllReduce, {20}, 7, "train.py", 11));
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, "collective-mismatch");
  EXPECT_EQ(issue.field, "shape");
  EXPECT_EQ(issue.number, 1u);
  EXPECT_EQ(issue.first_ns, kT0 + 1000);
  ASSERT_EQ(issue.ranks.size(), 2u);
  EXPECT_EQ(issue.ranks[0].value, "[10]");
  EXPECT_EQ(issue.ranks[1].value, "[20]");
  EXPECT_EQ(issue.ranks[1].site, "train.py:11");
  EXPECT_EQ(issue.ranks[1].pid, 101);
  EXPECT_TRUE(found[0].dump_pids.empty());
  // The group is settled: the misaligned calls after it say nothing more.
  checker.add(call(0, 2, CollectiveOp::kBarrier, {}));
  checker.add(call(1, 2, CollectiveOp::kAllReduce));
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());
}

TEST_F(CheckerTest, SameBytesOtherTypeIsADtypeMismatch) {
  checker.add(call(0, 1, CollectiveOp::kAllReduce, {8}, 8));  // float64
  checker.add(call(1, 1, CollectiveOp::kAllReduce, {8}, 4));  // int64
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, "dtype");
  EXPECT_EQ(found[0].issue.ranks[0].value, "float64");
  EXPECT_EQ(found[0].issue.ranks[1].value, "int64");
}

TEST_F(CheckerTest, ReduceOpAndRootAreCompared) {
  AgentCollective max = call(1, 1, CollectiveOp::kAllReduce);
  max.call.redop = 2;
  checker.add(call(0, 1, CollectiveOp::kAllReduce));
  checker.add(max);
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, "reduce op");
  EXPECT_EQ(found[0].issue.ranks[1].value, "max");
}

TEST_F(CheckerTest, AnOpNeverMadeByTheOtherIsAMismatch) {
  checker.add(call(0, 1, CollectiveOp::kAllReduce));
  checker.add(call(1, 1, CollectiveOp::kReduce));
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, "collective-mismatch");
  EXPECT_EQ(found[0].issue.field, "op");
}

TEST_F(CheckerTest, SwappedCallsAreAnOrderIssue) {
  both(1, CollectiveOp::kAllReduce);
  both(2, CollectiveOp::kBroadcast);
  checker.add(call(0, 3, CollectiveOp::kAllReduce, {4}, 7, "train.py", 20));
  checker.add(call(1, 3, CollectiveOp::kBroadcast, {4}, 7, "train.py", 17));
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, "collective-order");
  EXPECT_EQ(found[0].issue.ranks[1].value, "broadcast #3 at train.py:17");
}

TEST_F(CheckerTest, SendAndRecvOfAPairAgree) {
  AgentCollective send = call(0, 1, CollectiveOp::kSend);
  AgentCollective recv = call(1, 1, CollectiveOp::kRecv);
  send.call.peer = 1;
  recv.call.peer = 0;
  checker.add(send);
  checker.add(recv);
  EXPECT_TRUE(checker.check(kT0).empty());
}

TEST_F(CheckerTest, AStallNamesTheMissingRankAndAsksForStacks) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 30));
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());  // within --stall-seconds
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, "collective-missing");
  EXPECT_EQ(issue.number, 2u);
  EXPECT_EQ(issue.ranks[0].state, "waiting in it");
  EXPECT_EQ(issue.ranks[0].site, "train.py:30");
  EXPECT_EQ(issue.ranks[1].state, "never called it");
  EXPECT_EQ(issue.ranks[1].last_call, "all_reduce #1 at train.py:10");
  EXPECT_EQ(issue.ranks[1].calls, 1u);
  EXPECT_EQ(found[0].dump_pids, (std::vector<int>{100, 101}));
  EXPECT_NE(issue.message.find("rank 1 never made all_reduce #2 at train.py:30"), std::string::npos)
      << issue.message;
}

// CASES.md H14: the rank was only slow; the same call from the same place comes late.
TEST_F(CheckerTest, AStalledRankThatComesLateIsAStraggler) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 30));
  ASSERT_EQ(checker.check(kT0 + 4 * kSecond).size(), 1u);  // the stall
  checker.add(call(1, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 30, kT0 + 9 * kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 9 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, "collective-missing");
  EXPECT_EQ(issue.field, "late");
  EXPECT_EQ(issue.number, 2u);
  EXPECT_EQ(issue.ranks[0].state, "waited in it");
  EXPECT_EQ(issue.ranks[1].state, "made it 9.0 s after the first rank");
  EXPECT_NE(issue.message.find("rank 1 made all_reduce #2 at train.py:30"), std::string::npos)
      << issue.message;
  EXPECT_NE(issue.message.find("a straggler"), std::string::npos) << issue.message;
  // The group is watched again: a later mismatch is still caught.
  checker.add(call(0, 3, CollectiveOp::kAllReduce, {4}));
  checker.add(call(1, 3, CollectiveOp::kAllReduce, {8}, 7, "train.py", 10, kT0 + 9 * kSecond));
  found = checker.check(kT0 + 10 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, "shape");
}

TEST_F(CheckerTest, ALateCallFromElsewhereLeavesTheStall) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 30));
  ASSERT_EQ(checker.check(kT0 + 4 * kSecond).size(), 1u);
  // Rank 1 skipped line 30 and all-reduces elsewhere: a desync that happens to pair up.
  checker.add(call(1, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 44, kT0 + 9 * kSecond));
  EXPECT_TRUE(checker.check(kT0 + 9 * kSecond).empty());
  EXPECT_TRUE(checker.check(kT0 + 20 * kSecond).empty());  // settled: reported once
}

TEST_F(CheckerTest, AMissingRankThatExitedNormallyIsNamedAtOnce) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce));
  checker.process_ended(ended(1, 0, kT0 + kSecond));
  EXPECT_TRUE(checker.check(kT0 + kSecond).empty());  // its last records may be unread
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, "collective-missing");
  EXPECT_EQ(found[0].issue.ranks[1].state, "exited 0 without calling it");
  EXPECT_EQ(found[0].dump_pids, (std::vector<int>{100}));
}

TEST_F(CheckerTest, AMissingRankThatCrashedMakesPeerExited) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce));
  checker.process_ended(ended(1, SIGSEGV, kT0 + kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, "peer-exited");
  EXPECT_EQ(found[0].issue.first_ns, kT0 + kSecond);  // after the crash it follows
  EXPECT_EQ(found[0].issue.ranks[1].state, "killed by SIGSEGV without calling it");
}

TEST_F(CheckerTest, AWaitThatGaveUpIsReportedBeforeTheStallTime) {
  both(1, CollectiveOp::kAllReduce);
  AgentCollective barrier = call(0, 2, CollectiveOp::kMonitoredBarrier, {});
  checker.add(barrier);
  checker.add(exit_of(barrier, kT0 + kSecond));  // its timeout raised
  // The launcher then ends the missing rank: a consequence, not a peer that died first.
  checker.process_ended(ended(1, SIGTERM, kT0 + kSecond + kSecond / 2));
  std::vector<FoundIssue> found = checker.check(kT0 + 3 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, "collective-missing");
  EXPECT_EQ(found[0].issue.op, "monitored_barrier");
  EXPECT_EQ(found[0].issue.ranks[1].state, "killed by SIGTERM without calling it");
}

TEST_F(CheckerTest, ARootsBroadcastMayReturnBeforeTheOthersJoin) {
  both(1, CollectiveOp::kAllReduce);
  AgentCollective root = call(0, 2, CollectiveOp::kBroadcast);
  root.call.peer = 0;
  checker.add(root);
  checker.add(exit_of(root, kT0 + 10));
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());
}

TEST_F(CheckerTest, ARankFailingSoonAfterAnotherExitedIsUnevenInputs) {
  checker.process_ended(ended(1, 0, kT0));
  checker.process_ended(ended(0, 1 << 8, kT0 + kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, "uneven-inputs");
  EXPECT_EQ(found[0].issue.first_ns, kT0);
  EXPECT_EQ(found[0].issue.ranks[0].group_rank, 1);
  EXPECT_EQ(found[0].issue.ranks[1].state, "exited 1");
  EXPECT_TRUE(checker.check(kT0 + 3 * kSecond).empty());  // once
}

TEST_F(CheckerTest, RanksThatAllExitNormallyAreFine) {
  both(1, CollectiveOp::kAllReduce);
  checker.process_ended(ended(1, 0, kT0));
  checker.process_ended(ended(0, 0, kT0 + kSecond));
  EXPECT_TRUE(checker.check(kT0 + 5 * kSecond, true).empty());
}

TEST_F(CheckerTest, CallsAreStoredWithTheirEnds) {
  both(1, CollectiveOp::kAllReduce);
  EXPECT_TRUE(checker.take_calls(false).empty());  // no issue: kept for the end
  std::vector<store::CollectiveCall> calls = checker.take_calls(true);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].op, "all_reduce");
  EXPECT_EQ(calls[0].tensors, "[4] float32");
  EXPECT_EQ(calls[0].site, "train.py:10");
  EXPECT_EQ(calls[0].end_ns, calls[0].t_ns + 10);
  EXPECT_TRUE(checker.take_calls(true).empty());  // each once
}

TEST(CollectiveText, ShapesAndNames) {
  AgentCollective c = call(0, 1, CollectiveOp::kAllGather, {20, 10}, 4);
  c.call.tensor_count = 2;
  c.call.ndims[1] = 0;
  c.call.tensor_dtypes[1] = 9;
  EXPECT_EQ(shapes_text(c.call, true), "[20, 10] int64; [] bfloat16");
  EXPECT_EQ(op_name(77), "op 77");
  EXPECT_EQ(redop_name(common::kRedOpNone), "");
  EXPECT_EQ(dtype_name(common::kDtypeUnknown), "");
}

}  // namespace
}  // namespace traindoc::supervisor
