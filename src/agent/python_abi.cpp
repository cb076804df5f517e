// The C entry points the Python hook (python/traindoc_hook) calls through ctypes, in every job
// process that runs Python. Called from ordinary Python code, never from a signal handler.
#include <cerrno>
#include <cstdint>

#include "agent/agent.h"

namespace {

// Raised when an entry point changes its arguments, so that an older hook finds out.
constexpr int kPythonAbiVersion = 2;

// One record, with the caller's errno left as it was: Python may read it after a ctypes call.
void append_keeping_errno(traindoc::common::RecordType type, int64_t a, int64_t b) {
  int saved_errno = errno;
  traindoc::agent::append_record(type, a, b);
  errno = saved_errno;
}

}  // namespace

// The hook's version check and on/off switch in one: 0 when this process has no slot (traindoc
// is not watching it, or every slot was taken), so the hook patches nothing.
extern "C" __attribute__((visibility("default"))) int traindoc_python_abi(void) {
  return traindoc::agent::active() ? kPythonAbiVersion : 0;
}

// The program is done: a crash from here on is in teardown (a process group left to the
// interpreter's exit), not in the work the program did.
extern "C" __attribute__((visibility("default"))) void traindoc_script_finished(void) {
  append_keeping_errno(traindoc::common::RecordType::kScriptFinished, 0, 0);
}

// init_process_group was called with this rank and world size (-1: not passed).
extern "C" __attribute__((visibility("default"))) void traindoc_process_group_init(int rank,
                                                                                   int world_size) {
  append_keeping_errno(traindoc::common::RecordType::kProcessGroupInit, rank, world_size);
}

// init_process_group raised: the process left it without joining.
extern "C" __attribute__((visibility("default"))) void traindoc_process_group_init_failed(void) {
  append_keeping_errno(traindoc::common::RecordType::kProcessGroupInitFailed, 0, 0);
}

// init_process_group returned with this rank of a world of this size.
extern "C" __attribute__((visibility("default"))) void traindoc_process_group_joined(
    int rank, int world_size) {
  append_keeping_errno(traindoc::common::RecordType::kProcessGroupJoined, rank, world_size);
}

// torch.multiprocessing.spawn started this process as number `index` (the hook wraps the function
// every spawned process runs first).
extern "C" __attribute__((visibility("default"))) void traindoc_spawned(int index) {
  append_keeping_errno(traindoc::common::RecordType::kSpawned, index, 0);
}

// DDP's unused-parameter error ended the program; the hook wrote the `lines` parameters it names
// to the run folder's kDdpParametersFile.
extern "C" __attribute__((visibility("default"))) void traindoc_ddp_parameters(int lines) {
  append_keeping_errno(traindoc::common::RecordType::kDdpParameters, lines, 0);
}

// The process steps its optimizer on batches of `batch_size` samples (the DataLoader it iterates
// last): sent when that size changes, not at every step.
extern "C" __attribute__((visibility("default"))) void traindoc_batch_size(int64_t batch_size) {
  append_keeping_errno(traindoc::common::RecordType::kBatchSize, batch_size, 0);
}

// The process ran out of GPU memory; the hook wrote the caching allocator's state then to the
// run folder's kAllocatorStateFile, as the process's `number`-th such error.
extern "C" __attribute__((visibility("default"))) void traindoc_allocator_state(int number) {
  append_keeping_errno(traindoc::common::RecordType::kAllocatorState, number, 0);
}

// A DataLoader started this process as its worker number `worker_id` (the hook wraps the
// function every worker runs first).
extern "C" __attribute__((visibility("default"))) void traindoc_worker_started(int worker_id) {
  append_keeping_errno(traindoc::common::RecordType::kWorkerStarted, worker_id, 0);
}

// An exception ended a thread of this process; Python prints its traceback next. `name_low`
// and `name_high`: the first 16 bytes of the thread's name, little-endian, NUL-padded.
extern "C" __attribute__((visibility("default"))) void traindoc_thread_died(uint64_t name_low,
                                                                            uint64_t name_high) {
  append_keeping_errno(traindoc::common::RecordType::kThreadDied, static_cast<int64_t>(name_low),
                       static_cast<int64_t>(name_high));
}

// The program opened a log file as `fd` (logging.FileHandler): what it logs there is its output.
extern "C" __attribute__((visibility("default"))) void traindoc_log_file_opened(int fd) {
  traindoc::agent::note_output_file(fd);
}
