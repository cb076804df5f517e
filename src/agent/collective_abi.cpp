// The Python hook's entry points for collectives (python/traindoc_hook/collectives.py calls them
// through ctypes), in every job process that runs Python, from the thread that calls a
// torch.distributed collective, before and after it. Never from a signal handler.
#include <cerrno>

#include "agent/agent.h"
#include "agent/collectives.h"

using traindoc::common::CollectiveCall;
using traindoc::common::CollectiveSource;

namespace {

// The number of the call this thread's hook entered last, for its exit: the hook records no call
// inside another on one thread (all_gather_object's all-gathers are part of it), so a thread's
// enter and exit pair up without the number crossing into Python and back.
__attribute__((tls_model("initial-exec"))) thread_local uint64_t t_number = 0;

}  // namespace

// `call`: the call as the hook described it (group, ranks, op, tensors, call site...), which the
// hook keeps and passes again for every call alike. The agent adds the process's training step
// (current_step), its number in the group and the time.
extern "C" __attribute__((visibility("default"))) void traindoc_collective_enter(
    const CollectiveCall* call) {
  int saved_errno = errno;
  CollectiveCall stepped = *call;
  stepped.step = traindoc::agent::current_step();
  t_number = traindoc::agent::write_collective_enter(stepped, CollectiveSource::kPython);
  errno = saved_errno;
}

// The call this thread entered last returned (or raised: `call` then has kCollectiveRaised);
// `call` is the one given to the enter, but for that flag.
extern "C" __attribute__((visibility("default"))) void traindoc_collective_exit(
    const CollectiveCall* call) {
  int saved_errno = errno;
  traindoc::agent::write_collective_exit(*call, t_number);
  errno = saved_errno;
}
