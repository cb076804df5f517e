// libFuzzer target: the supervisor's reader of output-file notes (supervisor/output_files.h) on
// its real socket. The input is up to 8 connections, each a header byte (the descriptors to
// attach, what becomes of the connection), a length and that many bytes of message; any process
// of the user can connect and send anything. What the reader hands over must be what was sent.
#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/output_socket.h"
#include "supervisor/output_files.h"

using namespace traindoc;
using namespace traindoc::supervisor;

namespace {

constexpr size_t kMaxConnections = 8;
constexpr size_t kMaxMessage = sizeof(common::OutputNote) + common::kOutputPathMax + 64;
constexpr std::string_view kContent = "fuzzed output\n";

// What a peer may attach. Only the first ones are files a process writes its output to.
enum class Kind : uint8_t {
  kMemfd,  // a regular file, read and written
  kMemfdWriteOnly,
  kMemfdPath,  // O_PATH: names the file, opens nothing
  kDevNull,
  kPipeNoWriter,  // a pipe's read end whose write end is closed
  kFifoNoWriter,  // the same of a named pipe, which a reader's open() waits on
  kDirectory,
  kSocket,
};

// What becomes of a connection.
enum class Fate : uint8_t {
  kSendClose,   // sends, closes at once: as an agent does
  kSendStay,    // sends, stays connected until the end
  kLateOrNone,  // connects; sends after the reader's first look (or never: stays silent)
  kSilent,      // connects and closes without sending
};

struct Connection {
  int sock = -1;
  Kind kind = Kind::kMemfd;
  int fds = 0;
  Fate fate = Fate::kSendClose;
  bool extra = false;  // late (kLateOrNone), else a second message on the same connection
  std::vector<char> message;
  ino_t inode = 0;  // of the first descriptor attached
};

int count_fds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) abort();
  int count = 0;
  while (readdir(dir) != nullptr) ++count;
  closedir(dir);
  return count;
}

bool is_memfd(Kind kind) {
  return kind == Kind::kMemfd || kind == Kind::kMemfdWriteOnly || kind == Kind::kMemfdPath;
}

// A fresh descriptor of `kind`; -1 where the system refused.
int make_fd(Kind kind) {
  if (is_memfd(kind)) {
    int fd = memfd_create("fuzz-output", MFD_CLOEXEC);
    if (fd < 0) return -1;
    if (write(fd, kContent.data(), kContent.size()) != static_cast<ssize_t>(kContent.size())) {
      close(fd);
      return -1;
    }
    if (kind == Kind::kMemfd) return fd;
    std::string link = "/proc/self/fd/" + std::to_string(fd);
    int other = open(link.c_str(), (kind == Kind::kMemfdWriteOnly ? O_WRONLY : O_PATH) | O_CLOEXEC);
    close(fd);
    return other;
  }
  int pair[2];
  switch (kind) {
    case Kind::kDevNull:
      return open("/dev/null", O_WRONLY | O_CLOEXEC);
    case Kind::kPipeNoWriter:
      if (pipe2(pair, O_CLOEXEC) != 0) return -1;
      close(pair[1]);
      return pair[0];
    case Kind::kFifoNoWriter: {
      const char* dir = getenv("TMPDIR");
      std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/fuzz-output-fifo-" +
                         std::to_string(getpid());
      if (mkfifo(path.c_str(), 0600) != 0) return -1;
      int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      unlink(path.c_str());
      return fd;
    }
    case Kind::kDirectory:
      return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    case Kind::kSocket:
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
      close(pair[1]);
      return pair[0];
    default:
      return -1;
  }
}

void send_message(Connection& c) {
  std::vector<int> fds;
  for (int i = 0; i < c.fds; ++i) {
    int fd = make_fd(c.kind);
    if (fd < 0) continue;
    fds.push_back(fd);
  }
  if (!fds.empty()) {
    struct stat file {};
    if (fstat(fds[0], &file) != 0) abort();
    c.inode = file.st_ino;
  }
  iovec data{c.message.data(), c.message.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  if (!fds.empty()) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* attached = CMSG_FIRSTHDR(&header);
    attached->cmsg_level = SOL_SOCKET;
    attached->cmsg_type = SCM_RIGHTS;
    attached->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    memcpy(CMSG_DATA(attached), fds.data(), fds.size() * sizeof(int));
  }
  (void)sendmsg(c.sock, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (c.extra && c.fate != Fate::kLateOrNone) {
    (void)sendmsg(c.sock, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  for (int fd : fds) close(fd);
}

void close_connection(Connection& c) {
  if (c.sock >= 0) close(c.sock);
  c.sock = -1;
}

std::vector<Connection> parse(const uint8_t* data, size_t size) {
  std::vector<Connection> out;
  size_t at = 0;
  while (at + 3 <= size && out.size() < kMaxConnections) {
    uint8_t head = data[at];
    size_t length = data[at + 1] | static_cast<size_t>(data[at + 2]) << 8;
    at += 3;
    length = std::min({length, size - at, kMaxMessage});
    Connection c;
    c.fds = head & 3;
    c.kind = static_cast<Kind>(head >> 2 & 7);
    c.fate = static_cast<Fate>(head >> 5 & 3);
    c.extra = (head & 0x80) != 0;
    c.message.assign(data + at, data + at + length);
    at += length;
    out.push_back(std::move(c));
  }
  return out;
}

// The connection whose message `file` was told in: the same note, and the same file.
const Connection* sender_of(const std::vector<Connection>& connections, const OutputFile& file) {
  for (const Connection& c : connections) {
    if (c.fate == Fate::kSilent || (c.fate == Fate::kLateOrNone && !c.extra) || c.fds == 0 ||
        c.message.size() < sizeof(common::OutputNote)) {
      continue;
    }
    common::OutputNote note;
    memcpy(&note, c.message.data(), sizeof(note));
    struct stat read {};
    if (note.fd == file.writer.fd && note.time_ns == file.writer.t_ns &&
        note.offset == file.offset && fstat(file.file.get(), &read) == 0 &&
        read.st_ino == c.inode) {
      return &c;
    }
  }
  return nullptr;
}

void check(const std::vector<Connection>& connections, const std::vector<OutputFile>& files) {
  if (files.size() > connections.size()) abort();
  for (const OutputFile& file : files) {
    if (file.path.empty() || file.path.find('\0') != std::string::npos) abort();
    if (file.writer.pid != getpid()) abort();
    const Connection* c = sender_of(connections, file);
    if (c == nullptr) abort();
    // The name told, when it is a path; else the file's own.
    std::string_view told(c->message.data() + sizeof(common::OutputNote),
                          std::min(c->message.size(), sizeof(common::NoteMessage::body)) -
                              sizeof(common::OutputNote));
    if (told.starts_with('/') && told.find('\0') == std::string_view::npos && file.path != told) {
      abort();
    }
    // Open for reading, whatever the process held.
    int flags = fcntl(file.file.get(), F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) != O_RDONLY) abort();
    char text[64];
    ssize_t n = pread(file.file.get(), text, sizeof(text), 0);
    if (n < 0) abort();
    if (is_memfd(c->kind) && std::string_view(text, static_cast<size_t>(n)) != kContent) abort();
  }
}

// The reader runs on the supervisor's main loop, which must never wait on a job process: an
// open() that blocks (a named pipe without a writer) ends only at a signal, here libFuzzer's
// alarm every few seconds, in the supervisor never.
void take_into(OutputFilesReader& reader, std::vector<OutputFile>& files) {
  auto start = std::chrono::steady_clock::now();
  for (OutputFile& file : reader.take()) files.push_back(std::move(file));
  if (std::chrono::steady_clock::now() - start > std::chrono::seconds(2)) abort();
}

void run(const uint8_t* data, size_t size) {
  std::vector<Connection> connections = parse(data, size);
  OutputFilesReader reader;
  if (reader.socket_name().empty()) abort();
  for (Connection& c : connections) {
    c.sock = common::connect_abstract(reader.socket_name());
    if (c.sock < 0) abort();
    if (c.fate == Fate::kSendClose || c.fate == Fate::kSendStay) send_message(c);
    if (c.fate == Fate::kSendClose || c.fate == Fate::kSilent) close_connection(c);
  }
  std::vector<OutputFile> files;
  take_into(reader, files);
  for (Connection& c : connections) {
    if (c.fate == Fate::kLateOrNone && c.extra) send_message(c);
  }
  take_into(reader, files);
  for (Connection& c : connections) close_connection(c);
  take_into(reader, files);
  check(connections, files);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int before = count_fds();
  run(data, size);
  // Every descriptor sent, received and opened is closed with the reader and the files.
  if (count_fds() != before) abort();
  return 0;
}
