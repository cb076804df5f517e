// The C entry point the Python hook calls when a loss function rejects a target label
// (python/traindoc_hook/losses.py), through ctypes; ordinary Python code, never a signal handler.
#include <cerrno>
#include <cstdint>

#include "agent/agent.h"

// The class count is what the error text does not say ("Target 255 is out of bounds.").
extern "C" __attribute__((visibility("default"))) void traindoc_label_out_of_range(
    int64_t label, int64_t classes) {
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kLabelOutOfRange, label, classes);
  errno = saved_errno;
}
