// The C entry points the Python hook (python/traindoc_hook) calls through ctypes, in every job
// process that runs Python. Called from ordinary Python code, never from a signal handler.
#include "agent/agent.h"

namespace {

// Raised when an entry point changes its arguments, so that an older hook finds out.
constexpr int kPythonAbiVersion = 1;

}  // namespace

// The hook's version check and on/off switch in one: 0 when this process has no slot (traindoc
// is not watching it, or every slot was taken), so the hook patches nothing.
extern "C" __attribute__((visibility("default"))) int traindoc_python_abi(void) {
  return traindoc::agent::active() ? kPythonAbiVersion : 0;
}
