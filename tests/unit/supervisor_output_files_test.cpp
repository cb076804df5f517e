// OutputFilesReader: files handed over on its socket as the agent does
// (src/agent/output_files.cpp), with the sender named by the kernel and the file read through the
// descriptor it sent.
#include "supervisor/output_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/output_socket.h"

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;

// Sends `note` with `fd` attached (none when -1) on `sock`, `size` bytes of it, then `path`.
bool send_note(int sock, const common::OutputNote& note, int fd, size_t size = sizeof(note),
               const std::string& path = "") {
  common::NoteMessage message;
  message.note = note;
  message.data.iov_len = size;
  if (!path.empty()) {
    memcpy(message.body.path, path.data(), path.size());
    message.send_path(path.size());
    size = message.data.iov_len;
  }
  if (fd >= 0) {
    message.attach(fd);
  } else {
    message.header.msg_control = nullptr;
    message.header.msg_controllen = 0;
  }
  return sendmsg(sock, &message.header, MSG_NOSIGNAL) == static_cast<ssize_t>(size);
}

std::string temp_file(const std::string& name) {
  return (fs::temp_directory_path() / (name + "-" + std::to_string(getpid()))).string();
}

std::vector<OutputFile> take_within(OutputFilesReader& reader, size_t wanted, double seconds) {
  std::vector<OutputFile> out;
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (out.size() < wanted && std::chrono::steady_clock::now() < until) {
    for (OutputFile& file : reader.take()) out.push_back(std::move(file));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return out;
}

// A process whose stdout is a write-only file hands it over and exits at once: the file is still
// read, under the name it has now, through the descriptor; the pid is the kernel's.
TEST(OutputFiles, AHandedOverFileIsReadThroughItsDescriptor) {
  OutputFilesReader reader;
  ASSERT_FALSE(reader.socket_name().empty());
  std::string path = temp_file("handed-over");
  pid_t child = fork();
  if (child == 0) {
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, "before\nTraceback\n", 17) != 17) _exit(2);
    int sock = common::connect_abstract(reader.socket_name());
    common::OutputNote note{.fd = 1, .reserved = 0, .time_ns = 1234, .offset = 7};
    _exit(sock >= 0 && send_note(sock, note, fd) ? 0 : 3);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(status, 0);
  fs::rename(path, path + ".moved");
  std::vector<OutputFile> files = take_within(reader, 1, 5);
  ASSERT_EQ(files.size(), 1u);
  // Told without a name: the one it has now.
  EXPECT_EQ(files[0].writer, (store::LogWriter{child, 1, 1234}));
  EXPECT_EQ(files[0].offset, 7u);
  EXPECT_EQ(files[0].path, path + ".moved");
  char text[32] = {};
  EXPECT_EQ(pread(files[0].file.get(), text, sizeof(text), 7), 10);
  EXPECT_STREQ(text, "Traceback\n");
  EXPECT_TRUE(reader.take().empty()) << "each file once";
  fs::remove(path + ".moved");
}

// A note that arrives in parts of its life: a connection that waits, then sends; malformed ones
// (no descriptor, a short note, nothing at all) give nothing and never stall the rest.
TEST(OutputFiles, MalformedNotesGiveNothingAndALateOneComes) {
  OutputFilesReader reader;
  std::string path = temp_file("late");
  int file = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  ASSERT_GE(file, 0);
  common::OutputNote note{.fd = 2, .reserved = 0, .time_ns = 5, .offset = 0};
  int late = common::connect_abstract(reader.socket_name());
  int without_fd = common::connect_abstract(reader.socket_name());
  int short_note = common::connect_abstract(reader.socket_name());
  int silent = common::connect_abstract(reader.socket_name());
  ASSERT_TRUE(send_note(without_fd, note, -1));
  ASSERT_TRUE(send_note(short_note, note, file, sizeof(note) - 1));
  close(silent);
  EXPECT_TRUE(take_within(reader, 1, 0.2).empty());
  // Told with the name the process saw (a rotated log is renamed before it is read).
  ASSERT_TRUE(send_note(late, note, file, sizeof(note), "/var/log/train.log"));
  std::vector<OutputFile> files = take_within(reader, 1, 5);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].writer.pid, getpid());
  EXPECT_EQ(files[0].path, "/var/log/train.log");
  EXPECT_EQ(pread(files[0].file.get(), nullptr, 0, 0), 0) << "read through the descriptor";
  for (int fd : {late, without_fd, short_note, file}) close(fd);
  fs::remove(path);
}

int open_descriptors() {
  return static_cast<int>(std::distance(fs::directory_iterator("/proc/self/fd"), {}));
}

// A note with two descriptors attached (the room for one holds two, rounded up): both are
// received, and both are closed, though the note is refused; any process can send such notes.
TEST(OutputFiles, EveryDescriptorAttachedIsClosed) {
  OutputFilesReader reader;
  int before = open_descriptors();
  int sock = common::connect_abstract(reader.socket_name());
  int fds[2] = {open("/dev/null", O_RDONLY | O_CLOEXEC), open("/dev/null", O_RDONLY | O_CLOEXEC)};
  common::OutputNote note{.fd = 1, .reserved = 0, .time_ns = 1, .offset = 0};
  common::NoteMessage message;
  message.note = note;
  message.send_path(0);
  message.header.msg_controllen = CMSG_SPACE(sizeof(fds));
  std::vector<char> control(message.header.msg_controllen);
  message.header.msg_control = control.data();
  cmsghdr* attached = CMSG_FIRSTHDR(&message.header);
  attached->cmsg_level = SOL_SOCKET;
  attached->cmsg_type = SCM_RIGHTS;
  attached->cmsg_len = CMSG_LEN(sizeof(fds));
  memcpy(CMSG_DATA(attached), fds, sizeof(fds));
  ASSERT_EQ(sendmsg(sock, &message.header, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof(note)));
  for (int fd : {sock, fds[0], fds[1]}) close(fd);
  EXPECT_TRUE(take_within(reader, 1, 0.2).empty());
  EXPECT_EQ(open_descriptors(), before);
}

// Only regular files are output files, as an agent sends them: a named pipe without a writer
// would hold the main loop in open() until one comes (here a thread, a second later), and a
// pipe's reader kept open would spare its writers the EPIPE they are owed.
TEST(OutputFiles, NoPipeIsOpenedNorKept) {
  OutputFilesReader reader;
  std::string fifo = temp_file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int fifo_reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(fifo_reader, 0);
  int pipe_ends[2];
  ASSERT_EQ(pipe2(pipe_ends, O_CLOEXEC), 0);
  common::OutputNote note{.fd = 1, .reserved = 0, .time_ns = 1, .offset = 0};
  for (int fd : {fifo_reader, pipe_ends[1]}) {
    int sock = common::connect_abstract(reader.socket_name());
    ASSERT_TRUE(send_note(sock, note, fd, sizeof(note), "/tmp/out.log"));
    close(sock);
  }
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    close(open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));
  });
  auto start = std::chrono::steady_clock::now();
  std::vector<OutputFile> files = reader.take();
  auto took = std::chrono::steady_clock::now() - start;
  writer.join();
  EXPECT_LT(took, std::chrono::milliseconds(500)) << "waited in open() for the pipe's writer";
  EXPECT_TRUE(files.empty());
  for (int fd : {fifo_reader, pipe_ends[0], pipe_ends[1]}) close(fd);
  fs::remove(fifo);
}

// Anyone on the machine can find the abstract name and connect: a process of another user that
// does not run below traindoc hands nothing over.
TEST(OutputFiles, AnotherUsersProcessOutsideTheJobIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run a process as another user";
  OutputFilesReader reader;
  std::string path = temp_file("other-user");
  int file = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(file, 0);
  pid_t child = fork();
  if (child == 0) {
    // Its child is adopted by init (or the nearest subreaper above this test) once it exits.
    if (fork() != 0) _exit(0);
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    int sock = common::connect_abstract(reader.socket_name());
    common::OutputNote note{.fd = 1, .reserved = 0, .time_ns = 1, .offset = 0};
    _exit(sock >= 0 && send_note(sock, note, file) ? 0 : 3);
  }
  waitpid(child, nullptr, 0);
  EXPECT_TRUE(take_within(reader, 1, 1).empty());
  close(file);
  fs::remove(path);
}

}  // namespace
}  // namespace traindoc::supervisor
