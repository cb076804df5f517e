// Which of a job process's stdout and stderr are files, and the log files its Python opens,
// appended to <run>/agent/outputs for the supervisor: what a process writes to a file instead of
// the job's pipes is output too.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "agent/agent.h"
#include "agent/crash.h"
#include "common/clock.h"

namespace traindoc::agent {
namespace {

char g_outputs_path[4096] = {};

}  // namespace

void note_output_file(int fd) {
  int saved_errno = errno;
  struct stat file {};
  if (g_outputs_path[0] == '\0' || fstat(fd, &file) != 0 || !S_ISREG(file.st_mode)) {
    errno = saved_errno;
    return;
  }
  char line[4096 + 128];
  char* at = line;
  at += format_decimal(at, static_cast<uint64_t>(getpid()));
  *at++ = ' ';
  at += format_decimal(at, static_cast<uint64_t>(fd));
  *at++ = ' ';
  at += format_decimal(at, static_cast<uint64_t>(common::realtime_ns()));
  *at++ = ' ';
  // Appending (`2>> err.log`), the process writes at the end whatever its position says.
  int flags = fcntl(fd, F_GETFL);
  off_t offset = flags >= 0 && (flags & O_APPEND) != 0 ? file.st_size : lseek(fd, 0, SEEK_CUR);
  at += format_decimal(at, offset > 0 ? static_cast<uint64_t>(offset) : 0);
  *at++ = ' ';
  char link[32] = "/proc/self/fd/";
  size_t link_len = strlen(link);
  link[link_len + format_decimal(link + link_len, static_cast<uint64_t>(fd))] = '\0';
  size_t room = static_cast<size_t>(line + sizeof(line) - at) - 1;
  ssize_t n = readlink(link, at, room);
  // A path the supervisor cannot open again (deleted, or too long) or read back as one line.
  if (n > 0 && static_cast<size_t>(n) < room && at[0] == '/' &&
      memchr(at, '\n', static_cast<size_t>(n)) == nullptr) {
    at += n;
    *at++ = '\n';
    int out = open(g_outputs_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (out >= 0) {
      // One write of one line: appends of other processes never cut into it.
      ssize_t written = write(out, line, static_cast<size_t>(at - line));
      (void)written;
      close(out);
    }
  }
  errno = saved_errno;
}

void note_output_files(const char* run_dir) {
  if (run_dir != nullptr && run_file_path(g_outputs_path, sizeof(g_outputs_path), run_dir,
                                          common::kOutputsFileName) == 0) {
    return;
  }
  note_output_file(STDOUT_FILENO);
  note_output_file(STDERR_FILENO);
}

}  // namespace traindoc::agent
