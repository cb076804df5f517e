// The supervisor's main loop (loop.h): the job's start, the poll, sampling, storing and the end.
// Supervisor process, main thread. One poll over a signalfd and a 100 ms timer: agent records are
// read every tick, processes and the host are sampled every interval, and run.db is committed
// after each sample.
#include "supervisor/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "common/clock.h"
#include "supervisor/loop.h"
#include "supervisor/preflight/preflight_probe.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/redact.h"

namespace traindoc::supervisor {
namespace {

constexpr int kTickMs = 100;
constexpr int64_t kDownsampleEveryNs = 60'000'000'000;
constexpr int kOutputGraceMs = 500;
constexpr size_t kLastLines = 100;  // of each stream, kept in run.db for the report
// Enough for the run's end, the last output lines and the report files after a full disk.
constexpr uint64_t kReserveBytes = uint64_t{4} << 20;
// At the end, polls of the agents' slots while each brings processes in (a chain of forks gone
// before any walk is vouched for one parent at a time).
constexpr int kFinalPolls = 8;
// The smaps_rollup reads' share of one core at the default 1 s interval, half of traindoc's
// whole budget; a shorter --interval asks for more samples and gets a larger share in proportion.
constexpr double kSmapsBudget = 0.005;
// The walks between intervals while memory grows fast: at most this share of one core. They
// come only while a process's memory grows by 16 MiB a second or more: start-up and loading
// for seconds, or a leak that fills most hosts within the hour.
constexpr double kFastWalkBudget = 0.01;

int64_t thread_cpu_ns() {
  return common::clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

store::RunInfo new_run(const SupervisorOptions& options) {
  store::RunInfo run;
  run.command = redact_arguments(options.command);
  run.hostname = host_name();
  run.version = TRAINDOC_VERSION;
  run.supervisor_pid = getpid();
  run.start_ns = common::realtime_ns();
  return run;
}

}  // namespace

Loop::Loop(const SupervisorOptions& options)
    : m_options(options),
      m_store(store::StoreWriter::open(options.run_dir + "/run.db")),
      m_reserve(options.run_dir + "/" + common::kReserveFileName, kReserveBytes),
      m_run(new_run(options)),
      m_gpu(options.nvml_library),
      m_checker({.stall_ns = stall_ns()}),
      m_smaps(int64_t{options.interval_ms} * options.slow_every * 1'000'000,
              int64_t{options.interval_ms} * 500'000, kSmapsBudget * 1000.0 / options.interval_ms),
      m_growth(int64_t{options.interval_ms} * 1'000'000, int64_t{kTickMs} * 1'000'000,
               kFastWalkBudget),
      m_job_stacks(options.run_dir, m_table, m_symbolizer),
      m_stacks(m_job_stacks, [this](store::EventKind kind, int pid,
                                    const std::string& text) { event(kind, pid, text); }),
      m_stops(getpid()),
      m_time_limits(m_run.start_ns),
      m_idle(stall_ns(), int64_t{options.interval_ms} * 1'000'000),
      m_trial(options.trial_steps, static_cast<int64_t>(options.trial_flat_s * 1e9)) {}

void Loop::event(store::EventKind kind, int pid, const std::string& text, std::optional<int64_t> a,
                 std::optional<int64_t> b) {
  m_store.add_event({common::realtime_ns(), kind, pid, text, a, b});
}

// The CPU's feature flags, to tell an illegal instruction from a missing instruction set.
void Loop::record_cpu() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.starts_with("flags")) {
      event(store::EventKind::kHostCpu, 0, line.substr(line.find(':') + 2));
      return;
    }
  }
}

// The devices once, before the job starts (the driver's events count from registration on).
void Loop::open_gpu() {
  m_store.write_gpu_status(m_gpu.loaded(), m_gpu.status(), m_gpu.driver_devices());
  for (const store::GpuDevice& device : m_gpu.devices()) m_store.write_gpu_device(device);
}

// The traps of this machine and command, before the job starts (the GPUs' processes are all
// outside it then). Never the cause: whatever fails here is recorded and the job starts as ever.
void Loop::run_preflight() {
  if (!m_options.preflight) return;
  try {
    int64_t t = common::realtime_ns();
    m_store.write_preflight(t, m_options.preflight(probe_preflight(m_options.command, m_gpu)));
  } catch (const std::exception& error) {
    event(store::EventKind::kPreflightFailed, 0, error.what());
  }
}

uint64_t Loop::sample_gpu(int64_t t, bool slow) {
  if (!m_gpu.loaded()) return 0;
  std::vector<int> job = m_table.live_pids();
  GpuRound round = m_gpu.sample(t, slow, job);
  m_store.add_gpu_samples(round.samples);
  m_store.add_gpu_process_samples(round.processes);
  for (const store::GpuProcess& process : round.new_processes) m_store.write_gpu_process(process);
  for (const store::GpuEvent& event : round.events) m_store.add_gpu_event(event);
  uint64_t used = 0;
  for (const store::GpuProcessSample& sample : round.processes) {
    if (std::find(job.begin(), job.end(), sample.pid) != job.end()) {
      used += sample.used_bytes.value_or(0);
    }
  }
  return used;
}

// Walks the tree below the supervisor (the job's root and every orphan it adopted as subreaper).
// Returns what the job's processes did since the last regular walk, for the idle watch (nothing
// for a fast one: the watch measures CPU over whole intervals).
IdleWatch::Work Loop::walk_and_sample(Walk walk) {
  int64_t t = common::realtime_ns();
  int64_t walk_cpu = thread_cpu_ns();
  int64_t smaps_cpu = 0;  // paced on its own (SmapsPacer): not a cost of walking faster
  bool final = walk == Walk::kFinal;
  std::set<int> alive;
  std::vector<int> queue = m_sampler.children_of(getpid());
  std::vector<store::ProcSample> samples;
  while (!queue.empty()) {
    int pid = queue.back();
    queue.pop_back();
    if (pid == m_options.guard_pid || !alive.insert(pid).second) continue;
    std::optional<ProcSnapshot> snapshot = m_sampler.sample(pid, false);
    if (!snapshot) continue;
    const ProcStat& stat = snapshot->stat;
    if (!final && !stat.dead()) {
      if (walk == Walk::kSlow) m_sampler.add_descriptors(pid, snapshot->sample);
      if (m_smaps.due(pid, stat.starttime, t)) {
        int64_t cpu = thread_cpu_ns();
        m_sampler.add_smaps(pid, snapshot->sample);
        smaps_cpu += thread_cpu_ns() - cpu;
        m_smaps.read(pid, stat.starttime, t, thread_cpu_ns() - cpu);
      }
    }
    if (!stat.dead()) {
      if (auto cgroup = m_cgroups.observe(pid, stat.starttime, t)) {
        m_store.add_process_cgroup(*cgroup);
      }
    }
    if (m_table.seen_alive(pid, stat.ppid, stat.starttime, t, stat.start_stack)) {
      std::vector<std::string> argv = read_proc_cmdline(pid).value_or(std::vector<std::string>{});
      std::optional<EnvironText> environ = read_proc_environ(pid);
      std::string cmdline = join_cmdline(argv);
      common::RankEnv rank_env = environ ? environ->rank_env() : common::RankEnv{};
      m_table.set_details(pid, stat.starttime, argv.empty() ? stat.comm : argv[0], cmdline,
                          rank_env);
      if (rank_env.spans_machines()) m_checker.job_spans_machines();
      m_time_limits.process_seen(pid, m_sampler.start_realtime_ns(stat.starttime), cmdline);
      if (environ) record_cuda_env(pid, stat.starttime, *environ);
      if (environ && m_options.error_files) {
        m_error_files.process_seen(
            pid, stat.starttime, stat.ppid,
            rank_env.rank >= 0 ? std::optional<int>(rank_env.rank) : std::nullopt,
            environ->find("TORCHELASTIC_ERROR_FILE"), t);
      }
    }
    if (stat.state == 'Z') {
      if (stat.exit_code) m_table.ended(pid, *stat.exit_code, store::EndSource::kZombie, t);
      continue;
    }
    for (int child : m_sampler.children_of(pid)) queue.push_back(child);
    snapshot->sample.t_ns = t;
    samples.push_back(snapshot->sample);
  }
  m_table.sweep(alive, t, final);
  m_smaps.retain(alive);
  IdleWatch::Work work = walk == Walk::kFast ? IdleWatch::Work{} : m_idle.work_of(samples, alive);
  m_store.add_proc_samples(samples);
  store::HostSample host = m_host.sample();
  host.t_ns = t;
  m_smaps.set_pressure(short_of_memory(host));
  m_store.add_host_sample(host);
  // Before the processes gone are forgotten: the cgroup of one that just ended is read too.
  sample_cgroups(t, true);
  m_cgroups.retain(alive);
  if (walk != Walk::kFast) {
    uint64_t gpu_bytes = sample_gpu(t, walk != Walk::kRegular);
    if (!final) m_trial.walked(t, work.rss_bytes + gpu_bytes, work.busiest_cpu_s);
  }
  m_growth.walked(t, samples, thread_cpu_ns() - walk_cpu - smaps_cpu);
  return work;
}

void Loop::sample_cgroups(int64_t t_ns, bool with_host) {
  m_store.add_cgroup_samples(
      with_host ? m_cgroups.sample(t_ns, m_host.cgroup_dir(), &m_host.last_cgroup_reading())
                : m_cgroups.sample(t_ns));
}

void Loop::read_kernel_log() {
  for (const store::KernelOomKill& kill : m_kernel_log.poll()) {
    // Only the job's: the log tells of every process on the machine.
    if (m_table.knows(kill.pid)) m_store.add_kernel_oom_kill(kill);
  }
  // A kill among the lost records is not known: the analysis must not read their absence as
  // "no kill", so the count and when they were written are kept; the words are the analysis's.
  if (uint64_t lost = m_kernel_log.records_lost(); lost != m_reported_kernel_lost) {
    m_reported_kernel_lost = lost;
    event(store::EventKind::kKernelLogRecordsLost, 0, "", static_cast<int64_t>(lost),
          m_kernel_log.lost_after_ns());
  }
}

void Loop::reap_children() {
  while (true) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == m_options.guard_pid) continue;
    int64_t t = common::realtime_ns();
    m_table.ended(pid, status, store::EndSource::kSupervisor, t);
    if (pid == m_job.pid) {
      m_root_done = true;
      m_run.end_ns = t;
      if (WIFSIGNALED(status)) {
        m_run.exit_signal = WTERMSIG(status);
      } else {
        m_run.exit_code = WEXITSTATUS(status);
      }
    }
  }
}

// Stores each output stream's state; returns the bytes the job has written so far.
uint64_t Loop::store_log_streams(const LogTap& tap) {
  uint64_t bytes = 0;
  for (const store::LogStream& stream : tap.streams()) {
    m_store.write_log_stream(stream);
    bytes += stream.bytes;
  }
  return bytes;
}

void Loop::store_changes() {
  for (const store::ProcessRecord& record : m_table.take_changed()) m_store.write_process(record);
  std::vector<store::StepSample> steps;
  for (const auto& [key, step] : m_steps) steps.push_back(step);
  m_store.add_step_samples(steps);
  m_steps.clear();
  m_store.flush();
  // The job runs on, passing its output and reaped as ever; only storing stops.
  if (m_store.failure() && m_store_failed_ns == 0) m_store_failed_ns = common::realtime_ns();
}

void Loop::recover_store(bool last_try) {
  if (!m_store.failure()) return;
  if (m_store_failed_ns == 0) m_store_failed_ns = common::realtime_ns();
  std::string error = *m_store.failure();
  m_reserve.release();
  m_store.resume();
  m_table.mark_all_changed();
  double after_s = static_cast<double>(m_store_failed_ns - m_run.start_ns) / 1e9;
  event(store::EventKind::kStoreFailed, 0,
        fmt::format("run.db could not be written from {:.1f} s into the run ({}): samples, "
                    "records and output lines of the time after are missing{}",
                    after_s, error, last_try ? ", and all but the run's end" : ""));
  if (last_try) {
    m_store.write_run(m_run);
    m_store.flush();
  }
}

void Loop::store_calls(bool all) {
  m_store.add_collectives(m_checker.take_calls(all));
  m_store.end_collectives(m_checker.take_late_ends());
}

void Loop::finish() {
  reap_children();
  read_agent();
  // A slot that waits for a vouch may get it from what the poll before told (a reap, its
  // parent's registration): polled again while that brings processes in.
  for (int polls = 0; polls < kFinalPolls && read_agent() > 0; ++polls) {
  }
  check_collectives(true);
  read_kernel_log();
  m_stacks.collect(common::realtime_ns(), true);
  store_calls(true);
  // Processes still alive stay "still running"; those gone without a trace vanished.
  walk_and_sample(Walk::kFinal);
  m_store.write_run(m_run);
  // The process-list layout is known once a list had two entries.
  m_store.write_gpu_status(m_gpu.loaded(), m_gpu.status(), m_gpu.driver_devices());
  store_changes();
  recover_store(true);  // full again: the run's end at least
}

void Loop::start_job() {
  // Orphans of the job (double forks, a launcher that died first) become our children.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  open_agent();
  open_gpu();
  record_cpu();
  run_preflight();
  if (!m_kernel_log.readable())
    event(store::EventKind::kKernelLogUnavailable, 0, m_kernel_log.note());
  m_store.write_run(m_run);
  m_store.flush();

  // NVML's start can take seconds. A trial of traindoc fit starts its job anyway, which is passed
  // the stop at once: fit learns of it from the trial, and ends with what it found.
  if (m_options.trial_steps == 0) end_if_stopped_before_launch();
  LaunchSpec spec{m_options.command,
                  m_options.run_dir,
                  m_agent ? m_options.agent_path : "",
                  m_agent ? m_options.python_path : "",
                  m_agent ? m_options.audit_path : "",
                  m_options.error_files,
                  m_options.memory_history_entries};
  try {
    m_job = launch(spec);
  } catch (const LaunchError& error) {
    m_run.exec_error = error.message;
    m_run.exit_code = error.exit_status;
    m_run.end_ns = common::realtime_ns();
    m_store.write_run(m_run);
    m_store.flush();
    if (m_agent) m_agent->remove_file();  // no process of the job ever wrote it
    throw;
  }
  m_run.root_pid = m_job.pid;
  m_store.write_run(m_run);
}

void Loop::watch_job(LogTap& tap) {
  sigset_t set;
  pthread_sigmask(SIG_BLOCK, nullptr, &set);
  // Non-blocking: a signal that poll saw and another thread took leaves nothing to wait for.
  int signals = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  int timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
  itimerspec tick_spec{{0, long{kTickMs} * 1'000'000}, {0, 1'000'000}};
  timerfd_settime(timer, 0, &tick_spec, nullptr);
  if (signals < 0 || timer < 0) throw std::runtime_error("cannot set up the event loop");

  m_downsampled_ns = common::realtime_ns();
  reap_children();
  while (!m_root_done) {
    pollfd fds[2] = {{signals, POLLIN, 0}, {timer, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) take_signals(signals);
    if (m_root_done) break;
    uint64_t expirations = 0;
    if ((fds[1].revents & POLLIN) && read(timer, &expirations, sizeof(expirations)) >= 0) {
      tick(tap);
    }
  }
  close(timer);
  close(signals);
}

void Loop::take_signals(int signals) {
  signalfd_siginfo info{};
  while (read(signals, &info, sizeof(info)) == sizeof(info)) {
    if (info.ssi_signo == SIGCHLD) {
      reap_children();
    } else if (info.ssi_signo == SIGWINCH) {
      copy_window_size(m_job);
    } else {
      forward(info);
    }
    if (m_root_done) return;
  }
}

void Loop::tick(LogTap& tap) {
  reap_children();  // a SIGCHLD that a library's own thread took (one that unblocks all)
  if (m_root_done) return;
  read_agent();
  if (TrialWatch::Due due = m_trial.due(); due != TrialWatch::Due::kNo) end_trial(due);
  for (auto [pid, status] : m_error_files.find_zombies(common::realtime_ns())) {
    m_table.ended(pid, status, store::EndSource::kZombie, common::realtime_ns());
  }
  check_collectives();
  m_error_files.update();
  read_kernel_log();
  if (!m_time_limits.empty()) watch_time_limits(common::realtime_ns());
  if (!m_stacks.empty()) m_stacks.collect(common::realtime_ns(), false);
  // Every tick: a fork-heavy job's processes must not fill the socket's backlog.
  for (OutputFile& file : m_outputs.take()) tap.add_file(std::move(file));
  auto ticks_per_sample = static_cast<uint64_t>(std::max(1, m_options.interval_ms / kTickMs));
  if (++m_ticks % ticks_per_sample != 0) {
    // Between the intervals while memory grows fast: its samples, committed like the others.
    auto fast_ticks = static_cast<uint64_t>(m_growth.period_ns(common::realtime_ns()) /
                                            (int64_t{kTickMs} * 1'000'000));
    if (fast_ticks >= ticks_per_sample ||
        m_ticks - m_walked_tick < std::max<uint64_t>(1, fast_ticks)) {
      return;
    }
    m_walked_tick = m_ticks;
    walk_and_sample(Walk::kFast);
    store_changes();
    return;
  }
  m_walked_tick = m_ticks;
  bool slow = ++m_samples % static_cast<uint64_t>(m_options.slow_every) == 1;
  IdleWatch::Work work = walk_and_sample(slow ? Walk::kSlow : Walk::kRegular);
  watch_idle(common::realtime_ns(), work, store_log_streams(tap));
  m_store.add_log_lines(tap.take_lines());
  store_changes();
  if (common::realtime_ns() - m_downsampled_ns > kDownsampleEveryNs) {
    m_downsampled_ns = common::realtime_ns();
    m_store.downsample(m_downsampled_ns);
  }
}

void Loop::drain_output(LogTap& tap) {
  for (OutputFile& file : m_outputs.take()) tap.add_file(std::move(file));
  tap.finish(kOutputGraceMs);
  // What traindoc says at the end starts on a line of its own.
  if (m_options.announce && tap.stderr_mid_line()) fputc('\n', stderr);
  uint64_t output_bytes = store_log_streams(tap);
  // Output after an idle spell, up to the end (a prompt answered, then a quick finish): the job
  // moved again, though no walk saw it.
  if (m_idle.printed_while_idle(output_bytes)) watch_idle(common::realtime_ns(), {}, output_bytes);
  m_store.add_log_lines(tap.take_lines());
  m_store.add_log_lines(tap.last_lines(kLastLines, common::realtime_ns()));
}

store::RunInfo Loop::run() {
  start_job();
  LogTap tap(m_options.run_dir, m_job);
  watch_job(tap);
  recover_store(false);
  drain_output(tap);
  finish();
  if (m_agent) m_agent->remove_file();
  return m_run;
}

store::RunInfo supervise(const SupervisorOptions& options) {
  // Before anything starts a thread (NVML starts one at init): a thread inherits the mask, and a
  // signal the kernel gives a thread that does not block it never reaches the signalfd.
  block_supervisor_signals();
  Loop loop(options);
  return loop.run();
}

}  // namespace traindoc::supervisor
