// Starts the job with the agent injected. Supervisor process, main thread; the code between
// fork and exec runs in the child and calls only async-signal-safe functions.
#include "supervisor/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "common/layout.h"

extern char** environ;

namespace traindoc::supervisor {
namespace {

// The requests to stop that the supervisor forwards; it also takes SIGCHLD and SIGWINCH.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kPipeSize = 1 << 20;  // absorbs bursts while the tap writes to a slow terminal

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + strerror(errno));
}

// A pseudo-terminal that keeps the job's view of a terminal (isatty, colours, line buffering)
// while its bytes pass to ours unchanged: output processing is off, our terminal does its own.
OutputChannel open_pty(int like_fd, int& slave_fd) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) fail("cannot open a pty");
  const char* name = ptsname(master);
  if (name == nullptr) fail("cannot name the pty");
  slave_fd = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave_fd < 0) fail("cannot open the pty's terminal side");
  termios mode{};
  if (tcgetattr(like_fd, &mode) == 0) {
    mode.c_oflag &= ~static_cast<tcflag_t>(OPOST);
    tcsetattr(slave_fd, TCSANOW, &mode);
  }
  winsize size{};
  if (ioctl(like_fd, TIOCGWINSZ, &size) == 0) ioctl(master, TIOCSWINSZ, &size);
  return {master, true};
}

OutputChannel open_pipe(int& write_fd) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) fail("cannot create a pipe");
  fcntl(fds[0], F_SETPIPE_SZ, kPipeSize);
  write_fd = fds[1];
  return {fds[0], false};
}

OutputChannel open_channel(int our_fd, int& job_fd) {
  return isatty(our_fd) ? open_pty(our_fd, job_fd) : open_pipe(job_fd);
}

// Set for --no-error-file: the Python hook then writes no TORCHELASTIC_ERROR_FILE either.
constexpr const char* kNoErrorFileEnv = "TRAINDOC_NO_ERROR_FILE";

// Adds the value of the list variable `entry` names (NAME=a:b) after ours, when `entry` is one.
bool joined_list(std::string_view entry, std::string_view name, std::string& ours) {
  if (!entry.starts_with(name) || entry.substr(name.size(), 1) != "=") return false;
  std::string_view theirs = entry.substr(name.size() + 1);
  if (!theirs.empty()) {
    if (!ours.empty()) ours += ':';
    ours += theirs;
  }
  return true;
}

std::vector<std::string> job_environment(const LaunchSpec& spec) {
  std::vector<std::string> env;
  std::string preload = spec.agent_path;
  // Ours first, as the agent is preloaded first: an audit library of the job's own sees the
  // bindings as ours left them.
  std::string audit = spec.audit_path;
  std::string python_path = spec.python_path;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    if (joined_list(text, "LD_PRELOAD", preload) || joined_list(text, "LD_AUDIT", audit)) continue;
    if (text.starts_with(std::string(common::kRunDirEnv) + "=")) continue;
    if (text.starts_with(std::string(kNoErrorFileEnv) + "=")) continue;
    // Only --memory-history turns history on: one inherited from an outer run is not this one's.
    if (text.starts_with(std::string(common::kMemoryHistoryEnv) + "=")) continue;
    if (text.starts_with("PYTHONPATH=") && !spec.python_path.empty()) {
      // Ours first, so that our sitecustomize runs (and then chains to theirs).
      std::string_view theirs = text.substr(strlen("PYTHONPATH="));
      python_path += theirs.empty() ? "" : ":" + std::string(theirs);
      continue;
    }
    env.emplace_back(text);
  }
  if (!preload.empty()) env.push_back("LD_PRELOAD=" + preload);
  if (!audit.empty()) env.push_back("LD_AUDIT=" + audit);
  if (!python_path.empty()) env.push_back("PYTHONPATH=" + python_path);
  env.push_back(std::string(common::kRunDirEnv) + "=" + spec.run_dir);
  if (!spec.error_files) env.push_back(std::string(kNoErrorFileEnv) + "=1");
  if (spec.memory_history_entries > 0) {
    env.push_back(std::string(common::kMemoryHistoryEnv) + "=" +
                  std::to_string(spec.memory_history_entries));
  }
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

void block_supervisor_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGWINCH);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // A broken terminal pipe must not kill the supervisor: the tap sees EPIPE and passes it on.
  signal(SIGPIPE, SIG_IGN);
}

namespace {
mode_t g_user_umask = 022;
}  // namespace

void keep_own_files_private() {
  g_user_umask = umask(077);
}

void end_if_stopped_before_launch() {
  sigset_t pending;
  sigpending(&pending);
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : kStopSignals) {
    if (sigismember(&pending, sig) == 1) sigaddset(&stops, sig);
  }
  pthread_sigmask(SIG_UNBLOCK, &stops, nullptr);  // delivered at once: its default action
}

int take_pending_stop() {
  sigset_t stops;
  sigemptyset(&stops);
  for (int sig : kStopSignals) sigaddset(&stops, sig);
  timespec now{};
  return std::max(0, sigtimedwait(&stops, nullptr, &now));
}

LaunchedJob launch(const LaunchSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("no command to run");
  LaunchedJob job;
  int job_out = -1;
  int job_err = -1;
  job.out = open_channel(STDOUT_FILENO, job_out);
  job.err = open_channel(STDERR_FILENO, job_err);

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) fail("cannot create a pipe");

  std::vector<std::string> argv_strings = spec.argv;
  std::vector<std::string> env_strings = job_environment(spec);
  std::vector<char*> argv = pointers(argv_strings);
  std::vector<char*> envp = pointers(env_strings);

  pid_t pid = fork();
  if (pid < 0) fail("cannot fork");
  if (pid == 0) {
    // The job starts with the signal state the user's shell gave us.
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    umask(g_user_umask);
    if (dup2(job_out, STDOUT_FILENO) < 0 || dup2(job_err, STDERR_FILENO) < 0) _exit(126);
    execvpe(argv[0], argv.data(), envp.data());
    int error = errno;
    ssize_t ignored = write(report[1], &error, sizeof(error));
    (void)ignored;
    _exit(127);
  }

  close(report[1]);
  close(job_out);
  close(job_err);
  int error = 0;
  ssize_t n;
  do {
    n = read(report[0], &error, sizeof(error));
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(error))) {
    waitpid(pid, nullptr, 0);
    close(job.out.read_fd);
    close(job.err.read_fd);
    // As a shell says it: a bare name was searched in PATH, a path was tried as given.
    bool missing = error == ENOENT || error == ENOTDIR;
    bool searched = spec.argv[0].find('/') == std::string::npos;
    std::string why = missing && searched ? "command not found" : strerror(error);
    throw LaunchError{missing ? 127 : 126, spec.argv[0] + ": " + why};
  }
  job.pid = pid;
  return job;
}

void copy_window_size(const LaunchedJob& job) {
  winsize size{};
  if (job.out.tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) {
    ioctl(job.out.read_fd, TIOCSWINSZ, &size);
  }
  if (job.err.tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0) {
    ioctl(job.err.read_fd, TIOCSWINSZ, &size);
  }
}

}  // namespace traindoc::supervisor
