// Small scanning helpers shared by the /proc and cgroup text parsers: numbers, lines, "Key: value".
// Supervisor process, sampler thread (pure functions, no I/O).
// Everything is total: bad input yields false or nullopt, never a throw.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace traindoc::supervisor::text {

inline bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

inline std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// The non-empty pieces of `text` between `separator`s (PATH's folders, a list of names).
inline std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= text.size()) {
    size_t to = std::min(text.find(separator, from), text.size());
    if (to > from) out.emplace_back(text.substr(from, to - from));
    from = to + 1;
  }
  return out;
}

// Takes the decimal digits at the front of `text`. False, with `text` untouched, on no digits
// or on overflow.
inline bool take_u64(std::string_view& text, uint64_t& value) {
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    auto digit = static_cast<uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  value = v;
  text.remove_prefix(i);
  return true;
}

// As take_u64 with an optional leading '-'; the magnitude must fit int64_t.
inline bool take_i64(std::string_view& text, int64_t& value) {
  std::string_view rest = text;
  bool negative = !rest.empty() && rest.front() == '-';
  if (negative) rest.remove_prefix(1);
  uint64_t magnitude = 0;
  if (!take_u64(rest, magnitude)) return false;
  if (magnitude > static_cast<uint64_t>(INT64_MAX)) return false;
  value = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
  text = rest;
  return true;
}

// The whole of `text` (spaces around allowed) as one unsigned decimal.
inline std::optional<uint64_t> parse_u64(std::string_view text) {
  text = trim(text);
  uint64_t value = 0;
  if (!take_u64(text, value) || !text.empty()) return std::nullopt;
  return value;
}

// Pops the next line (without its '\n') off the front of `text`. False when none is left.
inline bool next_line(std::string_view& text, std::string_view& line) {
  if (text.empty()) return false;
  size_t end = text.find('\n');
  if (end == std::string_view::npos) {
    line = text;
    text = {};
  } else {
    line = text.substr(0, end);
    text.remove_prefix(end + 1);
  }
  return true;
}

// Pops the next run of non-space characters. False when only spaces remain.
inline bool next_word(std::string_view& text, std::string_view& word) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  if (text.empty()) return false;
  size_t end = 0;
  while (end < text.size() && !is_space(text[end])) ++end;
  word = text.substr(0, end);
  text.remove_prefix(end);
  return true;
}

// "Key:   value" (status, meminfo, smaps_rollup). False when the line has no ':'.
inline bool split_key(std::string_view line, std::string_view& key, std::string_view& value) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return false;
  key = line.substr(0, colon);
  value = trim(line.substr(colon + 1));
  return true;
}

// "1764 kB" -> bytes; a bare number (no unit) is taken as is.
inline std::optional<uint64_t> parse_kb_value(std::string_view value) {
  uint64_t number = 0;
  if (!take_u64(value, number)) return std::nullopt;
  value = trim(value);
  if (value.empty()) return number;
  if (value != "kB") return std::nullopt;
  if (number > UINT64_MAX / 1024) return std::nullopt;
  return number * 1024;
}

}  // namespace traindoc::supervisor::text
