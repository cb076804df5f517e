// Reads the text of a stack dump that a job process's agent wrote (agent/stack-<pid>.txt), which
// is the job's input: any bytes, any size. Supervisor process, main loop thread; pure, so that it
// is fuzzed (tests/fuzz/fuzz_stack_dump.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace traindoc::supervisor {

// The most of a dump that is read: CPython dumps at most 100 threads of 100 frames, far less.
inline constexpr size_t kStackDumpMaxBytes = size_t{8} << 20;
// The most native frames taken from a dump: the agent writes at most 64.
inline constexpr size_t kStackDumpMaxFrames = 256;

struct StackDumpText {
  // The Python stacks, from "python:\n" up to "native:\n", the main thread's marked "Current
  // thread" when another thread took the request.
  std::string python;
  // Another thread than the main one took the request: no native frames of the main thread.
  bool other_thread = false;
  std::vector<uint64_t> native;  // the main thread's return addresses, innermost first
};

// The dump of process `pid` once complete (it ends with "end"), else nullopt: the agent is still
// writing it, or it is no dump at all.
std::optional<StackDumpText> parse_stack_dump(std::string_view text, int pid);

}  // namespace traindoc::supervisor
