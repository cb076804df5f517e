// Nearest-option suggestion by edit distance. Supervisor process, command line parsing.
#include "cli/suggest.h"

#include <algorithm>
#include <numeric>

namespace traindoc::cli {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string nearest(const std::string& typed, const std::vector<std::string>& candidates) {
  std::string name = typed.substr(0, typed.find('='));
  std::string best;
  size_t best_distance = 0;
  for (const std::string& candidate : candidates) {
    size_t distance = edit_distance(name, candidate);
    // A prefix counts as close: `--int` for `--interval`.
    if (candidate.starts_with(name) && name.size() > 3) distance = std::min<size_t>(distance, 1);
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best_distance <= std::max<size_t>(2, name.size() / 3) ? best : "";
}

}  // namespace traindoc::cli
