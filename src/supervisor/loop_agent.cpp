// The supervisor's main loop: what the agent tells (registrations, records, crashes, losses) and
// the CUDA settings of each process. Supervisor process, main thread (loop.h).
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "supervisor/allocator_text.h"
#include "supervisor/ddp_parameters_text.h"
#include "supervisor/file_text.h"
#include "supervisor/loop.h"
#include "supervisor/proc/process_identity.h"

namespace traindoc::supervisor {
namespace {

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

// The parameters the DDP error of process `pid` names by index, as events.
std::vector<store::Event> ddp_parameters(const std::string& run_dir, int pid, int64_t t_ns) {
  char name[64];
  snprintf(name, sizeof(name), common::kDdpParametersFile, pid);
  std::vector<store::Event> out;
  for (auto& [index, parameter] :
       ddp_parameters_text(read_file_text(run_dir + "/" + name, kDdpParametersMaxBytes))) {
    std::string text = "DDP's parameter " + std::to_string(index) + " is " + parameter;
    out.push_back(
        {t_ns, store::EventKind::kDdpParameter, pid, std::move(text), index, {}, {}, parameter});
  }
  return out;
}

// The caching allocator's state at out-of-memory error `number` of process `pid`, as the hook
// wrote it, and its snapshot pickle where one was saved (a regular file of the expected name:
// what the job's code writes names no other path).
store::AllocatorState allocator_state(const std::string& run_dir, int pid, int number,
                                      int64_t t_ns) {
  char name[96];
  snprintf(name, sizeof(name), common::kAllocatorStateFile, pid, number);
  store::AllocatorState state;
  state.t_ns = t_ns;
  state.pid = pid;
  state.number = number;
  allocator_text(read_file_text(run_dir + "/" + name, kAllocatorStateMaxBytes), state);
  snprintf(name, sizeof(name), common::kAllocatorSnapshotFile, pid, number);
  struct stat info {};
  if (lstat((run_dir + "/" + name).c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
    state.snapshot = name;
  }
  return state;
}

}  // namespace

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
  // Before the process goes on: torchrun reads its rank's file as it collects the status.
  if (m_options.crash_words) {
    m_error_files.crashed(crash, m_options.crash_words(crash));
    m_error_files.update();
  }
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
    if (!inherited) m_trial.process_started(id.world_size);
  }
  for (const AgentCollective& record : poll.collectives) m_checker.add(record);
  for (AgentCrash& crash : poll.crashes) record_crash(crash);
  for (AgentCrash& crash : poll.crashes) symbolize_crash(crash.crash);
  for (const store::StepSample& step : poll.steps) {
    m_trial.steps_counted(step.pid, step.start_ticks, step.kind, step.count);
    // A count of 0 is the hook's word that it counts this process's steps: no step yet.
    if (step.count == 0) continue;
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
    case common::RecordType::kDdpParameters:
      for (const store::Event& e : ddp_parameters(m_options.run_dir, record.pid, record.time_ns)) {
        m_store.add_event(e);
      }
      break;
    case common::RecordType::kAllocatorState:
      if (a >= 0) {
        m_store.write_allocator_state(
            allocator_state(m_options.run_dir, record.pid, a, record.time_ns));
      }
      break;
    case common::RecordType::kLabelOutOfRange:
      m_store.add_event({record.time_ns, store::EventKind::kLabelOutOfRange, record.pid,
                         "label " + std::to_string(record.a) + ", " + std::to_string(record.b) +
                             " classes" +
                             (record.c ? ", largest " + std::to_string(*record.c) : ""),
                         record.a, record.b, record.c});
      break;
    case common::RecordType::kBatchSize:
      m_store.add_event({record.time_ns, store::EventKind::kBatchSize, record.pid,
                         "batch size " + std::to_string(record.a), record.a});
      break;
    case common::RecordType::kNcclNotVisible:
      // Words from the reason, in analysis (nccl_visibility_words.cpp).
      m_store.add_event(
          {record.time_ns, store::EventKind::kCollectivesNotVisible, record.pid, "", record.a});
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

}  // namespace traindoc::supervisor
