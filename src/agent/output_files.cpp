// Which of a job process's stdout and stderr are files, and the log files its Python opens,
// handed to the supervisor (common/layout.h, OutputNote): what a process writes to a file instead
// of the job's pipes is output too.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "agent/agent.h"
#include "agent/crash.h"
#include "common/clock.h"
#include "common/output_socket.h"

namespace traindoc::agent {
namespace {

sockaddr_un g_address{};
socklen_t g_address_size = 0;  // 0: no supervisor socket to tell

}  // namespace

void note_output_file(int fd) {
  int saved_errno = errno;
  struct stat file {};
  if (g_address_size == 0 || fstat(fd, &file) != 0 || !S_ISREG(file.st_mode)) {
    errno = saved_errno;
    return;
  }
  common::NoteMessage message;
  message.note.fd = fd;
  message.note.time_ns = common::realtime_ns();
  // Appending (`2>> err.log`), the process writes at the end whatever its position says.
  int flags = fcntl(fd, F_GETFL);
  off_t offset = flags >= 0 && (flags & O_APPEND) != 0 ? file.st_size : lseek(fd, 0, SEEK_CUR);
  message.note.offset = offset > 0 ? static_cast<uint64_t>(offset) : 0;
  message.attach(fd);
  char link[32] = "/proc/self/fd/";
  size_t link_length = strlen(link);
  link[link_length + format_decimal(link + link_length, static_cast<uint64_t>(fd))] = '\0';
  ssize_t path_length = readlink(link, message.body.path, sizeof(message.body.path));
  if (path_length > 0 && static_cast<size_t>(path_length) < sizeof(message.body.path)) {
    message.send_path(static_cast<size_t>(path_length));
  } else {
    message.send_path(0);
  }
  // Never blocks: a supervisor that is gone or has a full backlog misses this file, the process
  // never waits for it.
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (sock >= 0) {
    if (connect(sock, reinterpret_cast<const sockaddr*>(&g_address), g_address_size) == 0) {
      ssize_t sent = sendmsg(sock, &message.header, MSG_NOSIGNAL | MSG_DONTWAIT);
      (void)sent;
    }
    close(sock);
  }
  errno = saved_errno;
}

void note_output_files(const char* socket_name) {
  if (socket_name != nullptr) {
    size_t length = strnlen(socket_name, sizeof(common::AgentHeader::outputs_socket));
    if (length == 0 || length >= sizeof(common::AgentHeader::outputs_socket)) return;
    g_address_size = common::abstract_address(g_address, {socket_name, length});
  }
  note_output_file(STDOUT_FILENO);
  note_output_file(STDERR_FILENO);
}

}  // namespace traindoc::agent
