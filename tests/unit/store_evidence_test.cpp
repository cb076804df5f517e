// Unit tests of the evidence model's names (the strings stored in run.db).
// Test process only.
#include <gtest/gtest.h>

#include "store/evidence.h"

namespace traindoc::store {
namespace {

TEST(StoreEvidence, EndSourceNamesRoundTrip) {
  const std::pair<EndSource, std::string> names[] = {
      {EndSource::kNone, "none"},
      {EndSource::kSupervisor, "supervisor"},
      {EndSource::kParent, "parent"},
      {EndSource::kZombie, "zombie"},
      {EndSource::kAgentExit, "agent-exit"},
      {EndSource::kVanished, "vanished"},
  };
  for (const auto& [value, name] : names) {
    EXPECT_EQ(to_string(value), name);
    EXPECT_EQ(end_source_from_string(name), value);
  }
}

TEST(StoreEvidence, StepCountsCompareByBackwardCallsFirst) {
  using K = StepKind;
  // Rank 0 is stuck in its 4th backward with 3 optimizer steps, as rank 1 that left.
  EXPECT_EQ(same_step_counts({{K::kOptimizer, 3}, {K::kBackward, 4}},
                             {{K::kOptimizer, 3}, {K::kBackward, 3}}),
            false);
  EXPECT_EQ(same_step_counts({{K::kOptimizer, 3}}, {{K::kOptimizer, 3}, {K::kBackward, 3}}), true);
  EXPECT_EQ(same_step_counts({{K::kDdpForward, 2}}, {{K::kDdpForward, 2}}), true);
  EXPECT_EQ(same_step_counts({{K::kBackward, 2}}, {{K::kOptimizer, 2}}), std::nullopt);
}

TEST(StoreEvidence, UnknownEndSourceReadsAsNone) {
  EXPECT_EQ(end_source_from_string("teleported"), EndSource::kNone);
  EXPECT_EQ(end_source_from_string(""), EndSource::kNone);
  EXPECT_EQ(end_source_from_string("Supervisor"), EndSource::kNone);
}

}  // namespace
}  // namespace traindoc::store
