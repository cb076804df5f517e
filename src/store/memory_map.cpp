// /proc/<pid>/maps parsing. Any process; pure.
// A line: "start-end perms offset major:minor inode   path", the path possibly holding spaces.
#include "store/memory_map.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace traindoc::store {
namespace {

constexpr std::string_view kDeleted = " (deleted)";

std::string_view next_field(std::string_view& rest) {
  size_t begin = rest.find_first_not_of(" \t");
  if (begin == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(begin);
  size_t end = rest.find_first_of(" \t");
  std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return field;
}

bool parse_number(std::string_view text, int base, uint64_t& out) {
  if (text.empty()) return false;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return error == std::errc() && end == text.data() + text.size();
}

std::optional<MemoryMapping> parse_line(std::string_view line) {
  MemoryMapping m;
  std::string_view rest = line;
  std::string_view range = next_field(rest);
  size_t dash = range.find('-');
  if (dash == std::string_view::npos || !parse_number(range.substr(0, dash), 16, m.start) ||
      !parse_number(range.substr(dash + 1), 16, m.end) || m.start >= m.end) {
    return std::nullopt;
  }
  std::string_view perms = next_field(rest);
  if (perms.size() != 4) return std::nullopt;
  m.perms = std::string(perms);
  if (!parse_number(next_field(rest), 16, m.offset)) return std::nullopt;
  std::string_view device = next_field(rest);
  size_t colon = device.find(':');
  uint64_t major = 0;
  uint64_t minor = 0;
  if (colon == std::string_view::npos || !parse_number(device.substr(0, colon), 16, major) ||
      !parse_number(device.substr(colon + 1), 16, minor)) {
    return std::nullopt;
  }
  if (!parse_number(next_field(rest), 10, m.inode)) return std::nullopt;
  size_t path_begin = rest.find_first_not_of(" \t");
  if (path_begin != std::string_view::npos) {
    std::string_view path = rest.substr(path_begin);
    if (path.size() > kDeleted.size() && path.ends_with(kDeleted)) {
      path.remove_suffix(kDeleted.size());
      m.deleted = true;
    }
    m.path = std::string(path);
  }
  return m;
}

}  // namespace

std::vector<MemoryMapping> parse_maps(std::string_view maps) {
  std::vector<MemoryMapping> out;
  while (!maps.empty()) {
    size_t newline = maps.find('\n');
    std::string_view line = maps.substr(0, newline);
    maps.remove_prefix(newline == std::string_view::npos ? maps.size() : newline + 1);
    if (auto m = parse_line(line)) out.push_back(std::move(*m));
  }
  std::stable_sort(out.begin(), out.end(), [](const MemoryMapping& a, const MemoryMapping& b) {
    return a.start < b.start;
  });
  return out;
}

const MemoryMapping* find_mapping(const std::vector<MemoryMapping>& maps, uint64_t address) {
  auto it = std::upper_bound(maps.begin(), maps.end(), address,
                             [](uint64_t a, const MemoryMapping& m) { return a < m.start; });
  if (it == maps.begin()) return nullptr;
  --it;
  return it->contains(address) ? &*it : nullptr;
}

}  // namespace traindoc::store
