// Which lines of the job's output are worth citing: those holding an anchor of the texts that
// explain failures. The log tap asks it of every line the job prints, so it looks at each byte
// once rather than searching the line once per anchor. Pure.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

namespace traindoc::supervisor {

// The anchors: Python exceptions and tracebacks, C++ terminate and assertion messages, glibc
// heap checks, signals, OOM, timeouts, NCCL warnings, Xid lines, Python's UserWarnings, DDP's
// hint about unused parameters, multiprocessing's bootstrap error.
std::span<const std::string_view> log_anchors();

// Where the first anchor in `text` begins; npos when it holds none. The log tap runs it over
// whole chunks of lines, and looks only at the lines it finds one in.
size_t find_anchor(std::string_view text);

// Whether `line` holds one of the anchors.
inline bool worth_keeping(std::string_view line) {
  return find_anchor(line) != std::string_view::npos;
}

// The same answer by one search of the line per anchor: the plain way, which the tests and the
// benchmark hold the one pass against.
inline bool worth_keeping_by_search(std::string_view line) {
  for (std::string_view anchor : log_anchors()) {
    if (line.find(anchor) != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace traindoc::supervisor
