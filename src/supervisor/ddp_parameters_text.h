// Reads the parameters that a DDP error names by index, as the Python hook of the process that
// raised it wrote them to the run folder (common::kDdpParametersFile). Supervisor process, main
// loop thread; outside input, read within bounds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace traindoc::supervisor {

inline constexpr size_t kDdpParametersMaxBytes = 64 << 10;
inline constexpr size_t kDdpParametersMaxLines = 64;

// (index, name) of each "index<TAB>name" line, at most kDdpParametersMaxLines; a line of another
// form (no tab, no name, an index that is not 1 to 9 digits) is skipped.
std::vector<std::pair<int64_t, std::string>> ddp_parameters_text(std::string_view text);

}  // namespace traindoc::supervisor
