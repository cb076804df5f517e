// libFuzzer target: the supervisor's reader of the stack dumps that job processes write
// (agent/stack-<pid>.txt). The first byte of the input chooses whether the dump is read as the
// main thread's or another's; what it yields stays within the input and its limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "supervisor/stack_dump_text.h"

using namespace traindoc::supervisor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  int pid = data[0] % 2 == 0 ? 42 : 43;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto parsed = parse_stack_dump(text, pid);
  if (!parsed) return 0;
  // Each "Thread 0x" that becomes "Current thread 0x" adds 8 bytes: at most one per 10 bytes.
  if (parsed->python.size() > text.size() + text.size() / 10 * 8 + 8 ||
      parsed->native.size() > kStackDumpMaxFrames ||
      (parsed->other_thread && !parsed->native.empty()) ||
      !parsed->python.starts_with("python:\n")) {
    std::abort();
  }
  return 0;
}
