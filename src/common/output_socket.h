// The socket on which a job process hands the supervisor a file it writes its output to
// (common/layout.h, AgentHeader::outputs_socket): one OutputNote message on a connection of its
// own, with the descriptor attached (SCM_RIGHTS). Both ends and the tests build their messages
// here. Header-only; async-signal-safe.
#pragma once

#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

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

  // The descriptor that came with a received note; -1 when none.
  int attached() {
    for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
          c->cmsg_len == CMSG_LEN(sizeof(int))) {
        int fd = -1;
        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        return fd;
      }
    }
    return -1;
  }
};

}  // namespace traindoc::common
