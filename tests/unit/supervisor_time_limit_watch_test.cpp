// Tests of the time-limit watch: a `timeout` in the job is told once, a moment before its limit
// runs out; one gone, past its limit, or with no limit is not.
#include "supervisor/time_limit_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace traindoc::supervisor {
namespace {

using testing::ElementsAre;
using testing::IsEmpty;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kStart = 1'700'000'000 * kSecond;

bool alive(int /*pid*/) {
  return true;
}

TEST(TimeLimitWatch, AsksOnceASecondBeforeTheLimitRunsOut) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart, "timeout -s INT 10 python train.py");
  EXPECT_FALSE(watch.empty());
  EXPECT_THAT(watch.due(kStart + 8 * kSecond, alive), IsEmpty());
  EXPECT_THAT(watch.due(kStart + 9 * kSecond, alive), ElementsAre(42));
  EXPECT_THAT(watch.due(kStart + 9 * kSecond + 1, alive), IsEmpty());  // once
  EXPECT_TRUE(watch.empty());
}

TEST(TimeLimitWatch, AShortLimitIsAskedAtItsHalf) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart, "timeout 1 sleep 5");
  EXPECT_THAT(watch.due(kStart + kSecond / 2 - 1, alive), IsEmpty());
  EXPECT_THAT(watch.due(kStart + kSecond / 2, alive), ElementsAre(42));
}

// A limit that ran out between two looks: its signal went already, the stacks would come too late.
TEST(TimeLimitWatch, ALimitThatRanOutIsForgottenWithoutAsking) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart, "timeout 10 python train.py");
  EXPECT_THAT(watch.due(kStart + 10 * kSecond, alive), IsEmpty());
  EXPECT_TRUE(watch.empty());
}

TEST(TimeLimitWatch, ATimeoutGoneIsForgotten) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart, "timeout 10 python train.py");
  EXPECT_THAT(watch.due(kStart + 9 * kSecond, [](int pid) { return pid != 42; }), IsEmpty());
  EXPECT_TRUE(watch.empty());
}

// Its start by the clocks of a time namespace may come before the run's.
TEST(TimeLimitWatch, CountsFromTheRunsStartAtTheEarliest) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart - 100 * kSecond, "timeout 10 python train.py");
  EXPECT_THAT(watch.due(kStart + 8 * kSecond, alive), IsEmpty());
  EXPECT_THAT(watch.due(kStart + 9 * kSecond, alive), ElementsAre(42));
}

TEST(TimeLimitWatch, WatchesOnlyCommandsWithALimit) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart, "python train.py --timeout 10");
  watch.process_seen(43, kStart, "timeout 0 python train.py");
  EXPECT_TRUE(watch.empty());
}

TEST(TimeLimitWatch, TellsEachTimeoutOfSeveral) {
  TimeLimitWatch watch(kStart);
  watch.process_seen(42, kStart, "timeout 10 a");
  watch.process_seen(43, kStart, "timeout 20 b");
  watch.process_seen(44, kStart + kSecond, "timeout 9 c");
  EXPECT_THAT(watch.due(kStart + 9 * kSecond, alive), ElementsAre(42, 44));
  EXPECT_THAT(watch.due(kStart + 19 * kSecond, alive), ElementsAre(43));
}

}  // namespace
}  // namespace traindoc::supervisor
