// The Python hook's entry points for collectives (python/traindoc_hook/collectives.py calls them
// through ctypes), in every job process that runs Python, from the thread that calls a
// torch.distributed collective, before and after it. Never from a signal handler.
#include <cerrno>

#include "agent/collectives.h"

using traindoc::common::CollectiveCall;
using traindoc::common::CollectiveEvent;
using traindoc::common::CollectiveSource;

// `filled`: the call as the hook built it (group, ranks, op, tensors, call site...); the agent
// adds the call's number in its group, the time and the source. Returns the number, for
// traindoc_collective_exit; 0 when the call could not be numbered.
extern "C" __attribute__((visibility("default"))) uint64_t traindoc_collective_enter(
    const CollectiveCall* filled) {
  int saved_errno = errno;
  CollectiveCall call = *filled;
  call.number = traindoc::agent::next_collective_number(call.group);
  call.event = static_cast<uint8_t>(CollectiveEvent::kEnter);
  call.source = static_cast<uint8_t>(CollectiveSource::kPython);
  traindoc::agent::write_collective(call);
  errno = saved_errno;
  return call.number;
}

// The call numbered `number` in `group` returned (or raised).
extern "C" __attribute__((visibility("default"))) void traindoc_collective_exit(uint64_t group,
                                                                                uint64_t number) {
  int saved_errno = errno;
  traindoc::agent::write_collective_exit(group, number, CollectiveSource::kPython);
  errno = saved_errno;
}
