// The C entry points the Python hook (python/traindoc_hook) calls through ctypes, in every job
// process that runs Python. Called from ordinary Python code, never from a signal handler.
#include <cerrno>

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

// The program is done: a crash from here on is in teardown (a process group left to the
// interpreter's exit), not in the work the program did.
extern "C" __attribute__((visibility("default"))) void traindoc_script_finished(void) {
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kScriptFinished, 0, 0);
  errno = saved_errno;
}

// init_process_group returned with this rank of a world of this size.
extern "C" __attribute__((visibility("default"))) void traindoc_process_group_joined(
    int rank, int world_size) {
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kProcessGroupJoined, rank,
                                 world_size);
  errno = saved_errno;
}

// torch.multiprocessing.spawn started this process as number `index` (the hook wraps the function
// every spawned process runs first).
extern "C" __attribute__((visibility("default"))) void traindoc_spawned(int index) {
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kSpawned, index, 0);
  errno = saved_errno;
}

// An exception ended a thread of this process; Python prints its traceback next.
extern "C" __attribute__((visibility("default"))) void traindoc_thread_died(void) {
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kThreadDied, 0, 0);
  errno = saved_errno;
}
