// `timeout [OPTION]... DURATION COMMAND...` as coreutils reads it. Any process; pure.
#include "store/time_limit.h"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace traindoc::store {

std::optional<TimeLimit> time_limit_of(const std::string& cmdline) {
  std::istringstream words(cmdline);
  std::string word;
  if (!(words >> word) || word.substr(word.find_last_of('/') + 1) != "timeout") return std::nullopt;
  TimeLimit out{.words = "timeout"};
  while (words >> word) {
    out.words += " " + word;
    if (word == "--signal" || word == "--kill-after") {
      if (words >> word) out.words += " " + word;  // the option's value
      continue;
    }
    if (word.starts_with("--")) continue;  // --foreground, --preserve-status, --signal=INT
    if (word.starts_with("-")) {
      // Short options, clustered (-vk 5): -s and -k take the rest of the word, or the next one.
      size_t valued = word.find_first_of("sk", 1);
      if (valued == word.size() - 1 && words >> word) out.words += " " + word;
      continue;
    }
    char* end = nullptr;
    double value = std::strtod(word.c_str(), &end);
    std::string_view unit(end);
    double scale = unit.empty() || unit == "s" ? 1
                   : unit == "m"               ? 60
                   : unit == "h"               ? 3600
                   : unit == "d"               ? 86400
                                               : 0;
    double seconds = value * scale;
    constexpr double kYears = 100 * 365 * 86400.0;
    if (end == word.c_str() || !(seconds > 0) || !(seconds < kYears)) return std::nullopt;
    out.limit_ns = std::llround(seconds * 1e9);
    return out;
  }
  return std::nullopt;
}

}  // namespace traindoc::store
