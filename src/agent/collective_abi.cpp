// The Python hook's entry points for collectives (python/traindoc_hook/collectives.py calls them
// through ctypes), in every job process that runs Python, from the thread that calls a
// torch.distributed collective, before and after it. Never from a signal handler.
#include <cerrno>

#include "agent/collectives.h"

using traindoc::common::CollectiveCall;
using traindoc::common::CollectiveSource;

// `call`: the call as the hook built it (group, ranks, op, tensors, call site...); the agent adds
// its number in the group and the time. Returns the number, for traindoc_collective_exit; 0 when
// the call could not be numbered.
extern "C" __attribute__((visibility("default"))) uint64_t traindoc_collective_enter(
    const CollectiveCall* call) {
  int saved_errno = errno;
  uint64_t number = traindoc::agent::write_collective_enter(*call, CollectiveSource::kPython);
  errno = saved_errno;
  return number;
}

// The call numbered `number` returned (or raised); `call` is the one given to the enter.
extern "C" __attribute__((visibility("default"))) void traindoc_collective_exit(
    const CollectiveCall* call, uint64_t number) {
  int saved_errno = errno;
  traindoc::agent::write_collective_exit(*call, number);
  errno = saved_errno;
}
