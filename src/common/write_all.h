// The whole of a buffer written to a descriptor, through short writes and interruptions: for the
// agent's dumps, the log tap's copies and the report files alike. Header-only; async-signal-safe.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstddef>

namespace traindoc::common {

// Async-signal-safe. False at the first write that fails, errno saying why (ENOSPC for a write
// that took nothing, which a regular file does only when full).
inline bool write_all(int fd, const void* data, size_t size) {
  const char* at = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, at, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace traindoc::common
