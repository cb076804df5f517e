// Tests of the stop forwarding's decisions: a second interrupt kills; a process that got the same
// signal from the same sender already is not sent it again, whether its note came before or while
// the forwarding waits; another signal, another sender or an old note is no such copy.
#include "supervisor/stop_forwarding.h"

#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/clock.h"

namespace traindoc::supervisor {
namespace {

using testing::ElementsAre;
using testing::IsEmpty;

constexpr int kOwnPid = 100;
constexpr int kTimeout = 4242;  // the sender: a `timeout` that signals its whole process group
constexpr int64_t kSecond = 1'000'000'000;

void nothing() {}

TEST(StopForwarding, TheSecondInterruptKills) {
  StopForwarding stops(kOwnPid);
  EXPECT_EQ(stops.to_pass_on(SIGTERM), SIGTERM);
  EXPECT_EQ(stops.to_pass_on(SIGINT), SIGINT);
  EXPECT_EQ(stops.to_pass_on(SIGTERM), SIGTERM);
  EXPECT_EQ(stops.to_pass_on(SIGINT), SIGKILL);
  EXPECT_EQ(stops.to_pass_on(SIGINT), SIGKILL);
}

TEST(StopForwarding, TheStacksAreAskedAtTheFirstStopOnly) {
  StopForwarding stops(kOwnPid);
  EXPECT_TRUE(stops.first_stop());
  EXPECT_FALSE(stops.first_stop());
}

TEST(StopForwarding, AProcessThatHadTheSameSignalFromTheSameSenderIsNotSentItAgain) {
  StopForwarding stops(kOwnPid);
  int64_t now = common::realtime_ns();
  stops.noted(10, SIGTERM, kTimeout, now - kSecond / 2);
  stops.noted(11, SIGINT, kTimeout, now);                 // another signal
  stops.noted(12, SIGTERM, 999, now);                     // another sender
  stops.noted(13, SIGTERM, kTimeout, now - 2 * kSecond);  // long before: an earlier copy
  EXPECT_THAT(stops.had_it_already(SIGTERM, kTimeout, now, {}, {10, 11, 12, 13, 14}, nothing),
              ElementsAre(10));
}

// Its handler's note may come after traindoc's copy: the forwarding polls the agents for it.
TEST(StopForwarding, WaitsForTheNotesOfTheProcessesThatCatchIt) {
  StopForwarding stops(kOwnPid);
  int64_t now = common::realtime_ns();
  int polls = 0;
  auto poll = [&] {
    if (++polls == 3) stops.noted(10, SIGTERM, kTimeout, common::realtime_ns());
  };
  EXPECT_THAT(stops.had_it_already(SIGTERM, kTimeout, now, {10}, {10, 11}, poll), ElementsAre(10));
  EXPECT_EQ(polls, 3);  // no longer than its note took
}

TEST(StopForwarding, GivesUpWaitingForANoteThatDoesNotCome) {
  StopForwarding stops(kOwnPid);
  int64_t start = common::realtime_ns();
  EXPECT_THAT(stops.had_it_already(SIGTERM, kTimeout, start, {10}, {10}, nothing), IsEmpty());
  int64_t waited = common::realtime_ns() - start;
  EXPECT_GE(waited, StopForwarding::kNotesWaitNs);
  EXPECT_LT(waited, 10 * StopForwarding::kNotesWaitNs);
}

// A scheduler outside traindoc's pid namespace is sender 0 to traindoc and to the job alike.
TEST(StopForwarding, ASenderOutsideThePidNamespaceIsOneSender) {
  StopForwarding stops(kOwnPid);
  int64_t now = common::realtime_ns();
  stops.noted(10, SIGTERM, 0, now);
  EXPECT_THAT(stops.had_it_already(SIGTERM, 0, now, {}, {10}, nothing), ElementsAre(10));
}

// traindoc's own earlier copy reached the job as sent by traindoc: no copy of this signal.
TEST(StopForwarding, TraindocsOwnCopiesAreNoneOfTheSenders) {
  StopForwarding stops(kOwnPid);
  int64_t now = common::realtime_ns();
  stops.noted(10, SIGTERM, kOwnPid, now);
  int polls = 0;
  EXPECT_THAT(stops.had_it_already(SIGTERM, kOwnPid, now, {10}, {10}, [&] { ++polls; }), IsEmpty());
  EXPECT_EQ(polls, 0);
}

TEST(StopForwarding, KeepsTheLatestNotesOfEachProcess) {
  StopForwarding stops(kOwnPid);
  int64_t now = common::realtime_ns();
  stops.noted(10, SIGTERM, kTimeout, now);
  for (size_t i = 0; i < StopForwarding::kNotesKept; ++i) stops.noted(10, SIGHUP, 1, now);
  EXPECT_THAT(stops.had_it_already(SIGTERM, kTimeout, now, {}, {10}, nothing), IsEmpty());
  EXPECT_THAT(stops.had_it_already(SIGHUP, 1, now, {}, {10}, nothing), ElementsAre(10));
}

}  // namespace
}  // namespace traindoc::supervisor
