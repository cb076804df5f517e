// The C entry point the Python hook calls when a loss function rejects a target label
// (python/traindoc_hook/losses.py), through ctypes; ordinary Python code, never a signal handler.
#include <cerrno>
#include <cstdint>

#include "agent/agent.h"

// The class count and the batch's largest label are what the error text does not say ("Target
// 12 is out of bounds." names the first label it met); `largest` is kNoValue when unknown.
extern "C" __attribute__((visibility("default"))) void traindoc_label_out_of_range(
    int64_t label, int64_t classes, int64_t largest) {
  int saved_errno = errno;
  traindoc::agent::append_record(traindoc::common::RecordType::kLabelOutOfRange, label, classes,
                                 largest);
  errno = saved_errno;
}
