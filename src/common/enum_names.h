// The value of a name, for the enums made from an X-macro table whose names run.db stores and
// report.json shows (event kinds, finding kinds, the collective facts): the values in order, and
// their names beside them. Any process; pure.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace traindoc::common {

// None for a name of no value (a run.db of another version).
template <typename Enum, size_t N>
std::optional<Enum> value_named(const std::array<Enum, N>& values,
                                const std::array<std::string_view, N>& names,
                                std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return values[i];
  }
  return std::nullopt;
}

}  // namespace traindoc::common
