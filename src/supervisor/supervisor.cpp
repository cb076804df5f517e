// The supervisor's main loop. Supervisor process, main thread.
// One poll over a signalfd and a 100 ms timer: agent records are read every tick, processes and
// the host are sampled every interval, and run.db is committed after each sample.
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
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "common/clock.h"
#include "store/collective_words.h"
#include "store/forwarded_signal.h"
#include "store/store_writer.h"
#include "supervisor/agent_reader.h"
#include "supervisor/collective_checker.h"
#include "supervisor/collective_text.h"
#include "supervisor/crash_capture.h"
#include "supervisor/disk_reserve.h"
#include "supervisor/gpu/gpu_sampler.h"
#include "supervisor/idle_watch.h"
#include "supervisor/launcher.h"
#include "supervisor/log_tap.h"
#include "supervisor/proc/environ_text.h"
#include "supervisor/proc/host_sampler.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/proc/proc_sampler.h"
#include "supervisor/proc/smaps_pacer.h"
#include "supervisor/process_table.h"
#include "supervisor/redact.h"
#include "supervisor/stack_dumps.h"
#include "supervisor/stack_requests.h"
#include "supervisor/stop_forwarding.h"
#include "supervisor/symbolizer.h"
#include "supervisor/time_limit_watch.h"

namespace traindoc::supervisor {
namespace {

constexpr int kTickMs = 100;
constexpr int64_t kDownsampleEveryNs = 60'000'000'000;
constexpr int kOutputGraceMs = 500;
constexpr size_t kLastLines = 100;  // of each stream, kept in run.db for the report
// Enough for the run's end, the last output lines and the report files after a full disk.
constexpr uint64_t kReserveBytes = uint64_t{4} << 20;
// How long a stop signal waits for the stacks asked for at it before it is passed on (SIGTERM
// ends a process before it can write).
constexpr int64_t kStopStacksHoldNs = 500'000'000;
// At the end, polls of the agents' slots while each brings processes in (a chain of forks gone
// before any walk is vouched for one parent at a time).
constexpr int kFinalPolls = 8;
// A stalled issue waits this long for the stacks it asked for.
constexpr int64_t kStackWaitNs = 1'500'000'000;
// --on-mismatch abort: SIGTERM, then SIGKILL to what is left after this.
constexpr int64_t kAbortGraceNs = 3'000'000'000;
// The smaps_rollup reads' share of one core at the default 1 s interval, half of traindoc's
// whole budget; a shorter --interval asks for more samples and gets a larger share in proportion.
constexpr double kSmapsBudget = 0.005;

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Whom a kill() call's target names: "pid 4242", "process group 4240", "its own process group",
// "every process it may signal".
std::string kill_target(int64_t target) {
  if (target > 0) return "pid " + std::to_string(target);
  if (target == 0) return "its own process group";
  if (target == -1) return "every process it may signal";
  return "process group " + std::to_string(-target);
}

// The first 16 bytes of a thread's name that a kThreadDied record carries, NUL-padded.
std::string thread_name(const AgentRecord& record) {
  std::string out;
  for (int64_t word : {record.a, record.b}) {
    for (int i = 0; i < 8; ++i) {
      char c = static_cast<char>((static_cast<uint64_t>(word) >> (8 * i)) & 0xff);
      if (c == '\0') return out;
      out += c;
    }
  }
  return out;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

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

store::RunInfo new_run(const SupervisorOptions& options) {
  store::RunInfo run;
  run.command = redact_arguments(options.command);
  run.hostname = host_name();
  run.version = TRAINDOC_VERSION;
  run.supervisor_pid = getpid();
  run.start_ns = common::realtime_ns();
  return run;
}

class Loop {
 public:
  explicit Loop(const SupervisorOptions& options)
      : m_options(options),
        m_store(store::StoreWriter::open(options.run_dir + "/run.db")),
        m_reserve(options.run_dir + "/" + common::kReserveFileName, kReserveBytes),
        m_run(new_run(options)),
        m_gpu(options.nvml_library),
        m_checker({.stall_ns = stall_ns()}),
        m_smaps(int64_t{options.interval_ms} * options.slow_every * 1'000'000,
                int64_t{options.interval_ms} * 500'000,
                kSmapsBudget * 1000.0 / options.interval_ms),
        m_job_stacks(options.run_dir, m_table, m_symbolizer),
        m_stacks(m_job_stacks, [this](store::EventKind kind, int pid,
                                      const std::string& text) { event(kind, pid, text); }),
        m_stops(getpid()),
        m_time_limits(m_run.start_ns),
        m_idle(stall_ns(), int64_t{options.interval_ms} * 1'000'000) {}

  store::RunInfo run();

 private:
  int64_t stall_ns() const { return static_cast<int64_t>(m_options.stall_seconds * 1e9); }
  void open_agent();
  void open_gpu();
  void sample_gpu(int64_t t, bool slow);
  void record_cpu();
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
  double walk_and_sample(bool slow, bool final = false);
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
  void watch_idle(int64_t t_ns, double busiest_cpu_s, uint64_t output_bytes);
  void watch_time_limits(int64_t t_ns);
  uint64_t store_log_streams(const LogTap& tap);
  void report_issue(store::CollectiveIssue& issue, const std::string& prompt);
  // The checker's calls for run.db (`all`: at the end), and the ends of those stored open.
  void store_calls(bool all);
  void abort_job(const store::CollectiveIssue& issue);

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
  GpuSampler m_gpu;
  Symbolizer m_symbolizer;
  LaunchedJob m_job;
  bool m_root_done = false;
  uint64_t m_reported_no_slot = 0;
  uint64_t m_reported_dropped = 0;
  uint64_t m_reported_refused = 0;
  // The newest step count of each (pid, start_ticks, kind) since the last commit: at most one
  // row per sampling interval each, however fast the job steps.
  std::map<std::tuple<int, uint64_t, store::StepKind>, store::StepSample> m_steps;
  CollectiveChecker m_checker;
  std::vector<PendingIssue> m_pending_issues;
  int64_t m_kill_at_ns = 0;  // --on-mismatch abort: SIGKILL what is left then
  SmapsPacer m_smaps;        // when each process's smaps_rollup is read
  JobStacks m_job_stacks;
  StackRequests m_stacks;  // at a stop, an idle spell, a time limit, a rank missing
  StopForwarding m_stops;
  TimeLimitWatch m_time_limits;
  IdleWatch m_idle;
  // The timer's ticks and the samples taken, and when the samples were last thinned.
  uint64_t m_ticks = 0;
  uint64_t m_samples = 0;
  int64_t m_downsampled_ns = 0;
};

void Loop::event(store::EventKind kind, int pid, const std::string& text, std::optional<int64_t> a,
                 std::optional<int64_t> b) {
  m_store.add_event({common::realtime_ns(), kind, pid, text, a, b});
}

// How the process's CUDA device numbers map to the GPUs: kept with or without NVML, since a job
// that set CUDA_VISIBLE_DEVICES is a GPU job whose missing GPU evidence the report names.
// The allocator's settings go with them: the fragmentation advice depends on what is already set.
void Loop::record_cuda_env(int pid, uint64_t start_ticks, const EnvironText& environ) {
  const char* visible = environ.find("CUDA_VISIBLE_DEVICES");
  const char* order = environ.find("CUDA_DEVICE_ORDER");
  const char* alloc_conf = environ.find("PYTORCH_CUDA_ALLOC_CONF");
  if (alloc_conf == nullptr) alloc_conf = environ.find("PYTORCH_ALLOC_CONF");
  if (visible == nullptr && order == nullptr && alloc_conf == nullptr && !m_gpu.loaded()) return;
  store::CudaEnv env{pid, start_ticks, std::nullopt, order ? order : "", std::nullopt};
  if (visible != nullptr) env.visible_devices = visible;
  if (alloc_conf != nullptr) env.alloc_conf = alloc_conf;
  m_store.write_cuda_env(env);
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

void Loop::open_agent() {
  if (m_options.agent_path.empty()) {
    event(store::EventKind::kAgentUnavailable, 0,
          "the agent was not injected: only /proc evidence");
    return;
  }
  try {
    m_agent = std::make_unique<AgentReader>(m_options.run_dir, m_outputs.socket_name());
  } catch (const std::exception& e) {
    event(store::EventKind::kAgentUnavailable, 0,
          std::string("the agent could not start: ") + e.what());
  }
}

// The devices once, before the job starts (the driver's events count from registration on).
void Loop::open_gpu() {
  m_store.write_gpu_status(m_gpu.loaded(), m_gpu.status(), m_gpu.driver_devices());
  for (const store::GpuDevice& device : m_gpu.devices()) m_store.write_gpu_device(device);
}

void Loop::sample_gpu(int64_t t, bool slow) {
  if (!m_gpu.loaded()) return;
  GpuRound round = m_gpu.sample(t, slow, m_table.live_pids());
  m_store.add_gpu_samples(round.samples);
  m_store.add_gpu_process_samples(round.processes);
  for (const store::GpuProcess& process : round.new_processes) m_store.write_gpu_process(process);
  for (const store::GpuEvent& event : round.events) m_store.add_gpu_event(event);
}

// The crashed process waits in its handler until released: take what only it can give, let
// it die, commit the raw record at once. Symbolizing comes after (symbolize_crash), once every
// crashed process of the poll is released: a sibling that crashed too may be ended meanwhile.
void Loop::record_crash(AgentCrash& raw) {
  complete_crash(raw, m_options.run_dir, getpid());
  store::Crash& crash = raw.crash;
  // Its last sample, and the host's at that moment (/dev/shm for a SIGBUS): a process that
  // crashes early may never have been sampled.
  int64_t t = common::realtime_ns();
  if (std::optional<ProcSnapshot> snapshot = m_sampler.sample(crash.pid, true)) {
    snapshot->sample.t_ns = t;
    m_store.add_proc_samples({snapshot->sample});
  }
  store::HostSample host = m_host.sample();
  host.t_ns = t;
  m_store.add_host_sample(host);
  m_agent->release_crash(raw.slot);
  m_store.write_crash(crash);
  m_store.flush();
}

void Loop::symbolize_crash(store::Crash& crash) {
  m_symbolizer.symbolize_crash(crash);
  m_store.write_crash(crash);
  m_store.flush();
}

size_t Loop::read_agent() {
  if (!m_agent) return 0;
  std::set<int> vouched;  // in this poll, before the table hears of them
  AgentPoll poll = m_agent->poll([&](int pid, int ppid, uint64_t start_ticks) {
    // Gone before any walk (a fork that ended at once, reaped behind the agent's back): taken on
    // the word of the job process it names as its parent. Such a process is only reported;
    // nothing is read from /proc or sent for it, which needs it alive below traindoc.
    bool ours = m_table.vouches_for(pid, start_ticks);
    if (!ours) {
      Whereabouts where = locate(pid, start_ticks, getpid());
      ours = where == Whereabouts::kBelow ||
             (where == Whereabouts::kGone && (m_table.knows(ppid) || vouched.contains(ppid)));
    }
    if (ours) vouched.insert(pid);
    return ours;
  });
  for (const AgentIdentity& id : poll.identities) {
    m_table.from_agent(id);
    // A forked child has its rank's environment; it is a rank only once it joins a group.
    bool inherited = id.forked && id.rank_source != common::RankSource::kProcessGroup;
    m_checker.process_started(id.pid, id.start_ticks, id.rank, id.world_size, inherited);
  }
  for (const AgentCollective& record : poll.collectives) m_checker.add(record);
  for (AgentCrash& crash : poll.crashes) record_crash(crash);
  for (AgentCrash& crash : poll.crashes) symbolize_crash(crash.crash);
  for (const store::StepSample& step : poll.steps) {
    m_checker.steps_counted(step.pid, step.kind, step.count);
    store::StepSample& newest = m_steps[{step.pid, step.start_ticks, step.kind}];
    if (step.count >= newest.count) newest = step;
  }
  for (const AgentExit& exit : poll.exits) {
    m_table.ended(exit.pid, W_EXITCODE(exit.code, 0), store::EndSource::kAgentExit, exit.time_ns);
  }
  for (const AgentRecord& record : poll.records) take_record(record);
  report_agent_losses();
  return poll.identities.size();
}

void Loop::take_record(const AgentRecord& record) {
  auto a = static_cast<int>(record.a);
  auto b = static_cast<int>(record.b);
  switch (record.type) {
    case common::RecordType::kChildReaped:
      m_table.ended(a, b, store::EndSource::kParent, record.time_ns, record.pid);
      break;
    case common::RecordType::kProcessGroupJoined:
      m_table.joined_process_group(record.pid, record.start_ticks, a, b);
      // A process that joins is a rank, by the rank the group gave it.
      m_checker.process_started(record.pid, record.start_ticks, a, b);
      break;
    case common::RecordType::kProcessGroupInit:
      m_table.called_init_process_group(record.pid, record.start_ticks, a, b);
      break;
    case common::RecordType::kProcessGroupInitFailed:
      m_table.left_init_process_group(record.pid, record.start_ticks);
      break;
    case common::RecordType::kWorkerStarted:
      m_table.worker_started(record.pid, record.start_ticks, a);
      break;
    case common::RecordType::kSpawned:
      m_table.spawned(record.pid, record.start_ticks, a);
      break;
    case common::RecordType::kScriptFinished:
      m_store.add_event({record.time_ns, store::EventKind::kScriptFinished, record.pid, ""});
      m_checker.script_finished(record.pid, record.start_ticks);
      break;
    case common::RecordType::kKillSent:
      m_store.add_event({record.time_ns, store::EventKind::kKillSent, record.pid,
                         kill_target(record.a), record.a});
      break;
    case common::RecordType::kStopSignal:
      m_stops.noted(record.pid, a, b, record.time_ns);
      break;
    case common::RecordType::kThreadDied:
      m_store.add_event(
          {record.time_ns, store::EventKind::kThreadDied, record.pid, thread_name(record)});
      break;
    case common::RecordType::kLabelOutOfRange:
      event(store::EventKind::kLabelOutOfRange, record.pid,
            "label " + std::to_string(record.a) + ", " + std::to_string(record.b) + " classes",
            record.a, record.b);
      break;
    default:
      break;
  }
}

void Loop::report_agent_losses() {
  if (uint64_t n = m_agent->processes_without_slot(); n != m_reported_no_slot) {
    m_reported_no_slot = n;
    event(store::EventKind::kAgentNoSlot, 0,
          std::to_string(n) +
              " process(es) started after all agent slots were taken: seen "
              "only by the /proc walk");
  }
  if (uint64_t n = m_agent->slots_refused(); n != m_reported_refused) {
    m_reported_refused = n;
    event(store::EventKind::kAgentSlotRefused, 0,
          std::to_string(n) +
              " agent slot(s) named a process that is not the job's: what they held was not read");
  }
  if (uint64_t n = m_agent->records_dropped(); n != m_reported_dropped) {
    m_reported_dropped = n;
    event(store::EventKind::kAgentRecordsDropped, 0,
          std::to_string(n) + " agent record(s) were overwritten");
  }
}

// Compares the ranks' collectives, finishes the issues whose stacks came in, and reports each
// the moment it is known. `final`: the job is over, nothing more will come.
void Loop::check_collectives(bool final) {
  for (const store::ProcessRecord& ended : m_table.take_ended()) {
    m_checker.process_ended(ended);
    m_idle.process_ended(ended);
  }
  int64_t now = common::realtime_ns();
  for (FoundIssue& found : m_checker.check(now, final)) {
    bool missing = found.issue.kind == store::IssueKind::kMissing;
    std::string prompt = missing ? note_stdin_waits(found.dump_pids) : "";
    for (int pid : found.dump_pids) {
      DumpRequest request = request_fresh_dump(pid, false);
      for (store::CollectiveIssueRank& rank : found.issue.ranks) {
        if (rank.pid == pid && !request.spared.empty()) rank.stack = spared(pid, request.spared);
      }
    }
    // A missing rank that waits for a batch waits on its DataLoader workers: their stacks say
    // where.
    std::vector<int> workers;
    for (const store::CollectiveIssueRank& rank : found.issue.ranks) {
      if (!missing || rank.state != store::RankState::kNeverCalled || rank.end) continue;
      std::vector<int> mine = m_table.live_workers_of(rank.pid);
      workers.insert(workers.end(), mine.begin(), mine.end());
    }
    if (!workers.empty()) ask_stacks(store::EventKind::kStackAtStall, workers);
    if (!found.dump_pids.empty()) m_idle.stacks_asked();
    m_pending_issues.push_back({std::move(found), now + kStackWaitNs, std::move(prompt)});
  }
  for (auto it = m_pending_issues.begin(); it != m_pending_issues.end();) {
    bool complete = true;
    for (store::CollectiveIssueRank& rank : it->found.issue.ranks) {
      bool asked = std::find(it->found.dump_pids.begin(), it->found.dump_pids.end(), rank.pid) !=
                   it->found.dump_pids.end();
      if (!asked || !rank.stack.empty()) continue;
      if (auto stack = read_stack_dump(m_options.run_dir, rank.pid, m_symbolizer)) {
        rank.stack = *stack;
      } else {
        complete = false;
      }
    }
    if (!complete && !final && now < it->deadline_ns) {
      ++it;
      continue;
    }
    report_issue(it->found.issue, it->prompt);
    it = m_pending_issues.erase(it);
  }
  if (m_kill_at_ns != 0 && now >= m_kill_at_ns) {
    for (auto [pid, start] : m_table.live_processes()) signal_process(pid, start, SIGKILL);
    m_kill_at_ns = 0;
  }
}

// Stored and printed at once: a user watching the job learns it while the job still runs.
void Loop::report_issue(store::CollectiveIssue& issue, const std::string& prompt) {
  // Calls from different places may have paired harmlessly: a warning, no reason to end a job.
  bool abort = m_options.abort_on_issue && issue.field != store::IssueField::kSite &&
               m_kill_at_ns == 0 && !m_root_done;
  issue.aborted = abort;
  m_store.add_collective_issue(issue);
  store_calls(false);
  m_store.flush();
  if (m_options.announce) m_options.announce(store::issue_line(issue) + prompt);
  if (abort) abort_job(issue);
}

void Loop::abort_job(const store::CollectiveIssue& issue) {
  int sent = 0;
  for (auto [pid, start] : m_table.live_processes()) {
    if (signal_process(pid, start, SIGTERM)) ++sent;
  }
  m_kill_at_ns = common::realtime_ns() + kAbortGraceNs;
  event(store::EventKind::kTraindocAbort, 0,
        "--on-mismatch abort: traindoc ended the job (SIGTERM to " + std::to_string(sent) +
            " process(es)) for " + std::string(to_string(issue.kind)) + ": " +
            store::issue_line(issue));
  if (m_options.announce) {
    m_options.announce("ending the job (--on-mismatch abort) to save its remaining time");
  }
}

// Walks the tree below the supervisor (the job's root and every orphan it adopted as subreaper).
// Returns the most CPU seconds one of the job's processes used since the last walk.
double Loop::walk_and_sample(bool slow, bool final) {
  int64_t t = common::realtime_ns();
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
      if (slow) m_sampler.add_descriptors(pid, snapshot->sample);
      if (m_smaps.due(pid, stat.starttime, t)) {
        int64_t cpu = thread_cpu_ns();
        m_sampler.add_smaps(pid, snapshot->sample);
        m_smaps.read(pid, stat.starttime, t, thread_cpu_ns() - cpu);
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
  double cpu_s = m_idle.busiest_cpu_s(samples, alive);
  m_store.add_proc_samples(samples);
  store::HostSample host = m_host.sample();
  host.t_ns = t;
  m_smaps.set_pressure(short_of_memory(host));
  m_store.add_host_sample(host);
  sample_gpu(t, slow || final);
  return cpu_s;
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

// Who sent a signal, as the kernel told it, with its name while it is still there.
store::SignalSender sender_of(const signalfd_siginfo& info) {
  store::SignalSender sender{static_cast<int>(info.ssi_pid), info.ssi_code, {}};
  if (sender.pid > 0) {
    std::ifstream comm("/proc/" + std::to_string(sender.pid) + "/comm");
    std::getline(comm, sender.name);
  }
  return sender;
}

// Signals from a terminal reached every process of our process group already; signals sent to
// us alone (kill, a scheduler) go to every process of the job, as a terminal would have sent them.
void Loop::forward(const signalfd_siginfo& info) {
  int64_t received_ns = common::realtime_ns();
  int sig = static_cast<int>(info.ssi_signo);
  store::SignalSender from = sender_of(info);  // before the waits below: the sender may end
  read_agent();  // the processes registered since the last tick, for the stacks below
  walk_and_sample(false);
  bool from_terminal = info.ssi_code == SI_KERNEL;
  if (m_stops.first_stop()) ask_stop_stacks(from_terminal);
  sig = m_stops.to_pass_on(sig);
  std::set<int> had_it;
  if (!from_terminal && sig != SIGKILL) {
    std::vector<int> catching;
    for (int pid : m_table.live_agent_pids(true)) {
      if (catches_signal(pid, sig)) catching.push_back(pid);
    }
    had_it = m_stops.had_it_already(sig, from.pid, received_ns, catching, m_table.live_pids(),
                                    [this] { read_agent(); });
  }
  pid_t our_group = getpgrp();
  int sent = 0;
  for (auto [pid, start] : m_table.live_processes()) {
    if (from_terminal && sig != SIGKILL && getpgid(pid) == our_group) continue;
    if (had_it.contains(pid)) continue;
    if (signal_process(pid, start, sig)) ++sent;
  }
  // At its arrival: the processes that had it already may have ended since.
  m_store.add_event(store::forwarded_event(
      received_ns, {sig, sent, std::move(from), static_cast<int64_t>(had_it.size())}));
  if (m_options.announce && sig == SIGKILL) {
    m_options.announce("second interrupt: killing the job");
  } else if (m_options.announce && sig == SIGINT) {
    m_options.announce("interrupt passed to the job; interrupt again to kill it");
  }
}

void Loop::ask_stop_stacks(bool from_terminal) {
  // The stacks of its programs (launcher, ranks; not their DataLoader workers).
  ask_stacks(store::EventKind::kStackAtStop, m_table.live_agent_pids(false));
  // A terminal's signal reached the job already; another waits a moment for the dumps.
  int64_t hold_until = common::realtime_ns() + kStopStacksHoldNs;
  while (!from_terminal && m_stacks.pending(store::EventKind::kStackAtStop) &&
         common::realtime_ns() < hold_until) {
    constexpr timespec kPoll{0, 10'000'000};
    nanosleep(&kPoll, nullptr);
    m_stacks.collect(common::realtime_ns(), false);
  }
}

// A prompt nobody answers (breakpoint(), input(), a login prompt) is the one wait that a user
// can end at once, and often cannot see among the ranks' output: each process of `pids` blocked
// on its standard input is recorded; the first is told as "; pid N (comm) waits ...".
std::string Loop::note_stdin_waits(const std::vector<int>& pids) {
  std::string told;
  for (int pid : pids) {
    std::optional<std::string> input = stdin_wait(pid);
    if (!input) continue;
    std::string text =
        "waits for input on its standard input" + (input->empty() ? "" : " (" + *input + ")");
    event(store::EventKind::kStdinWait, pid, text);
    if (!told.empty()) continue;
    std::optional<ProcStat> stat = read_proc_stat(pid);
    told = "; pid " + std::to_string(pid) + (stat ? " (" + stat->comm + ") " : " ") + text;
  }
  return told;
}

// A job that uses no CPU and prints nothing for --stall-seconds (idle_watch.h): said once per idle
// spell, with every process's stack (workers too); its end is recorded when the job moves again.
void Loop::watch_idle(int64_t t_ns, double busiest_cpu_s, uint64_t output_bytes) {
  IdleWatch::Turn turn = m_idle.walked({t_ns, busiest_cpu_s, output_bytes, m_table.size()});
  if (turn.resumed) {
    m_store.add_event({t_ns, store::EventKind::kJobResumed, 0,
                       seconds_text(t_ns - turn.since_ns) + " after the job went idle"});
  }
  if (!turn.went_idle) return;
  std::string idle = "no process used CPU or printed for " + seconds_text(t_ns - turn.since_ns);
  m_store.add_event({turn.since_ns, store::EventKind::kJobIdle, 0,
                     idle + " (told at +" + seconds_text(t_ns - m_run.start_ns) + ")"});
  // Before the stack requests, whose signals take the threads out of their waits for a moment.
  std::string prompt = note_stdin_waits(m_table.live_pids());
  ask_stacks(store::EventKind::kStackAtIdle, m_table.live_agent_pids(true));
  m_idle.stacks_asked();
  if (m_options.announce) {
    m_options.announce("the job is idle: " + idle +
                       m_idle.failure_before(turn.since_ns, m_run.start_ns) + prompt +
                       " (each process's stack goes to the report)");
  }
}

// Where a job was when its time limit ran out (a hang, most often): the stacks of the programs
// that a `timeout` is about to stop, asked for a moment before it does.
void Loop::watch_time_limits(int64_t t_ns) {
  for (int timeout : m_time_limits.due(t_ns, [this](int pid) { return m_table.is_live(pid); })) {
    std::vector<int> below;
    for (int pid : m_table.live_agent_pids(false)) {
      if (m_table.descends_from(pid, timeout)) below.push_back(pid);
    }
    ask_stacks(store::EventKind::kStackAtLimit, below);
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
  m_stacks.collect(common::realtime_ns(), true);
  store_calls(true);
  // Processes still alive stay "still running"; those gone without a trace vanished.
  walk_and_sample(false, true);
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
  m_store.write_run(m_run);
  m_store.flush();

  end_if_stopped_before_launch();  // NVML's start can take seconds
  LaunchSpec spec{m_options.command, m_options.run_dir, m_agent ? m_options.agent_path : "",
                  m_agent ? m_options.python_path : ""};
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
  check_collectives();
  if (!m_time_limits.empty()) watch_time_limits(common::realtime_ns());
  if (!m_stacks.empty()) m_stacks.collect(common::realtime_ns(), false);
  // Every tick: a fork-heavy job's processes must not fill the socket's backlog.
  for (OutputFile& file : m_outputs.take()) tap.add_file(std::move(file));
  auto ticks_per_sample = static_cast<uint64_t>(std::max(1, m_options.interval_ms / kTickMs));
  if (++m_ticks % ticks_per_sample != 0) return;
  double cpu_s = walk_and_sample(++m_samples % static_cast<uint64_t>(m_options.slow_every) == 1);
  watch_idle(common::realtime_ns(), cpu_s, store_log_streams(tap));
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
  if (m_idle.printed_while_idle(output_bytes)) watch_idle(common::realtime_ns(), 0.0, output_bytes);
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

}  // namespace

store::RunInfo supervise(const SupervisorOptions& options) {
  // Before anything starts a thread (NVML starts one at init): a thread inherits the mask, and a
  // signal the kernel gives a thread that does not block it never reaches the signalfd.
  block_supervisor_signals();
  Loop loop(options);
  return loop.run();
}

}  // namespace traindoc::supervisor
