// Helpers of the signature tests: the ids a line matches, one match's fields.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/signatures.h"

namespace traindoc::analysis::signature_test {

using Fields = std::map<std::string, std::string>;

inline std::vector<std::string> ids(std::string_view line) {
  std::vector<std::string> out;
  for (const SignatureMatch& m : match_line(line)) out.push_back(m.id);
  return out;
}

// The ids of a traceback's exception line, raised through `frames` (outermost first).
inline std::vector<std::string> ids(std::string_view line, const std::vector<FrameHint>& frames) {
  std::vector<std::string> out;
  for (const SignatureMatch& m : match_line(line, frames)) out.push_back(m.id);
  return out;
}

// The match of `id` for `line`; an empty match (and a failure) when there is none.
inline SignatureMatch match(std::string_view line, std::string_view id) {
  for (SignatureMatch& m : match_line(line)) {
    if (m.id == id) return m;
  }
  ADD_FAILURE() << "no " << id << " for: " << line;
  return {};
}

// `want` is a subset of the match's fields, value for value.
inline void expect_fields(const SignatureMatch& m, const Fields& want) {
  for (const auto& [key, value] : want) {
    auto it = m.fields.find(key);
    if (it == m.fields.end()) {
      ADD_FAILURE() << m.id << ": no field " << key << " (want " << value << ")";
    } else {
      EXPECT_EQ(it->second, value) << m.id << ": field " << key;
    }
  }
}

inline void expect_no_field(const SignatureMatch& m, const std::string& key) {
  EXPECT_EQ(m.fields.count(key), 0u) << m.id << " has " << key << "=" << m.fields.at(key);
}

}  // namespace traindoc::analysis::signature_test
