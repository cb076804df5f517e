// Tests of the stack requests: who is asked and how, each dump stored once as it completes, what
// stands for a process spared, and when a request gives up.
#include "supervisor/stack_requests.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

namespace traindoc::supervisor {
namespace {

using store::EventKind;
using testing::ElementsAre;
using testing::IsEmpty;

constexpr int64_t kT0 = 1'700'000'000'000'000'000;

// Processes that answer when their dump is set in `dumps`; those in `sleeping` are spared.
class FakeSource final : public StackSource {
 public:
  DumpRequest ask(int pid, bool stopping) override {
    asked.emplace_back(pid, stopping);
    if (sleeping.contains(pid)) return {false, "clock_nanosleep"};
    return {!gone.contains(pid), ""};
  }
  std::optional<std::string> read(int pid) override {
    auto dump = dumps.find(pid);
    if (dump == dumps.end()) return std::nullopt;
    return dump->second;
  }
  std::string spared(int pid, const std::string& call) const override {
    return "not asked: " + std::to_string(pid) + " waits in " + call;
  }

  std::vector<std::pair<int, bool>> asked;
  std::set<int> sleeping;
  std::set<int> gone;
  std::map<int, std::string> dumps;
};

using Answer = std::tuple<EventKind, int, std::string>;

struct Requests {
  FakeSource source;
  std::vector<Answer> answers;
  StackRequests requests{source, [this](EventKind kind, int pid, const std::string& text) {
                           answers.emplace_back(kind, pid, text);
                         }};
};

TEST(StackRequests, StoresEachDumpOnceAsItCompletes) {
  Requests r;
  r.requests.ask(EventKind::kStackAtIdle, {10, 11}, kT0);
  EXPECT_TRUE(r.requests.pending(EventKind::kStackAtIdle));
  EXPECT_FALSE(r.requests.pending(EventKind::kStackAtStop));
  r.source.dumps[10] = "stack of 10";
  r.requests.collect(kT0 + 1, false);
  r.requests.collect(kT0 + 2, false);
  EXPECT_THAT(r.answers, ElementsAre(Answer{EventKind::kStackAtIdle, 10, "stack of 10"}));
  r.source.dumps[11] = "stack of 11";
  r.requests.collect(kT0 + 3, false);
  EXPECT_EQ(r.answers.size(), 2u);
  EXPECT_TRUE(r.requests.empty());  // all answered
}

TEST(StackRequests, AStopOrATimeLimitAsksAsTheSignalThatFollowsWill) {
  Requests r;
  r.requests.ask(EventKind::kStackAtStop, {10}, kT0);
  r.requests.ask(EventKind::kStackAtLimit, {11}, kT0);
  r.requests.ask(EventKind::kStackAtIdle, {12}, kT0);
  r.requests.ask(EventKind::kStackAtStall, {13}, kT0);
  EXPECT_THAT(r.source.asked, ElementsAre(std::pair{10, true}, std::pair{11, true},
                                          std::pair{12, false}, std::pair{13, false}));
}

TEST(StackRequests, AProcessSparedIsToldAtOnceAndNotAwaited) {
  Requests r;
  r.source.sleeping = {10};
  r.source.gone = {11};
  r.requests.ask(EventKind::kStackAtIdle, {10, 11}, kT0);
  EXPECT_THAT(r.answers, ElementsAre(Answer{EventKind::kStackAtIdle, 10,
                                            "not asked: 10 waits in clock_nanosleep"}));
  r.requests.collect(kT0 + 1, false);
  EXPECT_TRUE(r.requests.empty());
}

TEST(StackRequests, GivesUpAfterItsDeadlineOrAtTheEnd) {
  Requests r;
  r.requests.ask(EventKind::kStackAtIdle, {10}, kT0);
  r.requests.collect(kT0 + StackRequests::kWaitNs, false);
  EXPECT_FALSE(r.requests.empty());
  r.requests.collect(kT0 + StackRequests::kWaitNs + 1, false);
  EXPECT_TRUE(r.requests.empty());

  r.requests.ask(EventKind::kStackAtStop, {10}, kT0);
  r.source.dumps[10] = "late";
  r.requests.collect(kT0 + 1, true);  // what is complete at the end is still stored
  EXPECT_TRUE(r.requests.empty());
  EXPECT_THAT(r.answers, ElementsAre(Answer{EventKind::kStackAtStop, 10, "late"}));
}

TEST(StackRequests, AsksAtMostTheFirstKMaxProcesses) {
  Requests r;
  std::vector<int> pids;
  for (int pid = 1; pid <= 100; ++pid) pids.push_back(pid);
  r.source.gone = {1};  // not asked: does not count
  r.requests.ask(EventKind::kStackAtIdle, pids, kT0);
  EXPECT_EQ(r.source.asked.size(), StackRequests::kMax + 1);
  EXPECT_EQ(r.source.asked.back().first, static_cast<int>(StackRequests::kMax) + 1);
}

TEST(StackRequests, ARequestOfNoneIsNotPendingOnceCollected) {
  Requests r;
  r.requests.ask(EventKind::kStackAtStall, {}, kT0);
  r.requests.collect(kT0, false);
  EXPECT_TRUE(r.requests.empty());
  EXPECT_THAT(r.answers, IsEmpty());
}

}  // namespace
}  // namespace traindoc::supervisor
