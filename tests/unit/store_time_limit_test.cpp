// Unit tests of the time limit read from a `timeout` command line.
// Test process only.
#include "store/time_limit.h"

#include <gtest/gtest.h>

namespace traindoc::store {
namespace {

TEST(TimeLimit, DurationsAndTheirUnits) {
  const std::pair<const char*, int64_t> cases[] = {
      {"timeout 5 torchrun train.py", 5'000'000'000},
      {"/usr/bin/timeout 1.5m python3 train.py", 90'000'000'000},
      {"timeout 2h python3 train.py", 7'200'000'000'000},
      {"timeout 0.5d python3 train.py", 43'200'000'000'000},
      {"timeout 10s python3 train.py", 10'000'000'000},
  };
  for (const auto& [cmdline, limit_ns] : cases) {
    std::optional<TimeLimit> limit = time_limit_of(cmdline);
    ASSERT_TRUE(limit) << cmdline;
    EXPECT_EQ(limit->limit_ns, limit_ns) << cmdline;
  }
}

TEST(TimeLimit, OptionsBeforeTheDuration) {
  std::optional<TimeLimit> limit = time_limit_of("timeout -vs INT --kill-after 30 4h torchrun x");
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->words, "timeout -vs INT --kill-after 30 4h");
  EXPECT_EQ(limit->limit_ns, 14'400'000'000'000);
  limit = time_limit_of("timeout -k5 --signal=KILL --foreground 3 sleep 9");
  ASSERT_TRUE(limit);
  EXPECT_EQ(limit->words, "timeout -k5 --signal=KILL --foreground 3");
  EXPECT_EQ(limit->limit_ns, 3'000'000'000);
}

TEST(TimeLimit, NoLimit) {
  for (const char* cmdline :
       {"python3 train.py 5", "timeout", "timeout --signal KILL", "timeout 0 sleep 1",
        "timeout inf sleep 1", "timeout 1e30 sleep 1", "timeout 5y sleep 1", "timeout -1 x",
        "mytimeout 5 sleep 1", "timeout nan sleep 1"}) {
    EXPECT_FALSE(time_limit_of(cmdline)) << cmdline;
  }
}

}  // namespace
}  // namespace traindoc::store
