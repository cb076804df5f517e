#include "supervisor/log_anchors.h"

#include <bitset>
#include <cstdint>
#include <iterator>

namespace traindoc::supervisor {
namespace {

constexpr std::string_view kAnchors[] = {"rror",
                                         "xception",
                                         "Traceback",
                                         "File \"",
                                         "terminate",
                                         "what():",
                                         "ssert",
                                         "Fatal",
                                         "illed",
                                         "ignal",
                                         "egmentation",
                                         "free(",
                                         "corrupt",
                                         "out of memory",
                                         "imed out",
                                         "imeout",
                                         "NCCL",
                                         "WARN",
                                         "Abort",
                                         "core dumped",
                                         "exited",
                                         "exitcode",
                                         "receive grad",
                                         "get gradient",
                                         "RESOURCE_EXHAUSTED",
                                         "Xid",
                                         "state_dict",
                                         "copying a param",
                                         "UserWarning",
                                         "unused parameters in",
                                         "bootstrapping phase"};

uint16_t pair_at(std::string_view text, size_t i) {
  return static_cast<uint16_t>(static_cast<uint8_t>(text[i]) << 8 |
                               static_cast<uint8_t>(text[i + 1]));
}

// The first two bytes of every anchor (each has at least three), as a set to test each position
// of a line against, and one per anchor to tell which to compare there. Most lines of a training
// log hold none of these pairs; where one occurs, only the anchors that start with it are compared.
struct AnchorStarts {
  std::bitset<65536> any;
  uint16_t of[std::size(kAnchors)] = {};

  AnchorStarts() {
    for (size_t k = 0; k < std::size(kAnchors); ++k) {
      of[k] = pair_at(kAnchors[k], 0);
      any.set(of[k]);
    }
  }
};

const AnchorStarts kStarts;

}  // namespace

std::span<const std::string_view> log_anchors() {
  return kAnchors;
}

bool worth_keeping(std::string_view line) {
  for (size_t i = 0; i + 1 < line.size(); ++i) {
    uint16_t pair = pair_at(line, i);
    if (!kStarts.any[pair]) continue;
    for (size_t k = 0; k < std::size(kAnchors); ++k) {
      if (kStarts.of[k] == pair && line.substr(i).starts_with(kAnchors[k])) return true;
    }
  }
  return false;
}

}  // namespace traindoc::supervisor
