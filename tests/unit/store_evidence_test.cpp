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

TEST(StoreEvidence, UnknownEndSourceReadsAsNone) {
  EXPECT_EQ(end_source_from_string("teleported"), EndSource::kNone);
  EXPECT_EQ(end_source_from_string(""), EndSource::kNone);
  EXPECT_EQ(end_source_from_string("Supervisor"), EndSource::kNone);
}

}  // namespace
}  // namespace traindoc::store
