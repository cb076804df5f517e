// The socket on which a job process hands the supervisor a file it writes its output to
// (common/layout.h, AgentHeader::outputs_socket): one OutputNote message on a connection of its
// own, with the descriptor attached (SCM_RIGHTS). Both ends and the tests build their messages
// here. Header-only; async-signal-safe.
#pragma once

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace traindoc::common {

struct OutputNote {
  int32_t fd;  // its number in the process, which names the writer
  uint32_t reserved;
  int64_t time_ns;  // realtime, when told
  uint64_t offset;  // where the process writes next: what comes before is not its output
  // Then the file's name as the process saw it when it told (its /proc/self/fd link), up to the
  // message's end: the name of the output stream only, since the file is read through the
  // descriptor, and kept because a log rotated away at once is renamed before it is read.
};
static_assert(sizeof(OutputNote) == 24);
inline constexpr size_t kOutputPathMax = 4096;

// Fills `address` with the abstract name `name` (no file, so no path length to meet); returns
// its length for bind() and connect().
inline socklen_t abstract_address(sockaddr_un& address, std::string_view name) {
  address = {};
  address.sun_family = AF_UNIX;
  size_t length = name.size() < sizeof(address.sun_path) - 1 ? name.size() : 0;
  memcpy(address.sun_path + 1, name.data(), length);
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + length);
}

// A connection to the socket of abstract name `name`, as a sender makes it (`flags`: more socket
// flags, such as SOCK_NONBLOCK); -1 when refused.
inline int connect_abstract(std::string_view name, int flags = 0) {
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | flags, 0);
  if (sock < 0) return -1;
  sockaddr_un address;
  socklen_t size = abstract_address(address, name);
  if (connect(sock, reinterpret_cast<const sockaddr*>(&address), size) != 0) {
    close(sock);
    return -1;
  }
  return sock;
}

// One note with room for one descriptor, ready for sendmsg() or recvmsg(). Not copyable: the
// header points into it.
struct NoteMessage {
  struct {
    OutputNote note;
    char path[kOutputPathMax];
  } body{};
  OutputNote& note = body.note;
  iovec data{&body, sizeof(body)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr header{};

  NoteMessage() {
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    header.msg_control = control;
    header.msg_controllen = sizeof(control);
  }
  NoteMessage(const NoteMessage&) = delete;
  NoteMessage& operator=(const NoteMessage&) = delete;

  // The note and `path_length` bytes of the path are sent.
  void send_path(size_t path_length) { data.iov_len = sizeof(OutputNote) + path_length; }

  void attach(int fd) {
    cmsghdr* attached = CMSG_FIRSTHDR(&header);
    attached->cmsg_level = SOL_SOCKET;
    attached->cmsg_type = SCM_RIGHTS;
    attached->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(attached), &fd, sizeof(int));
  }
};

}  // namespace traindoc::common
