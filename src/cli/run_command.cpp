// `traindoc run`: prepares the run folder, supervises the job, then reports.
// Supervisor process, main thread. Exits with the job's status, as a shell would.
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "analysis/crash_facts.h"
#include "analysis/preflight_checks.h"
#include "cli/commands.h"
#include "report/check_report.h"
#include "report/json_report.h"
#include "report/safe_text.h"
#include "supervisor/job_guard.h"
#include "supervisor/launcher.h"
#include "supervisor/supervisor.h"

namespace traindoc::cli {
namespace fs = std::filesystem;
namespace {

std::string default_folder(const char* prefix) {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  uint32_t random = 0;
  if (getrandom(&random, sizeof(random), 0) != sizeof(random))
    random = static_cast<uint32_t>(getpid());
  char id[8];
  std::snprintf(id, sizeof(id), "%06x", random & 0xffffff);
  return std::string(kRunsFolder) + "/" + prefix + stamp + "-" + id;
}

[[noreturn]] void refuse(const fs::path& dir, const std::string& why) {
  throw std::runtime_error("run folder " + dir.string() + ": " + why);
}

}  // namespace

fs::path claim_folder(const std::string& requested, const char* prefix) {
  fs::path dir =
      fs::absolute(requested.empty() ? default_folder(prefix) : requested).lexically_normal();
  if (dir.has_parent_path() && !dir.has_filename()) dir = dir.parent_path();  // "runs/x/"
  std::error_code error;
  fs::create_directories(dir.parent_path(), error);
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error("cannot create the run folder " + dir.string() + ": " +
                             strerror(errno));
  }
  struct stat info {};
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) refuse(dir, "not a folder");
  if (info.st_uid != geteuid()) {
    refuse(dir, "owned by another user; choose a folder of your own");
  }
  if ((info.st_mode & S_IWOTH) != 0) {
    refuse(dir, "writable by every user; choose a folder that only you can write");
  }
  if (!fs::is_empty(dir, error)) {
    refuse(dir, "already holds files; choose a new one (a run is never overwritten)");
  }
  if (chmod(dir.c_str(), 0700) != 0) {
    refuse(dir, std::string("cannot write it: ") + strerror(errno));
  }
  return dir;
}

namespace {

// Claims the run folder (claim_folder), then creates run.db exclusively. Of two traindocs given
// the same folder at once, one runs; the other stops here, before its job starts.
std::string prepare_run_dir(const std::string& requested) {
  fs::path dir = claim_folder(requested, "");
  int claim =
      open((dir / "run.db").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (claim < 0) {
    refuse(dir, errno == EEXIST
                    ? "another traindoc took it at the same moment; give each traindoc a folder "
                      "of its own (under srun: --out runs/job-$SLURM_JOB_ID/task-$SLURM_PROCID)"
                    : std::string("cannot write it: ") + strerror(errno));
  }
  close(claim);
  if (mkdir((dir / "logs").c_str(), 0700) != 0) {
    refuse(dir, std::string("cannot write it: ") + strerror(errno));
  }
  return dir.string();
}

// The agent lives in ../lib beside bin/traindoc and the Python hook in ../python, in the build
// tree and once installed. "" when it is not there. Absolute, whatever TRAINDOC_AGENT says: the
// job may change its folder before it starts another program. `separators`: characters the
// variable that carries the path splits at (LD_PRELOAD: space and colon; PYTHONPATH: colon),
// which would silently take the agent or hook away from every job. `env`: the variable that may
// name another path; nullptr for none.
std::string installed(const char* env, const char* relative, std::string_view separators) {
  std::error_code error;
  const char* chosen = env != nullptr ? getenv(env) : nullptr;
  fs::path path =
      chosen != nullptr
          ? fs::path(chosen)
          : fs::read_symlink("/proc/self/exe", error).parent_path().parent_path() / relative;
  if (chosen == nullptr && !fs::exists(path, error)) return "";
  std::string text = fs::absolute(path, error).lexically_normal().string();
  if (text.find_first_of(separators) != std::string::npos) {
    throw std::runtime_error(text + " holds a character (space or colon) at which the job's " +
                             "environment would split it; install traindoc in a path without " +
                             "spaces or colons" +
                             (chosen != nullptr ? " or set " + std::string(env) + " to one" : ""));
  }
  return text;
}

// The report of a run whose job has ended; a failure to make it (a run.db cut short) is told
// on stderr, never in place of the job's status.
void report_or_say(const std::string& run_dir, Output output) {
  try {
    report_run(run_dir, output, stderr);
  } catch (const std::exception& error) {
    fprintf(stderr, "traindoc: no report for %s: %s\n", run_dir.c_str(), error.what());
  }
}

}  // namespace

int run_command(const RunArgs& args) {
  supervisor::keep_own_files_private();
  supervisor::SupervisorOptions options;
  options.command = args.command;
  options.agent_path = installed("TRAINDOC_AGENT", "lib/libtraindoc_agent.so", " :");
  options.python_path = installed("TRAINDOC_PYTHON_HOOK", "python", ":");
  // Only when asked for ("1": the installed one; or its path): under it, glibc's malloc was seen
  // to keep its mmap threshold where it would have moved, which changed a job's RSS growth by half
  // (docs/collectives.md). Without it, NCCL resolved by dlsym goes unseen, and the report says so.
  const char* audit = getenv("TRAINDOC_NCCL_AUDIT");
  if (audit != nullptr && *audit != '\0') {
    bool ours = std::string_view(audit) == "1";
    options.audit_path =
        installed(ours ? nullptr : "TRAINDOC_NCCL_AUDIT", "lib/libtraindoc_nccl_audit.so", " :");
    // The dynamic linker would say so on every process's stderr, in the job's output.
    std::error_code error;
    if (!fs::is_regular_file(options.audit_path, error)) {
      throw std::runtime_error(std::string("TRAINDOC_NCCL_AUDIT names ") + audit +
                               ", which is no file; leave it unset, or set it to 1 for the "
                               "installed audit library");
    }
  }
  options.run_dir = prepare_run_dir(args.out);
  options.interval_ms = static_cast<int>(args.interval_s * 1000);
  if (args.flags.output() != Output::kNothing) {
    options.announce = [](const std::string& text) {
      fprintf(stderr, "traindoc: %s\n", report::terminal_safe(text).c_str());
    };
  }
  // A trial of traindoc fit is one of many runs of a command already checked.
  if (args.trial_steps == 0) {
    options.preflight = [announce = options.announce](const store::PreflightFacts& facts) {
      std::vector<store::PreflightResult> results = analysis::preflight_checks(facts);
      for (const store::PreflightResult& r : results) {
        if (announce) announce(report::preflight_line(r));
      }
      return results;
    };
  }
  options.error_files = !args.no_error_file;
  options.crash_words = [](const store::Crash& crash) { return analysis::crash_words(crash); };
  options.stall_seconds = args.stall_s;
  options.abort_on_issue = args.on_mismatch == "abort";
  if (args.memory_history) options.memory_history_entries = supervisor::kMemoryHistoryEntries;
  options.trial_steps = args.trial_steps;
  options.trial_flat_s = args.trial_flat_s;
  // Before supervise() starts threads: the guard is forked.
  supervisor::JobGuard guard(options.run_dir, static_cast<bool>(options.announce),
                             [&] { report_run(options.run_dir, Output::kNothing, stderr); });
  options.guard_pid = guard.pid();
  store::RunInfo run;
  try {
    run = supervisor::supervise(options);
  } catch (const supervisor::LaunchError& error) {
    guard.release();
    fprintf(stderr, "traindoc: %s\n", report::terminal_safe(error.message).c_str());
    report_or_say(options.run_dir, Output::kNothing);
    return error.exit_status;
  }
  // The job has ended: whatever happens to the report from here on, its status is returned.
  guard.release();
  // The job's stdout is the job's alone: traindoc speaks on stderr.
  report_or_say(options.run_dir, args.flags.output());
  return report::shell_status(run);
}

}  // namespace traindoc::cli
