// DiskReserve: a file whose blocks are allocated (not sparse), so that removing it frees them.
// Supervisor process, main thread.
#include "supervisor/disk_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace traindoc::supervisor {

DiskReserve::DiskReserve(std::string path, uint64_t bytes) : m_path(std::move(path)) {
  int fd = open(m_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // Halves until it fits: on a nearly full disk a small reserve still saves the run's end.
  for (uint64_t size = bytes; size >= 4096; size /= 2) {
    if (posix_fallocate(fd, 0, static_cast<off_t>(size)) == 0) {
      m_held = size;
      break;
    }
  }
  close(fd);
  if (m_held == 0) unlink(m_path.c_str());
}

DiskReserve::~DiskReserve() {
  release();
}

void DiskReserve::release() {
  if (m_held == 0) return;
  unlink(m_path.c_str());
  m_held = 0;
}

}  // namespace traindoc::supervisor
