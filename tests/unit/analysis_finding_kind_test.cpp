#include "analysis/finding_kind.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

namespace traindoc::analysis {
namespace {

// The kinds docs/findings.md's tables name under "## Kinds": the first cell of each row, one kind
// or several ("`device-side-assert`, `cuda-illegal-access`").
std::set<std::string> documented_kinds() {
  std::ifstream in(std::string(TRAINDOC_DOCS) + "/findings.md");
  EXPECT_TRUE(in.good());
  std::set<std::string> out;
  bool in_kinds = false;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("## ")) in_kinds = line == "## Kinds";
    if (!in_kinds || !line.starts_with("| `")) continue;
    std::string cell = line.substr(2, line.find(" |", 2) - 2);
    for (size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', at)) {
      size_t end = cell.find('`', at + 1);
      out.insert(cell.substr(at + 1, end - at - 1));
      at = end + 1;
    }
  }
  return out;
}

TEST(FindingKind, NamesAreUniqueAndReadBack) {
  std::set<std::string_view> names;
  for (FindingKind kind : all_finding_kinds()) {
    EXPECT_TRUE(names.insert(to_string(kind)).second) << to_string(kind);
    EXPECT_EQ(finding_kind_named(to_string(kind)), kind);
  }
  EXPECT_EQ(finding_kind_named("no-such-kind"), std::nullopt);
  EXPECT_EQ(finding_kind_named(""), std::nullopt);
}

TEST(FindingKind, DocsNameEveryKindAndNoOther) {
  std::set<std::string> documented = documented_kinds();
  ASSERT_FALSE(documented.empty());
  for (FindingKind kind : all_finding_kinds()) {
    EXPECT_TRUE(documented.contains(std::string(to_string(kind))))
        << to_string(kind) << " is missing from docs/findings.md";
  }
  for (const std::string& name : documented) {
    EXPECT_TRUE(finding_kind_named(name).has_value())
        << "docs/findings.md names " << name << ", which is no kind of finding_kind.h";
  }
}

}  // namespace
}  // namespace traindoc::analysis
