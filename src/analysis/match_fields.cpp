// Reading the values a signature extracted back as numbers, lists and shapes. Pure.
#include "analysis/match_fields.h"

#include <charconv>

namespace traindoc::analysis {

std::string field(const SignatureMatch& m, const std::string& name) {
  auto it = m.fields.find(name);
  return it == m.fields.end() ? "" : it->second;
}

std::optional<int> int_field(const SignatureMatch& m, const std::string& name) {
  std::string text = field(m, name);
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<int> int_list(const std::string& text) {
  std::vector<int> out;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    int value = 0;
    auto [next, error] = std::from_chars(p, end, value);
    if (error == std::errc()) out.push_back(value);
    p = next;
    while (p < end && (*p == ',' || *p == ' ')) ++p;
    if (error != std::errc()) ++p;
  }
  return out;
}

std::string shape(const std::string& list) {
  std::string out = "[";
  for (char c : list) {
    out += c;
    if (c == ',') out += ' ';
  }
  return out + "]";
}

}  // namespace traindoc::analysis
