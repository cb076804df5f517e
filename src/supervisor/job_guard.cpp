// The job's guard. Its constructor runs in `traindoc run` before the supervisor starts any thread,
// so the forked guard may allocate and use the store as any single-threaded program.
#include "supervisor/job_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/layout.h"
#include "store/store_reader.h"
#include "store/store_writer.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

// SIGTERM lets torchrun and Python end their own children and flush their files; what is still
// there after this gets SIGKILL.
constexpr int64_t kTermGraceNs = 5'000'000'000;
constexpr auto kPollEvery = std::chrono::milliseconds(100);

std::string processes_text(size_t n) {
  return fmt::format("{} process{}", n, n == 1 ? "" : "es");
}

// run.db as the supervisor left it: it is gone, so this is final. nullopt where it cannot be read
// (killed before its first write): the environment alone then finds the job.
std::optional<store::Evidence> recorded(const std::string& run_dir) {
  try {
    return store::read_evidence(run_dir + "/run.db");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The processes run.db holds as running.
ProcessIds recorded_running(const std::optional<store::Evidence>& evidence) {
  ProcessIds running;
  if (!evidence) return running;
  for (const store::ProcessRecord& p : evidence->processes) {
    if (p.end_source == store::EndSource::kNone) running.emplace(p.pid, p.start_ticks);
  }
  return running;
}

// The run's processes: recorded as running, and those signalled so far.
struct Job {
  ProcessIds recorded;
  ProcessIds signalled;
};

// Sends `sig` to each process of the run not yet signalled (all of them when `again`). Returns
// how many processes of the run are alive.
size_t signal_run(const std::string& run_dir, int sig, bool again, Job& job) {
  ProcessIds alive = processes_of_run(run_dir, job.recorded);
  for (auto [pid, start] : alive) {
    auto [it, fresh] = job.signalled.try_emplace(pid, start);
    if (!fresh && it->second != start) {
      it->second = start;
      fresh = true;
    }
    if (fresh || again) signal_process(pid, start, sig);
  }
  return alive.size();
}

// Marks the recorded processes the guard saw end, and says in run.db what happened, for the
// report's missing evidence.
void record_end(const std::string& run_dir, const store::Evidence& evidence,
                const ProcessIds& signalled, int64_t lost_ns, const std::string& how) {
  store::StoreWriter writer = store::StoreWriter::open(run_dir + "/run.db");
  ProcessIds alive = processes_of_run(run_dir, signalled);
  int64_t now = common::realtime_ns();
  for (const store::ProcessRecord& p : evidence.processes) {
    auto it = signalled.find(p.pid);
    if (it == signalled.end() || it->second != p.start_ticks ||
        p.end_source != store::EndSource::kNone || alive.contains(p.pid)) {
      continue;
    }
    store::ProcessRecord ended;
    ended.pid = p.pid;
    ended.start_ticks = p.start_ticks;
    ended.end_ns = now;
    ended.end_source = store::EndSource::kGuard;
    writer.upsert_process(ended);
  }
  double after_s = evidence.run.start_ns > 0 && lost_ns > evidence.run.start_ns
                       ? static_cast<double>(lost_ns - evidence.run.start_ns) / 1e9
                       : 0;
  writer.add_event({lost_ns, store::EventKind::kSupervisorLost, 0,
                    fmt::format("traindoc's supervisor ended {:.1f} s into the run, before its job "
                                "(killed, or a fault of its own), so nothing after that was "
                                "recorded; its guard then ended the job: {}",
                                after_s, how)});
  writer.flush();
}

void end_job(const std::string& run_dir, const std::function<void()>& report) {
  int64_t lost_ns = common::realtime_ns();
  unlink((run_dir + "/" + common::kReserveFileName).c_str());  // the supervisor's, now free
  // Its reader is gone: the sparse file would only balloon a copy of the folder. Processes that
  // still map it keep writing into their mapping; a process started now runs without the agent.
  unlink((run_dir + "/" + common::kAgentFileName).c_str());
  std::optional<store::Evidence> evidence = recorded(run_dir);
  Job job{recorded_running(evidence), {}};
  size_t alive = signal_run(run_dir, SIGTERM, false, job);
  if (alive == 0) return;  // the job had ended: nothing to guard
  fprintf(stderr,
          "traindoc: the supervisor ended before its job (killed, or a fault of its own); "
          "ending the job so that none of it is left hung: SIGTERM to %s\n",
          processes_text(alive).c_str());
  int64_t deadline = common::realtime_ns() + kTermGraceNs;
  while (alive > 0 && common::realtime_ns() < deadline) {
    std::this_thread::sleep_for(kPollEvery);
    alive = signal_run(run_dir, SIGTERM, false, job);  // children started since
  }
  std::string how = fmt::format("SIGTERM to {}", processes_text(job.signalled.size()));
  if (alive > 0) {
    how += fmt::format(", then SIGKILL to the {} still there after {} s",
                       processes_text(signal_run(run_dir, SIGKILL, true, job)),
                       kTermGraceNs / 1'000'000'000);
    for (int i = 0; i < 10 && alive > 0; ++i) {
      std::this_thread::sleep_for(kPollEvery);
      alive = signal_run(run_dir, SIGKILL, true, job);
    }
    // A process in an uninterruptible wait (a hung NFS read, a driver call) dies when it ends.
    if (alive > 0) how += fmt::format("; {} not gone yet", processes_text(alive));
  }
  try {
    if (!evidence) evidence = store::read_evidence(run_dir + "/run.db");  // its error says why
    record_end(run_dir, *evidence, job.signalled, lost_ns, how);
    report();
    fprintf(stderr,
            "traindoc: the job is over (%s); what the supervisor recorded until it ended: %s "
            "(report.json, report.html)\n",
            how.c_str(), run_dir.c_str());
  } catch (const std::exception& error) {
    fprintf(stderr, "traindoc: the job is over (%s); no report: %s\n", how.c_str(), error.what());
  }
}

// ps shows the guard as what it is, not as a second `traindoc run ...`, and a pattern meant for
// traindoc or the job (pkill traindoc, pkill -f "traindoc run") does not end the guard with it.
// The argv strings are one block of memory that /proc/<pid>/cmdline reads.
void rename_process(const std::string& run_dir) {
  prctl(PR_SET_NAME, "job-guard");
  std::optional<std::vector<std::string>> argv = read_proc_cmdline(getpid());
  if (!argv || argv->empty() || (*argv)[0] != program_invocation_name) return;
  size_t size = 0;
  for (const std::string& arg : *argv) size += arg.size() + 1;
  std::string title = std::string("job-guard") + '\0' + run_dir;
  title.resize(std::min(title.size(), size - 1));
  memset(program_invocation_name, 0, size);
  memcpy(program_invocation_name, title.c_str(), title.size() + 1);
}

[[noreturn]] void guard_main(int fd, const std::string& run_dir, bool announce,
                             const std::function<void()>& report) {
  rename_process(run_dir);
  // Stop requests are traindoc's to pass on; the guard outlives them to see how traindoc ends.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);  // a pipe reading traindoc's output sees its end with traindoc's
    if (!announce) dup2(null, STDERR_FILENO);
  }
  char byte = 0;
  ssize_t n;
  do {
    n = read(fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) end_job(run_dir, report);
  _exit(0);
}

}  // namespace

ProcessIds processes_of_run(const std::string& run_dir, const ProcessIds& recorded) {
  ProcessIds all;
  ProcessIds found;
  std::multimap<int, int> children;
  for (int pid : list_proc_pids()) {
    std::optional<ProcStat> stat = read_proc_stat(pid);
    if (pid == getpid() || !stat || stat->dead()) continue;
    all.emplace(pid, stat->starttime);
    children.emplace(stat->ppid, pid);
    auto it = recorded.find(pid);
    if (it != recorded.end() && it->second == stat->starttime) {
      found.emplace(pid, stat->starttime);
      continue;
    }
    std::optional<EnvironText> environ = read_proc_environ(pid);
    const char* value = environ ? environ->find(common::kRunDirEnv) : nullptr;
    if (value != nullptr && value == run_dir) found.emplace(pid, stat->starttime);
  }
  std::vector<int> queue;
  for (const auto& entry : found) queue.push_back(entry.first);
  while (!queue.empty()) {
    int pid = queue.back();
    queue.pop_back();
    auto [first, last] = children.equal_range(pid);
    for (auto it = first; it != last; ++it) {
      if (found.emplace(it->second, all[it->second]).second) queue.push_back(it->second);
    }
  }
  return found;
}

JobGuard::JobGuard(const std::string& run_dir, bool announce, const std::function<void()>& report) {
  int fds[2];
  int pids[2];  // the child tells the guard's pid
  if (pipe2(fds, O_CLOEXEC) != 0 || pipe2(pids, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot start the job's guard: ") + strerror(errno));
  }
  pid_t child = fork();
  if (child == 0) {
    // The guard is the child's child, adopted by init (or the nearest subreaper) once the child
    // exits: not a child of traindoc's.
    close(fds[1]);
    close(pids[0]);
    pid_t guard = fork();
    if (guard == 0) {
      close(pids[1]);
      guard_main(fds[0], run_dir, announce, report);
    }
    ssize_t written = write(pids[1], &guard, sizeof(guard));
    _exit(written == sizeof(guard) ? 0 : 1);
  }
  close(fds[0]);
  close(pids[1]);
  if (child < 0) {
    close(fds[1]);
    close(pids[0]);
    throw std::runtime_error(std::string("cannot start the job's guard: ") + strerror(errno));
  }
  if (read(pids[0], &m_pid, sizeof(m_pid)) != sizeof(m_pid)) m_pid = -1;
  close(pids[0]);
  waitpid(child, nullptr, 0);
  m_fd = fds[1];
}

JobGuard::~JobGuard() {
  if (m_fd >= 0) close(m_fd);
}

void JobGuard::release() {
  if (m_fd < 0) return;
  ssize_t written = write(m_fd, "r", 1);
  (void)written;  // a guard that is gone has nothing to release
  close(m_fd);
  m_fd = -1;
}

}  // namespace traindoc::supervisor
