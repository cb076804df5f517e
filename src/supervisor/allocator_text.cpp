// Reads the caching allocator's state that the Python hook wrote at an out-of-memory error.
// Supervisor process, main loop thread.
#include "supervisor/allocator_text.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace traindoc::supervisor {
namespace {

// A decimal number of [0, max], nothing around it.
std::optional<uint64_t> number(std::string_view text,
                               uint64_t max = std::numeric_limits<int64_t>::max()) {
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > max) return {};
  return value;
}

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  while (true) {
    size_t tab = line.find('\t');
    out.push_back(line.substr(0, tab));
    if (tab == std::string_view::npos) return out;
    line.remove_prefix(tab + 1);
  }
}

void take_site(const std::vector<std::string_view>& f, store::AllocatorState& state) {
  if (f.size() != 8 || state.sites.size() >= kAllocatorSitesMax || f[7].empty()) return;
  std::optional<uint64_t> bytes = number(f[1]);
  std::optional<uint64_t> blocks = number(f[2]);
  std::optional<uint64_t> largest = number(f[3]);
  std::optional<uint64_t> smallest = number(f[4]);
  std::optional<uint64_t> line = number(f[5], std::numeric_limits<int32_t>::max());
  if (!bytes || !blocks || !largest || !smallest || !line) return;
  state.sites.push_back(
      {std::string(f[7].substr(0, kAllocatorNameMax)), static_cast<int64_t>(*line),
       std::string(f[6].substr(0, kAllocatorNameMax)), *bytes, *blocks, *largest, *smallest});
}

}  // namespace

void allocator_text(std::string_view text, store::AllocatorState& state) {
  struct Named {
    std::string_view name;
    std::optional<uint64_t> store::AllocatorState::*field;
  };
  static constexpr Named kNumbers[] = {
      {"requested", &store::AllocatorState::requested},
      {"device_free", &store::AllocatorState::device_free},
      {"allocated", &store::AllocatorState::allocated},
      {"reserved", &store::AllocatorState::reserved},
      {"inactive_split", &store::AllocatorState::inactive_split},
      {"alloc_retries", &store::AllocatorState::alloc_retries},
      {"ooms", &store::AllocatorState::ooms},
      {"segments", &store::AllocatorState::segments},
      {"active_allocated", &store::AllocatorState::active_allocated},
      {"pending_free", &store::AllocatorState::pending_free},
      {"inactive", &store::AllocatorState::inactive},
      {"largest_free", &store::AllocatorState::largest_free},
  };
  text = text.substr(0, kAllocatorStateMaxBytes);
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::vector<std::string_view> f = fields(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (f[0] == "site") {
      take_site(f, state);
      continue;
    }
    if (f.size() != 2) continue;
    std::optional<uint64_t> value = number(f[1]);
    if (!value) continue;
    if (f[0] == "device" && *value <= 1024) state.device = static_cast<int>(*value);
    if (f[0] == "history") state.history = *value != 0;
    auto known = std::find_if(std::begin(kNumbers), std::end(kNumbers),
                              [&](const Named& n) { return n.name == f[0]; });
    if (known != std::end(kNumbers)) state.*(known->field) = value;
  }
  std::stable_sort(state.sites.begin(), state.sites.end(),
                   [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
}

}  // namespace traindoc::supervisor
