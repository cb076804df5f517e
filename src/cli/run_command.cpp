// `traindoc run`: prepares the run folder, supervises the job, then reports.
// Supervisor process, main thread. Exits with the job's status, as a shell would.
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "cli/commands.h"
#include "supervisor/job_guard.h"
#include "supervisor/launcher.h"
#include "supervisor/supervisor.h"

namespace traindoc::cli {
namespace fs = std::filesystem;
namespace {

std::string default_run_dir() {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  uint32_t random = 0;
  if (getrandom(&random, sizeof(random), 0) != sizeof(random))
    random = static_cast<uint32_t>(getpid());
  char id[8];
  std::snprintf(id, sizeof(id), "%06x", random & 0xffffff);
  return std::string(kRunsFolder) + "/" + stamp + "-" + id;
}

// Creates the run folder, refusing to reuse one that holds anything: a run is never overwritten.
std::string prepare_run_dir(const std::string& requested) {
  fs::path dir = fs::absolute(requested.empty() ? default_run_dir() : requested);
  std::error_code error;
  if (fs::exists(dir, error) && !fs::is_empty(dir, error)) {
    throw std::runtime_error("run folder " + dir.string() +
                             " already holds files; choose a new one (a run is never overwritten)");
  }
  fs::create_directories(dir / "logs", error);
  if (error || access(dir.c_str(), W_OK) != 0) {
    throw std::runtime_error("cannot create the run folder " + dir.string() + ": " +
                             (error ? error.message() : strerror(errno)));
  }
  return dir.lexically_normal().string();
}

// The agent lives in ../lib beside bin/traindoc and the Python hook in ../python, in the build
// tree and once installed. "" when it is not there.
std::string installed(const char* env, const char* relative) {
  if (const char* path = getenv(env)) return path;
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  fs::path path = exe.parent_path().parent_path() / relative;
  return fs::exists(path, error) ? path.string() : "";
}

}  // namespace

int run_command(const RunArgs& args) {
  supervisor::SupervisorOptions options;
  options.command = args.command;
  options.run_dir = prepare_run_dir(args.out);
  options.agent_path = installed("TRAINDOC_AGENT", "lib/libtraindoc_agent.so");
  options.python_path = installed("TRAINDOC_PYTHON_HOOK", "python");
  options.interval_ms = static_cast<int>(args.interval_s * 1000);
  options.announce = args.flags.output() != Output::kNothing;
  options.stall_seconds = args.stall_s;
  options.abort_on_issue = args.on_mismatch == "abort";
  // Before supervise() starts threads: the guard is forked.
  supervisor::JobGuard guard(options.run_dir, options.announce,
                             [&] { report_run(options.run_dir, Output::kNothing, stderr); });
  options.guard_pid = guard.pid();
  try {
    supervisor::supervise(options);
  } catch (const supervisor::LaunchError& error) {
    guard.release();
    fprintf(stderr, "traindoc: %s\n", error.message.c_str());
    report_run(options.run_dir, Output::kNothing, stderr);
    return error.exit_status;
  }
  // The job's stdout is the job's alone: traindoc speaks on stderr.
  int status = report_run(options.run_dir, args.flags.output(), stderr);
  guard.release();
  return status;
}

}  // namespace traindoc::cli
