// Bounded file reads. Supervisor process, main loop thread.
#include "supervisor/file_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/file_descriptor.h"

namespace traindoc::supervisor {

namespace {

// A FIFO or a device would block the supervisor's read: O_NONBLOCK keeps the open from blocking
// on a FIFO, and only a regular file is read.
std::string read_regular(const std::string& path, size_t limit, int flags) {
  common::FileDescriptor fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags));
  struct stat info {};
  if (fd.get() < 0 || fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) return "";
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= limit) {
    ssize_t n = read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

std::string read_file_text(const std::string& path, size_t limit) {
  // A job writes the run folder's files: a link it put there leads nowhere.
  return read_regular(path, limit, O_NOFOLLOW);
}

std::string read_file_head(const std::string& path, size_t limit) {
  std::string text = read_regular(path, limit, 0);
  if (text.size() > limit) text.resize(limit);
  return text;
}

}  // namespace traindoc::supervisor
