// The supervisor's main loop, one object of the supervisor's main thread: its state and its steps.
// Its definitions are split by concern: supervisor.cpp (the loop, sampling, storing),
// loop_agent.cpp (what the agent tells), loop_watches.cpp (stops, idle spells, time limits,
// collective issues). Private to the supervisor room.
#pragma once

#include <sys/signalfd.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "store/evidence.h"
#include "store/store_writer.h"
#include "supervisor/agent_reader.h"
#include "supervisor/collective_checker.h"
#include "supervisor/crash_capture.h"
#include "supervisor/disk_reserve.h"
#include "supervisor/error_files.h"
#include "supervisor/gpu/gpu_sampler.h"
#include "supervisor/idle_watch.h"
#include "supervisor/launcher.h"
#include "supervisor/log_tap.h"
#include "supervisor/output_files.h"
#include "supervisor/proc/environ_text.h"
#include "supervisor/proc/growth_pacer.h"
#include "supervisor/proc/host_sampler.h"
#include "supervisor/proc/job_cgroups.h"
#include "supervisor/proc/kernel_log.h"
#include "supervisor/proc/proc_sampler.h"
#include "supervisor/proc/smaps_pacer.h"
#include "supervisor/process_table.h"
#include "supervisor/stack_dumps.h"
#include "supervisor/stack_requests.h"
#include "supervisor/stop_forwarding.h"
#include "supervisor/supervisor.h"
#include "supervisor/symbolizer.h"
#include "supervisor/time_limit_watch.h"
#include "supervisor/trial_watch.h"

namespace traindoc::supervisor {

// The job's processes as the stack requests reach them.
class JobStacks final : public StackSource {
 public:
  JobStacks(const std::string& run_dir, const ProcessTable& table, Symbolizer& symbolizer)
      : m_run_dir(run_dir), m_table(table), m_symbolizer(symbolizer) {}

  DumpRequest ask(int pid, bool stopping) override {
    return request_fresh_dump(m_run_dir, pid, m_table.start_of(pid), stopping);
  }
  std::optional<std::string> read(int pid) override {
    return read_stack_dump(m_run_dir, pid, m_symbolizer);
  }
  std::string spared(int pid, const std::string& call) const override {
    return spared_stack(call, m_table.in_init_process_group(pid));
  }

 private:
  const std::string& m_run_dir;
  const ProcessTable& m_table;
  Symbolizer& m_symbolizer;
};

// The loop of one supervised run (supervise() makes one and runs it).
class Loop {
 public:
  explicit Loop(const SupervisorOptions& options);

  store::RunInfo run();

 private:
  int64_t stall_ns() const { return static_cast<int64_t>(m_options.stall_seconds * 1e9); }
  void open_agent();
  void open_gpu();
  // Returns the GPU memory the job's processes hold.
  uint64_t sample_gpu(int64_t t, bool slow);
  void record_cpu();
  void run_preflight();
  // Launches the job, its start recorded in run.db.
  void start_job();
  // Polls the signals and the tick timer until the job's root ends.
  void watch_job(LogTap& tap);
  void take_signals(int signals);
  void tick(LogTap& tap);
  // The job's last output, once its root ended.
  void drain_output(LogTap& tap);
  // Returns how many processes registered.
  size_t read_agent();
  void take_record(const AgentRecord& record);
  // What the agent could not see or keep, when that changed.
  void report_agent_losses();
  void record_crash(AgentCrash& crash);
  void symbolize_crash(store::Crash& crash);
  // What a walk reads besides each process's stat and status.
  enum class Walk {
    kRegular,  // at the interval: the GPUs too
    kSlow,     // every slow_every intervals: descriptors too
    kFast,     // between intervals while memory grows fast: memory and the host only
    kFinal,    // at the end: what is left, nothing slow
  };
  IdleWatch::Work walk_and_sample(Walk walk);
  // The job's memory cgroups now (`host`: traindoc's own, just read), and what the kernel log
  // told of OOM kills of the job's processes since the last look.
  void sample_cgroups(int64_t t_ns, bool with_host);
  void read_kernel_log();
  void reap_children();
  void forward(const signalfd_siginfo& info);
  // At the first stop: what a hung job was doing when its user gave up on it.
  void ask_stop_stacks(bool from_terminal);
  void store_changes();
  // When run.db stopped being written, at the end: the reserve given back, writing resumed, and
  // what is missing said in run.db itself.
  void recover_store(bool last_try);
  void finish();
  void event(store::EventKind kind, int pid, const std::string& text,
             std::optional<int64_t> a = std::nullopt, std::optional<int64_t> b = std::nullopt);
  void record_cuda_env(int pid, uint64_t start_ticks, const EnvironText& environ);
  void check_collectives(bool final = false);
  std::string note_stdin_waits(const std::vector<int>& pids);
  // The stack requests (stack_requests.h), as the stall watch's checks ask them.
  DumpRequest request_fresh_dump(int pid, bool stopping) { return m_job_stacks.ask(pid, stopping); }
  std::string spared(int pid, const std::string& call) const {
    return m_job_stacks.spared(pid, call);
  }
  void ask_stacks(store::EventKind kind, const std::vector<int>& pids) {
    m_stacks.ask(kind, pids, common::realtime_ns());
  }
  void watch_idle(int64_t t_ns, const IdleWatch::Work& work, uint64_t output_bytes);
  void watch_time_limits(int64_t t_ns);
  uint64_t store_log_streams(const LogTap& tap);
  void report_issue(store::CollectiveIssue& issue, const std::string& prompt);
  // The checker's calls for run.db (`all`: at the end), and the ends of those stored open.
  void store_calls(bool all);
  void abort_job(const store::CollectiveIssue& issue);
  // `traindoc fit`: the trial has run its steps.
  void end_trial(TrialWatch::Due why);
  // SIGTERM to every live process of the job, SIGKILL to what is left kAbortGraceNs later;
  // returns how many were sent it.
  int end_job();

  // An issue of the stall watch waiting for the stacks it asked for.
  struct PendingIssue {
    FoundIssue found;
    int64_t deadline_ns = 0;
    std::string prompt;  // "; pid N (comm) waits for input ...", told with the issue
  };

  const SupervisorOptions& m_options;
  store::StoreWriter m_store;
  DiskReserve m_reserve;
  int64_t m_store_failed_ns = 0;  // when run.db stopped being written (0: it never did)
  OutputFilesReader m_outputs;    // the files job processes write their output to
  store::RunInfo m_run;
  std::unique_ptr<AgentReader> m_agent;
  ProcessTable m_table;
  ProcSampler m_sampler;
  HostSampler m_host;
  JobCgroups m_cgroups;
  KernelLog m_kernel_log;
  GpuSampler m_gpu;
  Symbolizer m_symbolizer;
  LaunchedJob m_job;
  bool m_root_done = false;
  uint64_t m_reported_no_slot = 0;
  uint64_t m_reported_dropped = 0;
  uint64_t m_reported_refused = 0;
  uint64_t m_reported_kernel_lost = 0;
  // The newest step count of each (pid, start_ticks, kind) since the last commit: at most one
  // row per sampling interval each, however fast the job steps.
  std::map<std::tuple<int, uint64_t, store::StepKind>, store::StepSample> m_steps;
  CollectiveChecker m_checker;
  ErrorFiles m_error_files;
  std::vector<PendingIssue> m_pending_issues;
  int64_t m_kill_at_ns = 0;  // --on-mismatch abort: SIGKILL what is left then
  SmapsPacer m_smaps;        // when each process's smaps_rollup is read
  GrowthPacer m_growth;      // walks between the intervals while memory grows fast
  JobStacks m_job_stacks;
  StackRequests m_stacks;  // at a stop, an idle spell, a time limit, a rank missing
  StopForwarding m_stops;
  TimeLimitWatch m_time_limits;
  IdleWatch m_idle;
  TrialWatch m_trial;
  // The timer's ticks and the samples taken, and when the samples were last thinned.
  uint64_t m_ticks = 0;
  uint64_t m_samples = 0;
  uint64_t m_walked_tick = 0;  // the tick of the last walk
  int64_t m_downsampled_ns = 0;
};

}  // namespace traindoc::supervisor
