// The job's process table. Supervisor process, main loop thread.
// A process is (pid, start ticks): a pid reused within the run is a new process.
#include "supervisor/process_table.h"

#include <sys/wait.h>

#include <iterator>
#include <string_view>

#include "supervisor/redact.h"

namespace traindoc::supervisor {
namespace {

// Deeper trees are cycles of reused pids, not process trees.
constexpr int kMaxDepth = 64;

// How near the training code a rank's source is; a nearer one replaces a farther one. torchrun's
// RANK is the rank the process group gets; init_process_group's answer is the truth over spawn's
// index, which is over an outer launcher's variables (srun's SLURM_PROCID, which every process
// that spawn starts inherits).
int nearness(common::RankSource source) {
  using common::RankSource;
  constexpr RankSource kNearest[] = {RankSource::kTorch, RankSource::kProcessGroup,
                                     RankSource::kSpawn};
  for (size_t i = 0; i < std::size(kNearest); ++i) {
    if (source == kNearest[i]) return static_cast<int>(3 - i);
  }
  return 0;
}

int exactness(store::EndSource source) {
  switch (source) {
    case store::EndSource::kSupervisor:
    case store::EndSource::kParent:
      return 3;
    case store::EndSource::kZombie:
      return 2;
    case store::EndSource::kAgentExit:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

ProcessTable::Entry* ProcessTable::live_entry(int pid) {
  auto it = m_live.find(pid);
  return it == m_live.end() ? nullptr : &m_records[it->second];
}

ProcessTable::Entry& ProcessTable::entry_for(int pid, uint64_t start_ticks, int64_t seen_ns) {
  if (Entry* entry = live_entry(pid)) {
    // Agents registered early may lack the start ticks; otherwise a different start is reuse.
    // A record without start ticks that already ended (its end came before any sighting) is
    // the process now seen only if that one started before the end: an agent's registration
    // read after the reap of a process that lived less than a tick.
    const store::ProcessRecord& known = entry->record;
    bool ended = known.end_source != store::EndSource::kNone;
    bool started_before_end = seen_ns != 0 && seen_ns <= known.end_ns;
    if (known.start_ticks == start_ticks || start_ticks == 0 ||
        (known.start_ticks == 0 && (!ended || started_before_end))) {
      if (entry->record.start_ticks == 0 && start_ticks != 0) {
        entry->record.start_ticks = start_ticks;
        entry->changed = true;
      }
      return *entry;
    }
    if (entry->record.end_source == store::EndSource::kNone) {
      entry->record.end_source = store::EndSource::kVanished;
      entry->record.end_ns = seen_ns;
      entry->changed = true;
    }
  }
  Entry fresh;
  fresh.record.pid = pid;
  fresh.record.start_ticks = start_ticks;
  fresh.record.start_ns = seen_ns;
  m_records.push_back(std::move(fresh));
  m_live[pid] = m_records.size() - 1;
  return m_records.back();
}

void ProcessTable::forget_program(Entry& entry) {
  store::ProcessRecord& r = entry.record;
  r.argv0.clear();
  r.cmdline.clear();
  r.rank.reset();
  r.rank_source = common::RankSource::kNone;
  r.local_rank.reset();
  r.world_size.reset();
  r.node_rank.reset();
  r.init_rank.reset();
  r.init_world_size.reset();
  r.worker_id.reset();
  r.agent = false;
  r.forked = false;
  entry.from_fork = false;
  entry.changed = true;
}

bool ProcessTable::seen_alive(int pid, int ppid, uint64_t start_ticks, int64_t now_ns,
                              uint64_t stack) {
  Entry& entry = entry_for(pid, start_ticks, now_ns);
  entry.missing_walks = 0;
  if (entry.record.ppid == 0 && ppid != 0) {
    entry.record.ppid = ppid;
    entry.changed = true;
  }
  // /proc is read once per program, also when its agent registered it first: the agent's copy
  // of the command line is cut at 256 bytes.
  bool first_walk = !entry.walked;
  entry.walked = true;
  bool exec = false;
  // A fork shares its parent's stack until it execs; the walk reads a parent before its
  // children, so the parent's is this walk's.
  const Entry* parent = first_walk ? live_entry(entry.record.ppid) : nullptr;
  if (stack != 0 && parent != nullptr && parent->stack != 0) {
    bool forked = parent->stack == stack;
    exec = entry.from_fork && !forked;  // its agent told the fork, not the exec
    entry.from_fork = forked;
    entry.exec_seen = !forked;
  } else if (stack != 0 && !first_walk) {
    exec = entry.from_fork && entry.stack != 0 && entry.stack != stack;
  }
  entry.stack = stack;
  if (exec) {
    forget_program(entry);
    entry.exec_seen = true;
  }
  return first_walk || exec;
}

void ProcessTable::set_details(int pid, uint64_t start_ticks, const std::string& argv0,
                               const std::string& cmdline, const common::RankEnv& env) {
  Entry& entry = entry_for(pid, start_ticks, 0);
  store::ProcessRecord& r = entry.record;
  if (r.argv0.empty()) r.argv0 = argv0;
  std::string redacted = redact_command_line(cmdline);
  if (r.cmdline.empty() ||
      (redacted.size() > r.cmdline.size() && redacted.starts_with(r.cmdline))) {
    r.cmdline = std::move(redacted);
  }
  if (!r.rank && env.rank >= 0) {
    r.rank = env.rank;
    r.rank_source = env.source;
    if (env.local_rank >= 0) r.local_rank = env.local_rank;
    if (env.world_size >= 0) r.world_size = env.world_size;
    if (env.node_rank >= 0) r.node_rank = env.node_rank;
  }
  entry.changed = true;
}

void ProcessTable::from_agent(const AgentIdentity& id) {
  Entry& entry = entry_for(id.pid, id.start_ticks, id.start_ns);
  store::ProcessRecord& r = entry.record;
  if (r.ppid == 0) r.ppid = id.ppid;
  // The exec that followed the fork is already known (its agent's, or the walk's).
  if (id.forked && (r.agent || entry.exec_seen)) return;
  // A fork child registers first with its parent's identity (or the walk saw it share its
  // parent's stack); its exec registers again (same pid and start) with the program it became,
  // which is the truth from then on.
  if (!id.forked && (r.agent || entry.from_fork)) {
    forget_program(entry);
    // The walk's reading, if any, was the fork's: the new program's environment holds what the
    // identity does not carry (LOCAL_WORLD_SIZE, CUDA_VISIBLE_DEVICES).
    entry.walked = false;
  }
  r.agent = true;
  r.forked = id.forked;
  entry.from_fork = id.forked;
  if (r.start_ns == 0 || r.start_ns > id.start_ns) r.start_ns = id.start_ns;
  if (r.cmdline.empty()) {
    r.cmdline = redact_command_line(id.cmdline);
    r.argv0 = r.cmdline.substr(0, r.cmdline.find(' '));
  }
  common::RankEnv env;
  env.source = id.rank_source;
  env.rank = id.rank;
  env.local_rank = id.local_rank;
  env.world_size = id.world_size;
  env.node_rank = id.node_rank;
  set_details(id.pid, id.start_ticks, "", "", env);
  entry.changed = true;
}

void ProcessTable::joined_process_group(int pid, uint64_t start_ticks, int rank, int world_size) {
  left_init_process_group(pid, start_ticks);
  take_rank(pid, start_ticks, common::RankSource::kProcessGroup, rank, world_size);
}

void ProcessTable::left_init_process_group(int pid, uint64_t start_ticks) {
  entry_for(pid, start_ticks, 0).in_init_process_group = false;
}

void ProcessTable::called_init_process_group(int pid, uint64_t start_ticks, int rank,
                                             int world_size) {
  // The latest call is the one that counts (a private group destroyed, then the job's): -1, a
  // value it did not pass, replaces an earlier call's.
  Entry& entry = entry_for(pid, start_ticks, 0);
  entry.record.init_rank = rank;
  entry.record.init_world_size = world_size;
  entry.in_init_process_group = true;
  entry.changed = true;
}

void ProcessTable::worker_started(int pid, uint64_t start_ticks, int worker_id) {
  Entry& entry = entry_for(pid, start_ticks, 0);
  entry.record.worker_id = worker_id;
  entry.changed = true;
}

void ProcessTable::spawned(int pid, uint64_t start_ticks, int index) {
  take_rank(pid, start_ticks, common::RankSource::kSpawn, index, std::nullopt);
}

void ProcessTable::take_rank(int pid, uint64_t start_ticks, common::RankSource source, int rank,
                             std::optional<int> world_size) {
  Entry& entry = entry_for(pid, start_ticks, 0);
  store::ProcessRecord& r = entry.record;
  if (nearness(r.rank_source) >= nearness(source)) return;
  // Spawn's index is a number on this node: the local rank for sure (also once the group names
  // the rank), the rank only on one node.
  bool spawned = r.rank_source == common::RankSource::kSpawn;
  if (source == common::RankSource::kSpawn) {
    r.local_rank = rank;
  } else if (!spawned) {
    r.local_rank.reset();
  }
  r.rank = rank;
  r.world_size = world_size;
  r.rank_source = source;
  r.node_rank.reset();
  entry.changed = true;
}

void ProcessTable::ended(int pid, int status, store::EndSource source, int64_t t_ns, int reaper) {
  Entry* entry = live_entry(pid);
  if (entry == nullptr) entry = &entry_for(pid, 0, t_ns);  // ended before any sighting
  store::ProcessRecord& r = entry->record;
  if (r.ppid == 0 && reaper != 0) {
    r.ppid = reaper;
    entry->changed = true;
  }
  if (r.end_source != store::EndSource::kNone && exactness(r.end_source) >= exactness(source)) {
    return;
  }
  if (r.end_source == store::EndSource::kNone) {
    m_newly_ended.push_back(static_cast<size_t>(entry - m_records.data()));
  }
  r.end_source = source;
  // Every source sees the end after it happened (a launcher may reap its ranks seconds late):
  // the earliest sighting is the closest to the death.
  if (r.end_ns == 0 || t_ns < r.end_ns) r.end_ns = t_ns;
  if (WIFSIGNALED(status)) {
    r.exit_signal = WTERMSIG(status);
    r.core_dumped = WCOREDUMP(status);
    r.exit_code.reset();
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    r.exit_signal.reset();
  }
  entry->changed = true;
}

void ProcessTable::sweep(const std::set<int>& alive, int64_t now_ns, bool final) {
  for (auto it = m_live.begin(); it != m_live.end();) {
    Entry& entry = m_records[it->second];
    bool found = alive.count(it->first) != 0;
    if (found) entry.missing_walks = 0;
    if (!found && entry.record.end_source == store::EndSource::kNone &&
        (++entry.missing_walks >= 2 || final)) {
      entry.record.end_source = store::EndSource::kVanished;
      entry.record.end_ns = now_ns;
      m_newly_ended.push_back(it->second);
      entry.changed = true;
    }
    // An ended process stays findable by pid until its pid shows up again.
    ++it;
  }
}

std::vector<int> ProcessTable::live_pids() const {
  std::vector<int> out;
  for (const auto& [pid, index] : m_live) {
    if (m_records[index].record.end_source == store::EndSource::kNone) out.push_back(pid);
  }
  return out;
}

bool ProcessTable::vouches_for(int pid, uint64_t start_ticks) const {
  auto it = m_live.find(pid);
  if (it == m_live.end()) return false;
  const Entry& entry = m_records[it->second];
  const store::ProcessRecord& r = entry.record;
  bool reaped =
      r.end_source == store::EndSource::kSupervisor || r.end_source == store::EndSource::kParent;
  return (entry.walked && r.start_ticks == start_ticks) || (reaped && r.start_ticks == 0);
}

uint64_t ProcessTable::start_of(int pid) const {
  auto it = m_live.find(pid);
  return it == m_live.end() ? 0 : m_records[it->second].record.start_ticks;
}

ProcessIds ProcessTable::live_processes() const {
  ProcessIds out;
  for (const auto& [pid, index] : m_live) {
    const store::ProcessRecord& r = m_records[index].record;
    if (r.end_source == store::EndSource::kNone) out.emplace(pid, r.start_ticks);
  }
  return out;
}

std::vector<int> ProcessTable::live_agent_pids(bool workers) const {
  std::vector<int> out;
  for (int pid : live_pids()) {
    const store::ProcessRecord& r = m_records[m_live.at(pid)].record;
    if (r.agent && (workers || !r.forked)) out.push_back(pid);
  }
  return out;
}

std::vector<int> ProcessTable::live_workers_of(int pid) const {
  std::vector<int> out;
  for (int child : live_pids()) {
    const store::ProcessRecord& r = m_records[m_live.at(child)].record;
    if (r.worker_id && descends_from(child, pid)) out.push_back(child);
  }
  return out;
}

bool ProcessTable::descends_from(int pid, int ancestor) const {
  for (int depth = 0; depth < kMaxDepth; ++depth) {
    auto it = m_live.find(pid);
    if (it == m_live.end()) return false;
    pid = m_records[it->second].record.ppid;
    if (pid == ancestor) return true;
  }
  return false;
}

bool ProcessTable::is_live(int pid) const {
  auto it = m_live.find(pid);
  return it != m_live.end() && m_records[it->second].record.end_source == store::EndSource::kNone;
}

bool ProcessTable::in_init_process_group(int pid) const {
  auto it = m_live.find(pid);
  return it != m_live.end() && m_records[it->second].in_init_process_group;
}

std::vector<store::ProcessRecord> ProcessTable::take_changed() {
  std::vector<store::ProcessRecord> out;
  for (Entry& entry : m_records) {
    if (!entry.changed) continue;
    out.push_back(entry.record);
    entry.changed = false;
  }
  return out;
}

void ProcessTable::mark_all_changed() {
  for (Entry& entry : m_records) entry.changed = true;
}

std::vector<store::ProcessRecord> ProcessTable::take_ended() {
  std::vector<store::ProcessRecord> out;
  for (size_t index : m_newly_ended) out.push_back(m_records[index].record);
  m_newly_ended.clear();
  return out;
}

}  // namespace traindoc::supervisor
