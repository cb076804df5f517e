// The live collective checker: calls compared across ranks, stalls, ends of ranks.
#include "supervisor/collective_checker.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>
#include <cstring>

#include "store/collective_words.h"
#include "supervisor/collective_text.h"

namespace traindoc::supervisor {
namespace {

using common::CollectiveOp;
using store::IssueField;
using store::IssueKind;
using store::RankState;
using testing::HasSubstr;

constexpr uint64_t kWorld = 0xabc;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;

// A rank's part in words, as the terminal and the report tell it.
std::string words(const store::CollectiveIssue& issue, size_t rank) {
  return store::rank_state_text(issue, issue.ranks.at(rank));
}

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

// Rank `rank`'s side of the point-to-point pair from rank `from` to rank `to`: its group rank is
// 0 for the sender, 1 for the receiver, and its peer is the other side's rank.
AgentCollective p2p(int rank, int from, int to, uint64_t number, std::vector<uint32_t> shape = {4},
                    int line = 10) {
  bool sends = rank == from;
  AgentCollective c = call(rank, number, sends ? CollectiveOp::kSend : CollectiveOp::kRecv,
                           std::move(shape), 7, "train.py", line);
  c.call.group = 0x100 + static_cast<uint64_t>(from * 10 + to);
  c.call.group_rank = sends ? 0 : 1;
  c.call.peer = sends ? to : from;
  return c;
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
  // A call and its return at `end`, with the return's flags (raised).
  void returned(const AgentCollective& enter, int64_t end, uint8_t flags = 0) {
    AgentCollective out = exit_of(enter, end);
    out.call.flags = flags;
    checker.add(enter);
    checker.add(out);
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

// Rank 0 evaluates through the DDP model: its forward broadcasts the buffers from a line rank 1
// never calls the model from, and rank 1 leaves. In a world of two, that broadcast is rank 0's
// alone; an all_reduce of one rank of two is not (rank 1 may have skipped it).
TEST_F(CheckerTest, DdpsBroadcastFromALineOnlyOneRankRunsIsThatRanksAlone) {
  for (bool ddp : {true, false}) {
    CollectiveChecker fresh({.stall_ns = 3 * kSecond});
    for (int r = 0; r < 2; ++r) fresh.process_started(100 + r, 7, r, 2);
    CollectiveOp op = ddp ? CollectiveOp::kBroadcastCoalesced : CollectiveOp::kAllReduce;
    for (uint64_t n = 1; n <= 2; ++n) {
      for (int r = 0; r < 2; ++r) {
        AgentCollective c = call(r, n, op);
        fresh.add(c);
        fresh.add(exit_of(c, c.call.time_ns + 10));
      }
    }
    fresh.add(call(0, 3, op, {4}, 7, "train.py", 30));
    fresh.process_ended(ended(1, 0, kT0 + kSecond));
    std::vector<FoundIssue> found = fresh.check(kT0 + 2 * kSecond);
    ASSERT_EQ(found.size(), 1u) << ddp;
    std::string line = store::issue_line(found[0].issue);
    EXPECT_EQ(found[0].issue.alone, ddp) << line;
    if (ddp) {
      EXPECT_EQ(line.rfind("collective-missing: rank 0 alone ran a forward through the DDP model "
                           "at train.py:30, in code that only rank 0 runs: DDP's forward "
                           "broadcast the model's buffers (broadcast_coalesced #3 in the group",
                           0),
                0u)
          << line;
      EXPECT_EQ(words(found[0].issue, 1), "exited 0; never calls from there");
    } else {
      EXPECT_EQ(line.rfind("collective-missing: rank 1 never made all_reduce #3", 0), 0u) << line;
    }
  }
}

// Rank 0's backward waits in DDP's gradient all-reduce, which rank 1 never makes: rank 1 ran a
// backward less (uneven inputs) and left. With the same steps counted it is a collective rank 1
// skipped. One issue either way: the end that a lost peer's failure follows is told once.
TEST_F(CheckerTest, DdpsGradientAllReduceMissingOnARankOfFewerStepsIsUnevenInputs) {
  for (int64_t rank1_backwards : {3, 4}) {
    CollectiveChecker fresh({.stall_ns = 3 * kSecond});
    for (int r = 0; r < 2; ++r) fresh.process_started(100 + r, 7, r, 2);
    for (uint64_t n = 1; n <= 3; ++n) {
      for (int r = 0; r < 2; ++r) {
        AgentCollective c =
            call(r, n, CollectiveOp::kDdpGradientAllReduce, {17}, 7, "train.py", 26);
        fresh.add(c);
        fresh.add(exit_of(c, c.call.time_ns + 10));
      }
    }
    fresh.add(call(0, 4, CollectiveOp::kDdpGradientAllReduce, {17}, 7, "train.py", 26));
    fresh.steps_counted(100, store::StepKind::kBackward, 4);
    fresh.steps_counted(101, store::StepKind::kBackward, rank1_backwards);
    fresh.process_ended(ended(1, 0, kT0 + kSecond));
    fresh.process_ended(ended(0, 1 << 8, kT0 + kSecond + kSecond / 10));
    std::vector<FoundIssue> found = fresh.check(kT0 + 5 * kSecond);
    ASSERT_EQ(found.size(), 1u) << rank1_backwards;
    std::string line = store::issue_line(found[0].issue);
    std::string kind = rank1_backwards == 3 ? "uneven-inputs" : "collective-missing";
    EXPECT_EQ(line.rfind(kind + ": rank 1 never made ddp_gradient_all_reduce #4 at train.py:26", 0),
              0u)
        << line;
  }
}

// join(): the rank that ran out of inputs shadows the other's all-reduces from its exit of the
// `with`, the other makes them from the line that calls the model.
TEST_F(CheckerTest, JoinsShadowsOfTheOthersCallsAreNotComparedByPlace) {
  for (uint8_t flags : {common::kCollectiveJoinShadow, uint8_t{0}}) {
    CollectiveChecker fresh({.stall_ns = 3 * kSecond});
    for (int r = 0; r < 2; ++r) fresh.process_started(100 + r, 7, r, 2);
    for (int r = 0; r < 2; ++r) {
      AgentCollective c = call(r, 1, CollectiveOp::kAllReduce, {1}, 7, "train.py", 10 + r);
      c.call.flags = r == 1 ? flags : 0;
      fresh.add(c);
      fresh.add(exit_of(c, c.call.time_ns + 10));
    }
    std::vector<FoundIssue> found = fresh.check(kT0 + kSecond);
    EXPECT_EQ(found.size(), flags == 0 ? 1u : 0u) << int{flags};
  }
}

TEST_F(CheckerTest, ShapeMismatchNamesEachRanksShapeAndSite) {
  checker.add(call(0, 1, CollectiveOp::kAllReduce, {10}));
  EXPECT_TRUE(checker.check(kT0).empty());  // rank 1 has not called yet
  checker.add(call(1, 1, CollectiveOp::kAllReduce, {20}, 7, "train.py", 11));
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kMismatch);
  EXPECT_EQ(issue.field, IssueField::kShape);
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

// The Python hook marks the calls of the default group: the message calls it that, any other
// group by its members' ranks, and one whose members' ranks are unknown by its identity.
TEST_F(CheckerTest, TheDefaultGroupIsCalledSo) {
  std::vector<AgentCollective> calls = {call(0, 1, CollectiveOp::kAllReduce, {10}),
                                        call(1, 1, CollectiveOp::kAllReduce, {20})};
  for (AgentCollective& c : calls) checker.add(c);
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(store::issue_line(found[0].issue),
              HasSubstr("all_reduce #1 in the group of ranks 0, 1 has"));
  CollectiveChecker unknown({.stall_ns = 3 * kSecond});
  for (AgentCollective& c : calls) unknown.add(c);
  found = unknown.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(store::issue_line(found[0].issue),
              HasSubstr("all_reduce #1 in group 0000000000000abc (2 ranks)"));
  CollectiveChecker fresh({.stall_ns = 3 * kSecond});
  for (int r = 0; r < 2; ++r) fresh.process_started(100 + r, 7, r, 2);
  for (AgentCollective& c : calls) {
    c.call.flags = common::kCollectiveDefaultGroup;
    fresh.add(c);
  }
  found = fresh.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(store::issue_line(found[0].issue),
              HasSubstr("all_reduce #1 in the default group (2 ranks)"));
}

TEST_F(CheckerTest, SameBytesOtherTypeIsADtypeMismatch) {
  checker.add(call(0, 1, CollectiveOp::kAllReduce, {8}, 8));  // float64
  checker.add(call(1, 1, CollectiveOp::kAllReduce, {8}, 4));  // int64
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, IssueField::kDtype);
  EXPECT_EQ(found[0].issue.ranks[0].value, "float64");
  EXPECT_EQ(found[0].issue.ranks[1].value, "int64");
}

TEST_F(CheckerTest, ACpuTensorWhereTheOtherPassesACudaOneIsADeviceMismatch) {
  AgentCollective cpu = call(0, 1, CollectiveOp::kAllReduce);
  AgentCollective cuda = call(1, 1, CollectiveOp::kAllReduce);
  cpu.call.tensor_devices[0] = static_cast<uint8_t>(common::CollectiveDevice::kCpu);
  cuda.call.tensor_devices[0] = static_cast<uint8_t>(common::CollectiveDevice::kCuda);
  checker.add(cpu);
  checker.add(cuda);
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMismatch);
  EXPECT_EQ(found[0].issue.field, IssueField::kDevice);
  EXPECT_EQ(found[0].issue.ranks[0].value, "cpu");
  EXPECT_EQ(found[0].issue.ranks[1].value, "cuda");
  EXPECT_EQ(shapes_text(cuda.call, true), "[4] float32 cuda");
  EXPECT_EQ(shapes_text(cpu.call, true), "[4] float32");
}

TEST_F(CheckerTest, ReduceOpAndRootAreCompared) {
  AgentCollective max = call(1, 1, CollectiveOp::kAllReduce);
  max.call.redop = 2;
  checker.add(call(0, 1, CollectiveOp::kAllReduce));
  checker.add(max);
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, IssueField::kRedop);
  EXPECT_EQ(found[0].issue.ranks[1].value, "max");
}

// broadcast_object_list fills its list in place: lists of other lengths pair the wrong bytes.
// Object payloads differ by design, and are not compared.
TEST_F(CheckerTest, BroadcastObjectListsOfOtherLengthsAreAMismatch) {
  AgentCollective longer = call(1, 1, CollectiveOp::kBroadcastObject);
  longer.call.count = 3;
  AgentCollective shorter = call(0, 1, CollectiveOp::kBroadcastObject);
  shorter.call.count = 2;
  checker.add(shorter);
  checker.add(longer);
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMismatch);
  EXPECT_EQ(found[0].issue.field, IssueField::kListLength);
  EXPECT_EQ(found[0].issue.ranks[0].value, "2");
  EXPECT_EQ(found[0].issue.ranks[1].value, "3");
  longer.call.count = 2;
  longer.call.number = shorter.call.number = 2;
  longer.call.dims[0][0] = 99;  // another payload: no matter
  checker.add(shorter);
  checker.add(longer);
  EXPECT_TRUE(checker.check(kT0 + kSecond).empty());
}

TEST_F(CheckerTest, AnOpNeverMadeByTheOtherIsAMismatch) {
  checker.add(call(0, 1, CollectiveOp::kAllReduce));
  checker.add(call(1, 1, CollectiveOp::kReduce));
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMismatch);
  EXPECT_EQ(found[0].issue.field, IssueField::kOp);
}

TEST_F(CheckerTest, SwappedCallsAreAnOrderIssue) {
  both(1, CollectiveOp::kAllReduce);
  both(2, CollectiveOp::kBroadcast);
  checker.add(call(0, 3, CollectiveOp::kAllReduce, {4}, 7, "train.py", 20));
  checker.add(call(1, 3, CollectiveOp::kBroadcast, {4}, 7, "train.py", 17));
  std::vector<FoundIssue> found = checker.check(kT0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kOrder);
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

// Three ranks: rank 0 runs a metric sync in rank-0-only code (CASES.md H16).
class ThreeRanks : public ::testing::Test {
 protected:
  ThreeRanks() {
    for (int r = 0; r < 3; ++r) checker.process_started(100 + r, 7, r, 3);
  }
  void add(int rank, uint64_t number, int line, CollectiveOp op = CollectiveOp::kAllReduce) {
    AgentCollective c = call(rank, number, op, {1}, 7, "train.py", line);
    c.call.group_size = 3;
    if (op == CollectiveOp::kBroadcast) c.call.peer = 0;
    checker.add(c);
  }
  // The message of the one issue found a second in.
  std::string only_message() {
    std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
    return found.size() == 1 ? store::issue_line(found[0].issue)
                             : std::to_string(found.size()) + " issues";
  }
  CollectiveChecker checker;
};

TEST_F(ThreeRanks, ASymmetricCallFromAnotherPlaceNamesTheOddRank) {
  for (int r = 0; r < 3; ++r) add(r, 1, 10);
  add(0, 2, 20);  // the metric sync: it pairs with the others' next all_reduce
  add(1, 2, 10);
  add(2, 2, 10);
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kOrder);
  EXPECT_EQ(issue.field, IssueField::kSite);
  EXPECT_EQ(issue.number, 2u);
  EXPECT_EQ(words(issue, 0), "the odd one: made all_reduce #2 from another place");
  EXPECT_EQ(issue.ranks[0].site, "train.py:20");
  EXPECT_EQ(words(issue, 1), "made all_reduce #2");
  EXPECT_EQ(store::issue_line(issue).rfind(
                "collective-order: rank 0 made all_reduce #2 in the group of ranks 0, 1, 2", 0),
            0u)
      << store::issue_line(issue);
  EXPECT_NE(
      store::issue_line(issue).find("(rank 0 at train.py:20; rank 1 at train.py:10; rank 2 at "
                                    "train.py:10)"),
      std::string::npos)
      << store::issue_line(issue);
  // Settled: rank 0's calls are one ahead from here on, and that is not news.
  add(0, 3, 10);
  add(1, 3, 10);
  add(2, 3, 10);
  EXPECT_TRUE(checker.check(kT0 + 60 * kSecond).empty());
}

TEST_F(ThreeRanks, RootedCallsAndBarriersFromDifferentPlacesAreTheUsualPatterns) {
  add(0, 1, 10, CollectiveOp::kBroadcast);  // if rank == 0: broadcast(src=0)
  add(1, 1, 12, CollectiveOp::kBroadcast);
  add(2, 1, 12, CollectiveOp::kBroadcast);
  add(1, 2, 20, CollectiveOp::kBarrier);  // rank 0 first: if rank != 0: barrier()
  add(2, 2, 20, CollectiveOp::kBarrier);
  add(0, 2, 22, CollectiveOp::kBarrier);  // if rank == 0: barrier(), once its work is done
  EXPECT_TRUE(checker.check(kT0 + kSecond).empty());
}

// Rank 0's extra call is its last, and ranks 1 and 2 exit: they are not the ones that "never
// made" it; rank 0 made a call that is its alone.
TEST_F(ThreeRanks, AnExtraCallOfOneRankBlamesThatRank) {
  for (int r = 0; r < 3; ++r) add(r, 1, 10);
  add(0, 2, 20);
  checker.process_ended(ended(1, 0, kT0 + kSecond));
  checker.process_ended(ended(2, 0, kT0 + kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kMissing);
  EXPECT_EQ(words(issue, 0), "the odd one: waiting in it");
  EXPECT_EQ(words(issue, 1), "exited 0; never calls from there");
  EXPECT_EQ(store::issue_line(issue).rfind("collective-missing: rank 0 alone made all_reduce #2 at "
                                           "train.py:20 in the group of ranks 0, 1, 2",
                                           0),
            0u)
      << store::issue_line(issue);
  EXPECT_EQ(store::issue_line(issue).find("never made"), std::string::npos)
      << store::issue_line(issue);
}

// Ranks 1 and 2 died (in a subgroup's mismatched call) before the barrier rank 0 waits in: the
// barrier is not rank 0's alone, the others never got there.
TEST_F(ThreeRanks, ACallTheOthersNeverReachedBecauseTheyFailedIsNotOnesAlone) {
  for (int r = 0; r < 3; ++r) add(r, 1, 10);
  // Rank 0's barrier raised (its connections closed) before the others' ends were seen.
  AgentCollective barrier = call(0, 2, CollectiveOp::kBarrier, {}, 7, "train.py", 20);
  barrier.call.group_size = 3;
  checker.add(barrier);
  AgentCollective raised = exit_of(barrier, kT0 + kSecond);
  raised.call.flags = common::kCollectiveRaised;
  checker.add(raised);
  checker.process_ended(ended(1, W_EXITCODE(0, SIGABRT), kT0 + 2 * kSecond));
  checker.process_ended(ended(2, W_EXITCODE(1, 0), kT0 + 2 * kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 3 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kMissing);
  EXPECT_EQ(words(issue, 1), "killed by SIGABRT without calling it");
  EXPECT_EQ(store::issue_line(issue).find("alone"), std::string::npos) << store::issue_line(issue);
}

// Stopped by the launcher once rank 0 gave up, ranks 1 and 2 did not fail: the call is rank 0's.
TEST_F(ThreeRanks, OthersStoppedAfterTheWaitGaveUpLeaveTheCallOnesAlone) {
  for (int r = 0; r < 3; ++r) add(r, 1, 10);
  AgentCollective extra = call(0, 2, CollectiveOp::kAllReduce, {1}, 7, "train.py", 20);
  extra.call.group_size = 3;
  checker.add(extra);
  AgentCollective raised = exit_of(extra, kT0 + 10 * kSecond);
  raised.call.flags = common::kCollectiveRaised;
  checker.add(raised);
  checker.process_ended(ended(1, W_EXITCODE(0, SIGTERM), kT0 + 11 * kSecond));
  checker.process_ended(ended(2, W_EXITCODE(0, SIGTERM), kT0 + 11 * kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 12 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(store::issue_line(found[0].issue)
                .rfind("collective-missing: rank 0 alone made all_reduce #2", 0),
            0u)
      << store::issue_line(found[0].issue);
}

// The issue's calls go to run.db with how rank 0's ended: it raised, 10 s in.
TEST_F(ThreeRanks, ACallThatRaisedIsStoredAsRaised) {
  for (int r = 0; r < 3; ++r) add(r, 1, 10);
  AgentCollective extra = call(0, 2, CollectiveOp::kAllReduce, {1}, 7, "train.py", 20);
  extra.call.group_size = 3;
  checker.add(extra);
  AgentCollective raised = exit_of(extra, kT0 + 10 * kSecond);
  raised.call.flags = common::kCollectiveRaised;
  checker.add(raised);
  std::vector<store::CollectiveCall> calls = checker.take_calls(true);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].number, 1u);
  EXPECT_FALSE(calls[0].raised);
  EXPECT_EQ(calls[1].number, 2u);
  EXPECT_TRUE(calls[1].raised);
  EXPECT_EQ(calls[1].end_ns, kT0 + 10 * kSecond);
}

// Rank 0's call went to run.db with the issue, still waiting; its raise 10 s later is handed out
// once, to update it.
TEST_F(ThreeRanks, ACallStoredBeforeItRaisedIsEndedLater) {
  for (int r = 0; r < 3; ++r) add(r, 1, 10);
  AgentCollective extra = call(0, 2, CollectiveOp::kAllReduce, {1}, 7, "train.py", 20);
  extra.call.group_size = 3;
  checker.add(extra);
  ASSERT_EQ(checker.take_calls(true).size(), 4u);
  AgentCollective raised = exit_of(extra, kT0 + 10 * kSecond);
  raised.call.flags = common::kCollectiveRaised;
  checker.add(raised);
  EXPECT_TRUE(checker.take_calls(true).empty());
  std::vector<store::CollectiveCall> ends = checker.take_late_ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].number, 2u);
  EXPECT_EQ(ends[0].pid, 100);
  EXPECT_EQ(ends[0].end_ns, kT0 + 10 * kSecond);
  EXPECT_TRUE(ends[0].raised);
  EXPECT_TRUE(checker.take_late_ends().empty());
}

// A subgroup of ranks 1 and 2 numbers them 0 and 1: the message names the job's ranks.
TEST_F(ThreeRanks, ASubgroupsRanksAreTheJobsRanks) {
  for (int r = 1; r < 3; ++r) {
    AgentCollective c = call(r, 1, CollectiveOp::kAllReduce, {4u * static_cast<uint32_t>(r)}, 7,
                             "train.py", 10 + r);
    c.call.group = 0x12;
    c.call.group_rank = r - 1;
    checker.add(c);
  }
  EXPECT_EQ(only_message(),
            "collective-mismatch: all_reduce #1 in the group of ranks 1, 2 has a different shape "
            "across ranks: rank 1: [4] at train.py:11; rank 2: [8] at train.py:12");
}

TEST_F(ThreeRanks, APairIsNamedByItsSenderAndReceiver) {
  checker.add(p2p(1, 1, 2, 1, {4}, 46));
  checker.add(p2p(2, 1, 2, 1, {8}, 49));
  EXPECT_EQ(only_message(),
            "collective-mismatch: send #1 from rank 1 to rank 2 has a different shape across "
            "ranks: rank 1: [4] at train.py:46; rank 2: [8] at train.py:49");
}

// A ring in which each rank receives from its left before it sends to its right.
TEST_F(ThreeRanks, ARingOfReceivesIsADeadlock) {
  for (int r = 0; r < 3; ++r) checker.add(p2p(r, (r + 2) % 3, r, 1));
  std::vector<FoundIssue> found = checker.check(kT0 + 31 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, IssueField::kDeadlock);
  EXPECT_THAT(store::issue_line(found[0].issue),
              HasSubstr("rank 0, rank 1 and rank 2 wait for each other in point-to-point calls "
                        "that cannot complete, for 31.0 s: rank 0 waits in recv from rank 2 "
                        "(recv #1 at train.py:10); rank 2 waits in recv from rank 1"));
  EXPECT_EQ(found[0].dump_pids.size(), 3u);
}

// Rank 0 waits to receive from rank 1, which never sends: rank 1 is named, by its process.
TEST_F(CheckerTest, ASendNeverMadeNamesTheSender) {
  checker.add(p2p(0, 1, 0, 1));
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kMissing);
  EXPECT_EQ(store::issue_line(issue),
            "collective-missing: rank 1 never made the send to rank 0 that rank 0 waits for in "
            "recv #1 at train.py:10 since 4.0 s (no rank of the group moved for 4.0 s); rank 1's "
            "last call: none");
  ASSERT_EQ(issue.ranks.size(), 2u);
  EXPECT_EQ(issue.ranks[0].pid, 101);  // the sender, which made no call in the pair
  EXPECT_EQ(words(issue, 0), "never called it");
  EXPECT_EQ(issue.ranks[1].pid, 100);
}

// An NCCL pair of a communicator of job ranks 2 and 3 (its ranks 0 and 1): its peer numbers
// are the communicator's, which name no job rank. The receiver never came: it is not rank 1.
TEST(CollectiveChecker, AnNcclPairsPeerIsNoJobRank) {
  CollectiveChecker checker({.stall_ns = 3 * kSecond});
  for (int r = 0; r < 4; ++r) checker.process_started(100 + r, 7, r, 4);
  AgentCollective send = call(2, 1, CollectiveOp::kSend);
  send.call.source = static_cast<uint8_t>(common::CollectiveSource::kNccl);
  send.call.group = 0x77;
  send.call.group_rank = 0;
  send.call.peer = 1;
  checker.add(send);
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.ranks[1].pid, 0);
  EXPECT_EQ(store::issue_line(issue).rfind(
                "collective-missing: group rank 1 never made the recv from group "
                "rank 0",
                0),
            0u)
      << store::issue_line(issue);
}

// torchrun restarted the ranks: the missing rank is this attempt's rank 1, not the last one's.
TEST_F(CheckerTest, AMissingRankIsTheLatestProcessOfThatRank) {
  checker.process_ended(ended(1, W_EXITCODE(1, 0), kT0 - kSecond));
  checker.process_started(105, 9, 1, 2);
  checker.add(call(0, 1, CollectiveOp::kAllReduce));
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMissing);
  EXPECT_EQ(found[0].issue.ranks[1].pid, 105);
}

// Both ranks receive first: each waits for the other's send. One issue for both pairs.
TEST_F(CheckerTest, RanksThatEachReceiveFirstAreADeadlock) {
  checker.add(p2p(0, 1, 0, 1, {4}, 41));
  checker.add(p2p(1, 0, 1, 1, {4}, 41));
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());  // within --stall-seconds
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kOrder);
  EXPECT_EQ(issue.field, IssueField::kDeadlock);
  EXPECT_EQ(store::issue_line(issue),
            "collective-order: rank 0 and rank 1 wait for each other in point-to-point calls "
            "that cannot complete, for 4.0 s: rank 0 waits in recv from rank 1 (recv #1 at "
            "train.py:41); rank 1 waits in recv from rank 0 (recv #1 at train.py:41): a "
            "deadlock, each receives before it sends");
  EXPECT_EQ(found[0].dump_pids, (std::vector<int>{100, 101}));
  EXPECT_TRUE(checker.check(kT0 + 10 * kSecond).empty());
  // A receive whose sender is not waiting is no deadlock, but a send never made.
  CollectiveChecker one({.stall_ns = 3 * kSecond});
  for (int r = 0; r < 2; ++r) one.process_started(100 + r, 7, r, 2);
  one.add(p2p(0, 1, 0, 1));
  AgentCollective done = p2p(1, 0, 1, 1);
  one.add(done);
  one.add(exit_of(done, done.call.time_ns + 10));
  found = one.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMissing);
}

TEST_F(CheckerTest, OfTwoRanksTheOneAtAPlaceTheOtherNeverCallsFromIsOdd) {
  both(1, CollectiveOp::kAllReduce);  // both at train.py:10
  checker.add(call(0, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 10));
  checker.add(call(1, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 20));
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(words(found[0].issue, 0), "made all_reduce #2");
  EXPECT_EQ(words(found[0].issue, 1), "the odd one: made all_reduce #2 from another place");
}

TEST_F(CheckerTest, AStallNamesTheMissingRankAndAsksForStacks) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 30));
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());  // within --stall-seconds
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kMissing);
  EXPECT_EQ(issue.number, 2u);
  EXPECT_EQ(words(issue, 0), "waiting in it");
  EXPECT_EQ(issue.ranks[0].site, "train.py:30");
  EXPECT_EQ(words(issue, 1), "never called it");
  EXPECT_EQ(issue.ranks[1].last_call, "all_reduce #1 at train.py:10");
  EXPECT_EQ(issue.ranks[1].calls, 1u);
  EXPECT_EQ(found[0].dump_pids, (std::vector<int>{100, 101}));
  EXPECT_NE(store::issue_line(issue).find("rank 1 never made all_reduce #2 at train.py:30"),
            std::string::npos)
      << store::issue_line(issue);
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
  EXPECT_EQ(issue.kind, IssueKind::kMissing);
  EXPECT_EQ(issue.field, IssueField::kLate);
  EXPECT_EQ(issue.number, 2u);
  EXPECT_EQ(words(issue, 0), "waited in it");
  EXPECT_EQ(words(issue, 1), "made it 9.0 s after the first rank");
  EXPECT_NE(store::issue_line(issue).find("rank 1 made all_reduce #2 at train.py:30"),
            std::string::npos)
      << store::issue_line(issue);
  EXPECT_NE(store::issue_line(issue).find("a straggler"), std::string::npos)
      << store::issue_line(issue);
  // The group is watched again: a later mismatch is still caught.
  checker.add(call(0, 3, CollectiveOp::kAllReduce, {4}));
  checker.add(call(1, 3, CollectiveOp::kAllReduce, {8}, 7, "train.py", 10, kT0 + 9 * kSecond));
  found = checker.check(kT0 + 10 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.field, IssueField::kShape);
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
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMissing);
  EXPECT_EQ(words(found[0].issue, 1), "exited 0 without calling it");
  EXPECT_EQ(found[0].dump_pids, (std::vector<int>{100}));
}

TEST_F(CheckerTest, AMissingRankThatCrashedMakesPeerExited) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce));
  checker.process_ended(ended(1, SIGSEGV, kT0 + kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kPeerExited);
  EXPECT_EQ(found[0].issue.first_ns, kT0 + kSecond);  // after the crash it follows
  EXPECT_EQ(words(found[0].issue, 1), "killed by SIGSEGV without calling it");
}

// Its program skipped the call and finished; its teardown then aborted (a process group left
// to the interpreter's exit): the skip is what the others wait for, not a failure of it.
TEST_F(CheckerTest, AMissingRankWhoseTeardownFailedSkippedTheCall) {
  both(1, CollectiveOp::kAllReduce);
  checker.add(call(0, 2, CollectiveOp::kAllReduce));
  checker.script_finished(101, 7);
  checker.process_ended(ended(1, SIGABRT, kT0 + kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMissing);
  EXPECT_EQ(words(found[0].issue, 1),
            "killed by SIGABRT after its program finished without calling it");
  EXPECT_NE(store::issue_line(found[0].issue)
                .find("rank 1 killed by SIGABRT after its program finished "
                      "without calling it"),
            std::string::npos)
      << store::issue_line(found[0].issue);
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
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMissing);
  EXPECT_EQ(found[0].issue.op, "monitored_barrier");
  EXPECT_EQ(words(found[0].issue, 1), "killed by SIGTERM without calling it");
}

// A call that returns before it completes says nothing of its peers by returning: rank 1 issued
// the all-reduce with async_op=True (or on a backend that queues, NCCL), rank 0 comes 2 s later.
TEST_F(CheckerTest, ACallThatReturnsEarlyIsNoGiveUp) {
  for (uint8_t flag : {common::kCollectiveAsync, common::kCollectiveQueued}) {
    CollectiveChecker fresh({.stall_ns = 30 * kSecond});
    for (int r = 0; r < 2; ++r) fresh.process_started(100 + r, 7, r, 2);
    AgentCollective issued = call(1, 1, CollectiveOp::kAllReduce);
    issued.call.flags = flag;
    fresh.add(issued);
    fresh.add(exit_of(issued, issued.call.time_ns + 10));
    EXPECT_TRUE(fresh.check(kT0 + 2 * kSecond).empty()) << int{flag};
    fresh.add(call(0, 1, CollectiveOp::kAllReduce, {4}, 7, "train.py", 10, kT0 + 2 * kSecond));
    EXPECT_TRUE(fresh.check(kT0 + 3 * kSecond).empty()) << int{flag};
  }
}

// It still waits (in work.wait() or on the stream): a peer that never comes is a stall.
TEST_F(CheckerTest, ACallThatReturnedEarlyStillWaitsForTheStall) {
  both(1, CollectiveOp::kAllReduce);
  AgentCollective issued = call(1, 2, CollectiveOp::kAllReduce);
  issued.call.flags = common::kCollectiveAsync;
  returned(issued, issued.call.time_ns + 10, common::kCollectiveAsync);
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());
  std::vector<FoundIssue> found = checker.check(kT0 + 4 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(words(found[0].issue, 0), "never called it");
  EXPECT_EQ(words(found[0].issue, 1), "issued it (it completes later)");
  EXPECT_NE(store::issue_line(found[0].issue).find("no rank of the group moved"), std::string::npos)
      << store::issue_line(found[0].issue);
}

// A call that raised gave up, whatever its op: here a broadcast's timeout, at 1 s.
TEST_F(CheckerTest, ACallThatRaisedGaveUp) {
  both(1, CollectiveOp::kAllReduce);
  AgentCollective root = call(1, 2, CollectiveOp::kBroadcast);
  root.call.peer = 0;
  returned(root, kT0 + kSecond, common::kCollectiveRaised);
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kMissing);
  EXPECT_EQ(words(found[0].issue, 0), "never called it");
  EXPECT_EQ(words(found[0].issue, 1), "raised in it");
  EXPECT_NE(store::issue_line(found[0].issue).find("rank 1 gave up waiting"), std::string::npos)
      << store::issue_line(found[0].issue);
}

TEST_F(CheckerTest, ARootsBroadcastMayReturnBeforeTheOthersJoin) {
  both(1, CollectiveOp::kAllReduce);
  AgentCollective root = call(0, 2, CollectiveOp::kBroadcast);
  root.call.peer = 0;
  returned(root, kT0 + 10);
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());
}

TEST_F(CheckerTest, ARankFailingSoonAfterAnotherExitedIsUnevenInputs) {
  checker.process_ended(ended(1, 0, kT0));
  checker.process_ended(ended(0, 1 << 8, kT0 + kSecond));
  std::vector<FoundIssue> found = checker.check(kT0 + 2 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].issue.kind, IssueKind::kUnevenInputs);
  EXPECT_EQ(found[0].issue.first_ns, kT0);
  EXPECT_EQ(found[0].issue.ranks[0].group_rank, 1);
  EXPECT_EQ(words(found[0].issue, 1), "exited 1");
  EXPECT_TRUE(checker.check(kT0 + 3 * kSecond).empty());  // once
}

// Both ranks ran every step; rank 0 then failed in work of its own (a checkpoint it could not
// save) after rank 1 was done: no uneven inputs. Had rank 1 run fewer steps, it would be.
TEST_F(CheckerTest, RanksThatRanTheSameStepsAreNotUneven) {
  for (int64_t rank1_steps : {5, 3}) {
    CollectiveChecker fresh;
    for (int rank : {0, 1}) fresh.process_started(100 + rank, 7, rank, 2);
    // Optimizer steps count as each ends: rank 0, stuck in its 4th backward, has as many as
    // rank 1 when rank 1 ran out of batches. Backward calls, counted as each begins, tell.
    for (int pid : {100, 101}) fresh.steps_counted(pid, store::StepKind::kOptimizer, 3);
    fresh.steps_counted(100, store::StepKind::kBackward, 5);
    fresh.steps_counted(101, store::StepKind::kBackward, rank1_steps);
    fresh.steps_counted(101, store::StepKind::kBackward, 2);  // an older count, read late
    fresh.process_ended(ended(1, 0, kT0));
    fresh.process_ended(ended(0, 1 << 8, kT0 + kSecond));
    EXPECT_EQ(fresh.check(kT0 + 2 * kSecond).size(), rank1_steps == 5 ? 0u : 1u) << rank1_steps;
  }
}

// A DataLoader worker of rank 1 ends well at the end of its epoch, while rank 1 itself fails
// (its dataset raised): the worker has its rank's environment, but it is no rank.
TEST_F(CheckerTest, AWorkerThatEndsWellIsNoRankThatLeftEarly) {
  checker.process_started(110, 9, 1, 2, /*inherited=*/true);
  store::ProcessRecord worker = ended(1, 0, kT0);
  worker.pid = 110;
  worker.start_ticks = 9;
  checker.process_ended(worker);
  checker.process_ended(ended(1, 1 << 8, kT0 + kSecond / 5));
  EXPECT_TRUE(checker.check(kT0 + 2 * kSecond).empty());
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

// A job of one rank (one GPU) has nothing to compare, but what it called is kept: the run
// folder shows a single-GPU job's NCCL calls as it shows a larger job's.
// One machine of two: rank 1 is here, rank 0 on the other machine, under its own traindoc.
std::vector<FoundIssue> one_machine_of_two(bool spans_machines) {
  CollectiveChecker checker({.stall_ns = 3 * kSecond});
  checker.process_started(101, 7, 1, 2);
  if (spans_machines) checker.job_spans_machines();
  AgentCollective first = call(1, 1, CollectiveOp::kAllReduce);
  checker.add(first);
  checker.add(exit_of(first, kT0 + kSecond / 2));  // rank 0 joined it, out of sight
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  checker.add(call(1, 2, CollectiveOp::kAllReduce, {4}, 7, "train.py", 20, kT0 + kSecond));
  for (FoundIssue& issue : checker.check(kT0 + 10 * kSecond)) found.push_back(std::move(issue));
  return found;
}

TEST(CollectiveChecker, ARankOnAnotherMachineIsNeverMissingHere) {
  EXPECT_TRUE(one_machine_of_two(true).empty());
  // Where the launcher does not say the job spans machines, the same calls are a rank that
  // never came: rank 1's all-reduce returned without it.
  std::vector<FoundIssue> found = one_machine_of_two(false);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(store::issue_line(found[0].issue), HasSubstr("rank 0 never made all_reduce #1"));
}

TEST(CollectiveChecker, OfTheRanksOnThisMachineOneIsMissing) {
  CollectiveChecker local({.stall_ns = 3 * kSecond});
  for (int r = 1; r < 3; ++r) local.process_started(100 + r, 7, r, 3);
  local.job_spans_machines();
  for (int r = 1; r < 3; ++r) {
    AgentCollective c = call(r, 1, CollectiveOp::kAllReduce, {1});
    c.call.group_size = 3;
    local.add(c);
  }
  AgentCollective second = call(1, 2, CollectiveOp::kAllReduce, {1}, 7, "train.py", 20);
  second.call.group_size = 3;
  local.add(second);
  std::vector<FoundIssue> found = local.check(kT0 + 10 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_THAT(store::issue_line(issue),
              HasSubstr("rank 2 never made all_reduce #2 at train.py:20"));
  EXPECT_EQ(words(issue, 0), "on another machine");
  EXPECT_EQ(issue.ranks[0].pid, 0);
  EXPECT_EQ(words(issue, 1), "waiting in it");
  EXPECT_EQ(words(issue, 2), "never called it");
  EXPECT_EQ(found[0].dump_pids, (std::vector<int>{101, 102}));
}

// An all-reduce of `size` elements in the world group of 4 ranks.
AgentCollective world_call(int rank, uint64_t number, uint32_t size = 16) {
  AgentCollective c = call(rank, number, CollectiveOp::kAllReduce, {size});
  c.call.group_size = 4;
  c.call.flags |= common::kCollectiveDefaultGroup;
  return c;
}

// Ranks 2 and 3 of a world of 4 on this machine, ranks 0 and 1 on another.
TEST(CollectiveChecker, TheWorldGroupsRanksHereAreComparedAmongThemselves) {
  CollectiveChecker checker({.stall_ns = 3 * kSecond});
  checker.job_spans_machines();
  for (int r = 2; r < 4; ++r) checker.process_started(100 + r, 7, r, 4);
  checker.add(world_call(2, 1, 16));
  checker.add(world_call(3, 1, 16));
  EXPECT_TRUE(checker.check(kT0 + kSecond).empty());
  checker.add(world_call(2, 2, 100));
  checker.add(world_call(3, 2, 200));
  std::vector<FoundIssue> found = checker.check(kT0 + kSecond);
  ASSERT_EQ(found.size(), 1u);
  const store::CollectiveIssue& issue = found[0].issue;
  EXPECT_EQ(issue.kind, IssueKind::kMismatch);
  EXPECT_EQ(issue.field, IssueField::kShape);
  ASSERT_EQ(issue.ranks.size(), 2u);
  EXPECT_EQ(issue.ranks[0].group_rank, 2);
  EXPECT_EQ(issue.ranks[1].group_rank, 3);
  EXPECT_THAT(store::issue_line(issue),
              HasSubstr("rank 2: [100] at train.py:10; rank 3: [200] at train.py:10"));
}

// Rank 3 starts on this machine after rank 2 made its first call: it is one of the ranks here
// from then on, and missing when it never makes that call.
TEST(CollectiveChecker, ARankThatStartsLateIsOneOfTheRanksHere) {
  CollectiveChecker checker({.stall_ns = 3 * kSecond});
  checker.job_spans_machines();
  checker.process_started(102, 7, 2, 4);
  checker.add(world_call(2, 1));
  EXPECT_TRUE(checker.check(kT0 + kSecond).empty());
  checker.process_started(103, 7, 3, 4);
  std::vector<FoundIssue> found = checker.check(kT0 + 10 * kSecond);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(store::issue_line(found[0].issue), HasSubstr("rank 3 never made all_reduce #1"));
  EXPECT_EQ(words(found[0].issue, 3), "never called it");
  EXPECT_EQ(words(found[0].issue, 0), "on another machine");
}

TEST(CollectiveChecker, AGroupOfOneIsStoredNotCompared) {
  CollectiveChecker checker({.stall_ns = 3 * kSecond});
  checker.process_started(100, 7, 0, 1);
  for (uint64_t n = 1; n <= 2; ++n) {
    AgentCollective c = call(0, n, CollectiveOp::kAllReduce);
    c.call.group_size = 1;
    c.call.source = static_cast<uint8_t>(common::CollectiveSource::kNccl);
    checker.add(c);
  }
  EXPECT_TRUE(checker.check(kT0 + 10 * kSecond).empty());
  checker.process_ended(ended(0, 0, kT0 + 11 * kSecond));
  EXPECT_TRUE(checker.check(kT0 + 15 * kSecond, true).empty());
  std::vector<store::CollectiveCall> calls = checker.take_calls(true);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].number, 2u);
  EXPECT_EQ(calls[1].source, "nccl");
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
