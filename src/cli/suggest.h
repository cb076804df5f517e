// Suggests the nearest valid option for a mistyped one. Supervisor process, command line.
#pragma once

#include <string>
#include <vector>

namespace traindoc::cli {

// The candidate closest to `typed` by edit distance, or "" when none is close.
std::string nearest(const std::string& typed, const std::vector<std::string>& candidates);

}  // namespace traindoc::cli
