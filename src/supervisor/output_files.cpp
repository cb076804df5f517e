// The output files' socket. Supervisor process, main loop thread.
#include "supervisor/output_files.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "common/hex.h"
#include "common/layout.h"
#include "common/output_socket.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/proc/process_identity.h"

namespace traindoc::supervisor {
namespace {

// Connections that wait for their note at once (a process that connected, then stopped or was
// killed before it sent) are kept at most this many; the oldest goes first.
constexpr size_t kMaxWaiting = 256;

// Whether the peer of a connection may hand files over.
bool trusted_peer(const ucred& peer) {
  if (peer.uid == geteuid()) return true;
  std::optional<ProcStat> stat = read_proc_stat(peer.pid);
  return stat && below(*stat, getpid());
}

// Every descriptor that came with a message, each ours to close whatever the note is worth: a
// peer may attach more than one (the room for one descriptor holds two, rounded up), and the
// kernel has installed all it could.
std::vector<FileDescriptor> attached(msghdr& header) {
  std::vector<FileDescriptor> out;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0)) {
      continue;
    }
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd = -1;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      out.emplace_back(fd);
    }
  }
  return out;
}

// The note and the descriptor on one connection; nullopt while the note is not there yet.
// `done`: the connection has nothing more to give.
std::optional<OutputFile> receive(int connection, bool& done) {
  common::NoteMessage message;
  ssize_t n = recvmsg(connection, &message.header, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  done = !(n < 0 && (errno == EAGAIN || errno == EINTR));
  if (n < 0) return std::nullopt;
  std::vector<FileDescriptor> descriptors = attached(message.header);
  if (descriptors.size() != 1) return std::nullopt;  // an agent sends one
  const FileDescriptor& sent = descriptors[0];
  const common::OutputNote& note = message.note;
  ucred peer{};
  socklen_t size = sizeof(peer);
  if (n < static_cast<ssize_t>(sizeof(note)) || note.fd < 0 ||
      getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || !trusted_peer(peer)) {
    return std::nullopt;
  }
  // Only a regular file, as an agent sends: opening a named pipe that has no writer waits for
  // one, and a pipe's reader kept open here would spare its writers the EPIPE they are owed.
  struct stat file {};
  if (fstat(sent.get(), &file) != 0 || !S_ISREG(file.st_mode)) return std::nullopt;
  // Opened anew for reading (the process's own may be write-only), through our descriptor: the
  // file the process holds, whatever its name is now.
  std::string link = "/proc/self/fd/" + std::to_string(sent.get());
  OutputFile out;
  out.file.reset(open(link.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (out.file.get() < 0) return std::nullopt;
  // The name the process saw, else the one it has now.
  std::string_view told(message.body.path, static_cast<size_t>(n) - sizeof(note));
  if (told.starts_with('/') && told.find('\0') == std::string_view::npos) {
    out.path = told;
  } else {
    char path[common::kOutputPathMax];
    ssize_t length = readlink(link.c_str(), path, sizeof(path));
    if (length <= 0 || static_cast<size_t>(length) >= sizeof(path)) return std::nullopt;
    out.path.assign(path, static_cast<size_t>(length));
  }
  out.writer = {peer.pid, note.fd, note.time_ns};
  out.offset = note.offset;
  return out;
}

}  // namespace

OutputFilesReader::OutputFilesReader() {
  unsigned char random[12];
  if (getrandom(random, sizeof(random), 0) != sizeof(random)) return;
  std::string name = "traindoc-" + common::hex_bytes(random, sizeof(random));
  static_assert(sizeof(common::AgentHeader::outputs_socket) > 9 + 2 * sizeof(random));
  m_listener.reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un address{};
  socklen_t size = common::abstract_address(address, name);
  if (m_listener.get() < 0 ||
      bind(m_listener.get(), reinterpret_cast<const sockaddr*>(&address), size) != 0 ||
      listen(m_listener.get(), SOMAXCONN) != 0) {
    m_listener.reset();
    return;
  }
  m_name = std::move(name);
}

OutputFilesReader::~OutputFilesReader() = default;

std::vector<OutputFile> OutputFilesReader::take() {
  std::vector<OutputFile> out;
  if (m_listener.get() < 0) return out;
  while (true) {
    int connection = accept4(m_listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (connection < 0) break;
    m_waiting.emplace_back(connection);
  }
  std::erase_if(m_waiting, [&](const FileDescriptor& connection) {
    bool done = false;
    if (std::optional<OutputFile> file = receive(connection.get(), done)) {
      out.push_back(std::move(*file));
    }
    return done;
  });
  if (m_waiting.size() > kMaxWaiting) {
    m_waiting.erase(m_waiting.begin(),
                    m_waiting.begin() + static_cast<ptrdiff_t>(m_waiting.size() - kMaxWaiting));
  }
  return out;
}

}  // namespace traindoc::supervisor
