// A signal in words, as every report and event of traindoc names it: "SIGTERM", or "signal 40"
// for a number glibc has no name for. Any process; pure.
#pragma once

#include <string.h>  // sigabbrev_np

#include <string>

namespace traindoc::store {

inline std::string signal_words(int sig) {
  const char* name = sigabbrev_np(sig);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

}  // namespace traindoc::store
