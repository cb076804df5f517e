#include "store/event_kind.h"

#include <gtest/gtest.h>

#include <set>

namespace traindoc::store {
namespace {

TEST(EventKind, NamesAreUniqueAndReadBack) {
  std::set<std::string_view> names;
  for (EventKind kind : all_event_kinds()) {
    EXPECT_TRUE(names.insert(to_string(kind)).second) << to_string(kind);
    EXPECT_EQ(event_kind_named(to_string(kind)), kind);
  }
  EXPECT_EQ(event_kind_named("sampling-failed"), std::nullopt);
  EXPECT_EQ(event_kind_named(""), std::nullopt);
}

}  // namespace
}  // namespace traindoc::store
