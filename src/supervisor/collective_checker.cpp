// The live collective checker and stall watch. Supervisor process, main loop thread.
// A group's calls are compared as soon as every rank has made its k-th one; the first divergence
// settles the group (later calls are misaligned and would all differ). Detection only: an issue
// is facts, which store/collective_words.h puts in words.
#include "supervisor/collective_checker.h"

#include <algorithm>
#include <csignal>
#include <string>
#include <utility>

#include "supervisor/collective_ops.h"
#include "supervisor/collective_text.h"

namespace traindoc::supervisor {
namespace {

using common::CollectiveCall;

constexpr size_t kFirstCalls = 200;
constexpr size_t kRecentCalls = 64;
constexpr size_t kMaxPendingNumbers = 4096;
constexpr int64_t kReapSlackNs = 1'000'000'000;

// Whether a call can still be running: one that returns early (only the order of calls tells
// for it), or a blocking one that has not returned.
bool still_running(const CollectiveCall& call, int64_t end_ns) {
  return returns_early(call) || end_ns == 0;
}

bool ended_normally(const store::ProcessRecord& process) {
  return process.exit_code && *process.exit_code == 0;
}

// Ended by a signal that asks a process to stop (a launcher's teardown after a waiting rank gave
// up, a user), not by a failure of its own.
bool stopped(const store::ProcessRecord& process) {
  int sig = process.exit_signal.value_or(0);
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGKILL;
}

store::RankEnd end_of(const store::ProcessRecord& process, bool finished) {
  return {process.exit_code, process.exit_signal, finished};
}

FoundIssue new_issue(store::IssueKind kind, uint64_t group, uint64_t number,
                     const CollectiveCall& call, store::IssueField field, int64_t now_ns) {
  FoundIssue found;
  store::CollectiveIssue& issue = found.issue;
  issue.t_ns = now_ns;
  issue.kind = kind;
  issue.group = group;
  issue.group_size = call.group_size;
  issue.pair = is_p2p(call.op);
  issue.default_group = (call.flags & common::kCollectiveDefaultGroup) != 0;
  issue.number = number;
  issue.op = op_name(call.op);
  issue.field = field;
  issue.first_ns = call.time_ns;
  return found;
}

}  // namespace

// When a rank that made the call gave up waiting for the others, or 0: its call raised (a
// timeout, a closed connection), or a blocking call that cannot complete without every rank
// returned. The return of a call that returns early is no such sign.
int64_t CollectiveChecker::gave_up_at(const Held& held) {
  if (held.end_ns == 0) return 0;
  if (held.raised) return held.end_ns;
  return !returns_early(held.call) && completes_together(held.call.op) ? held.end_ns : 0;
}

CollectiveChecker::CollectiveChecker(CheckerOptions options) : m_options(options) {}

void CollectiveChecker::process_started(int pid, uint64_t start_ticks, int rank, int world_size,
                                        bool inherited) {
  Process& process = m_processes[pid];
  ++m_membership_version;
  if (process.start_ticks != start_ticks) process = Process{};
  process.start_ticks = start_ticks;
  process.rank = inherited ? -1 : rank;
  process.world_size = world_size;
}

void CollectiveChecker::process_ended(const store::ProcessRecord& record) {
  auto it = m_processes.find(record.pid);
  if (it == m_processes.end() || it->second.start_ticks != record.start_ticks) return;
  it->second.end = record;
}

void CollectiveChecker::script_finished(int pid, uint64_t start_ticks) {
  auto it = m_processes.find(pid);
  if (it != m_processes.end() && it->second.start_ticks == start_ticks) it->second.finished = true;
}

const CollectiveChecker::Held* CollectiveChecker::find_call(const RankTrack& rank,
                                                            uint64_t number) {
  for (auto it = rank.recent.rbegin(); it != rank.recent.rend(); ++it) {
    if (it->call.number == number) return &*it;
    if (it->call.number < number) break;
  }
  return nullptr;
}

CollectiveChecker::Held* CollectiveChecker::find_call(RankTrack& rank, uint64_t number) {
  return const_cast<Held*>(find_call(std::as_const(rank), number));
}

void CollectiveChecker::add(const AgentCollective& record) {
  const CollectiveCall& call = record.call;
  // A group of one is kept, with nothing to compare: its calls are still the job's record.
  if (call.number == 0 || call.group_rank < 0 || call.group_rank >= call.group_size) {
    return;  // unnumbered: lifetime events, a full table
  }
  Group& group = m_groups[call.group];
  if (group.size == 0) {
    group.size = call.group_size;
    group.pair = is_p2p(call.op);
    group.is_default = (call.flags & common::kCollectiveDefaultGroup) != 0 && !group.pair;
    group.ranks.resize(static_cast<size_t>(call.group_size));
  }
  if (group.size != call.group_size) return;
  RankTrack& rank = group.ranks[static_cast<size_t>(call.group_rank)];
  group.last_activity_ns = std::max(group.last_activity_ns, call.time_ns);
  if (call.event == static_cast<uint8_t>(common::CollectiveEvent::kExit)) {
    bool raised = (call.flags & common::kCollectiveRaised) != 0;
    Held* recent = find_call(rank, call.number);
    Held* first =
        call.number <= rank.first.size() && rank.first[call.number - 1].call.number == call.number
            ? &rank.first[call.number - 1]
            : nullptr;
    for (Held* held : {recent, first}) {
      if (held == nullptr) continue;
      held->end_ns = call.time_ns;
      held->raised = raised;
    }
    // Every held call up to stored_upto went to run.db (take_calls): this one without its end.
    Held* ended = recent != nullptr ? recent : first;
    if (ended != nullptr && call.number <= rank.stored_upto) {
      m_late_ends.push_back(
          to_store(ended->call, ended->pid, ended->start_ticks, ended->end_ns, ended->raised));
    }
    ++rank.completed;
    return;
  }
  if (rank.pid != record.pid) ++m_membership_version;
  rank.pid = record.pid;
  rank.start_ticks = record.start_ticks;
  rank.last_number = std::max(rank.last_number, call.number);
  Held held{call, record.pid, record.start_ticks, 0};
  if (rank.first.size() < kFirstCalls) rank.first.push_back(held);
  rank.recent.push_back(held);
  if (rank.recent.size() > kRecentCalls) rank.recent.pop_front();
  if (!compared(call.op)) return;
  // On several machines the world group's calls from elsewhere never arrive: its ranks here are
  // compared among themselves.
  int needed = group.size;
  if (m_spans_machines && group.is_default) {
    needed = std::max(2, static_cast<int>(members_here(group).size()));
  }
  if (++group.arrivals[call.number] >= needed) {
    group.arrivals.erase(call.number);
    m_pending.emplace_back(call.group, call.number);
  }
  while (group.arrivals.size() > kMaxPendingNumbers) group.arrivals.erase(group.arrivals.begin());
}

std::vector<FoundIssue> CollectiveChecker::check(int64_t now_ns, bool final) {
  m_final = final;
  std::vector<FoundIssue> out;
  // Before the pending calls: a straggler's arrival reopens its group to them.
  for (auto& [id, group] : m_groups) {
    if (group.stalled_number != 0) watch_late(id, group, now_ns, out);
  }
  for (auto [id, number] : m_pending) {
    auto it = m_groups.find(id);
    if (it != m_groups.end() && !it->second.settled) compare(id, it->second, number, now_ns, out);
  }
  m_pending.clear();
  for (auto& [id, group] : m_groups) {
    if (!group.settled) watch(id, group, now_ns, out);
  }
  watch_uneven(now_ns, out);
  if (!out.empty()) m_any_issue = true;
  return out;
}

// Each rank's call (op and tensors) is one the others make too, elsewhere in their sequence: the
// same calls in another order.
bool CollectiveChecker::reordered(const Group& group, const std::vector<int>& members,
                                  const std::vector<Held*>& calls) {
  auto made_by_others = [&](size_t index) {
    const CollectiveCall& mine = calls[index]->call;
    for (size_t other = 0; other < calls.size(); ++other) {
      if (other == index) continue;
      bool found = false;
      for (const Held& h : group.ranks[static_cast<size_t>(members[other])].recent) {
        found |= h.call.op == mine.op && shapes_text(h.call, true) == shapes_text(mine, true);
      }
      if (!found) return false;
    }
    return true;
  };
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!made_by_others(i)) return false;
  }
  return true;
}

void CollectiveChecker::compare(uint64_t id, Group& group, uint64_t number, int64_t now_ns,
                                std::vector<FoundIssue>& out) {
  const std::vector<int>& members = members_here(group);
  std::vector<Held*> calls;
  for (int r : members) {
    Held* held = find_call(group.ranks[static_cast<size_t>(r)], number);
    if (held == nullptr) return;  // evicted: a rank ran far ahead, compared when it was there
    calls.push_back(held);
  }
  if (calls.size() < 2) return;
  const CollectiveCall& first = calls[0]->call;
  for (const CallField& field : fields_of(first.op)) {
    std::vector<std::string> values;
    values.reserve(calls.size());
    for (const Held* held : calls) values.push_back(field.value(held->call));
    if (std::all_of(values.begin(), values.end(),
                    [&](const std::string& v) { return v == values[0]; })) {
      continue;
    }
    store::IssueKind kind =
        field.field == store::IssueField::kOp && reordered(group, members, calls)
            ? store::IssueKind::kOrder
            : store::IssueKind::kMismatch;
    FoundIssue found = new_issue(kind, id, number, first, field.field, now_ns);
    std::vector<int> names = job_ranks(group);
    for (size_t i = 0; i < calls.size(); ++i) {
      found.issue.first_ns = std::min(found.issue.first_ns, calls[i]->call.time_ns);
      store::CollectiveIssueRank part = rank_part(group, members[i], names);
      part.value = kind == store::IssueKind::kOrder ? call_text(calls[i]->call) : values[i];
      part.site = site_text(calls[i]->call);
      part.state = store::RankState::kCalled;
      part.op = op_name(calls[i]->call.op);
      found.issue.ranks.push_back(part);
    }
    group.settled = true;
    group.flush = true;
    out.push_back(std::move(found));
    return;
  }
  if (symmetric(first.op) && compare_sites(id, group, members, calls, now_ns, out)) return;
  if (group.first_site_divergence == 0) {
    for (const Held* held : calls) {
      if (site_text(held->call) != site_text(first)) {
        group.first_site_divergence = number;
        break;
      }
    }
  }
}

// Whether no rank but `ranks` ever called from `site` (in their recent calls).
bool CollectiveChecker::only_from(const Group& group, const std::vector<int>& ranks,
                                  const std::string& site) const {
  for (int r = 0; r < group.size; ++r) {
    if (std::find(ranks.begin(), ranks.end(), r) != ranks.end()) continue;
    for (const Held& held : group.ranks[static_cast<size_t>(r)].recent) {
      if (site_text(held.call) == site) return false;
    }
  }
  return true;
}

// The same symmetric call from different places: a call in code that only some ranks run (e.g.
// under `if rank == 0:`) paired with the others' next one of the same shape, and every result
// after it is silently wrong. The odd ranks are those at the less common place; between places
// as common, those at a place no other rank calls from; else every rank is named.
bool CollectiveChecker::compare_sites(uint64_t id, Group& group, const std::vector<int>& members,
                                      const std::vector<Held*>& calls, int64_t now_ns,
                                      std::vector<FoundIssue>& out) {
  std::map<std::string, std::vector<int>> by_site;
  for (size_t i = 0; i < calls.size(); ++i) {
    std::string site = site_text(calls[i]->call);
    if (site.empty()) return false;  // NCCL's records have no place
    // join() shadows the others' calls for a rank that ran out of inputs, from its exit of the
    // `with`: by design from another line than theirs.
    if ((calls[i]->call.flags & common::kCollectiveJoinShadow) != 0) return false;
    by_site[site].push_back(members[i]);
  }
  if (by_site.size() < 2) return false;
  size_t most = 0;
  for (const auto& [site, ranks] : by_site) most = std::max(most, ranks.size());
  std::vector<const std::string*> common;
  for (const auto& [site, ranks] : by_site) {
    if (ranks.size() == most) common.push_back(&site);
  }
  std::vector<int> odd;
  for (const auto& [site, ranks] : by_site) {
    bool is_odd = common.size() == 1 ? &site != common[0] : only_from(group, ranks, site);
    if (is_odd) odd.insert(odd.end(), ranks.begin(), ranks.end());
  }
  std::sort(odd.begin(), odd.end());
  if (odd.empty() || odd.size() == calls.size()) odd.clear();  // no telling: name every rank

  const CollectiveCall& first = calls[0]->call;
  FoundIssue found = new_issue(store::IssueKind::kOrder, id, first.number, first,
                               store::IssueField::kSite, now_ns);
  std::vector<int> names = job_ranks(group);
  for (size_t i = 0; i < calls.size(); ++i) {
    found.issue.first_ns = std::min(found.issue.first_ns, calls[i]->call.time_ns);
    store::CollectiveIssueRank part = rank_part(group, members[i], names);
    part.site = site_text(calls[i]->call);
    part.state = store::RankState::kMade;
    part.odd = std::find(odd.begin(), odd.end(), members[i]) != odd.end();
    found.issue.ranks.push_back(part);
  }
  group.settled = true;
  group.flush = true;
  out.push_back(std::move(found));
  return true;
}

const CollectiveChecker::Process* CollectiveChecker::process_of(const Group& group,
                                                                int group_rank) const {
  int pid = pid_of(group, group_rank);
  auto it = m_processes.find(pid);
  return it == m_processes.end() ? nullptr : &it->second;
}

bool CollectiveChecker::elsewhere(const Group& group, int group_rank) const {
  return m_spans_machines && process_of(group, group_rank) == nullptr;
}

const std::vector<int>& CollectiveChecker::members_here(Group& group) const {
  if (group.here_version != m_membership_version) {
    group.here.clear();
    for (int r = 0; r < group.size; ++r) {
      if (!elsewhere(group, r)) group.here.push_back(r);
    }
    group.here_version = m_membership_version;
  }
  return group.here;
}

// The job rank of one side of a pair, as the other side's Python calls name it (their peer);
// -1 when it made none. NCCL's peer is a rank of its communicator, not of the job.
int CollectiveChecker::peer_named(const Group& group, int group_rank) {
  const std::deque<Held>& other = group.ranks[static_cast<size_t>(1 - group_rank)].recent;
  return other.empty() || !is_python(other.back().call) ? -1 : other.back().call.peer;
}

// The process of a group rank: the one that made its calls; for a pair, the process of the rank
// the other side's calls name; for a group as large as the world that the rank never used, the
// process the launcher gave that rank (the latest of that rank, one still running first: a
// restarted job's attempts reuse ranks).
int CollectiveChecker::pid_of(const Group& group, int group_rank) const {
  const RankTrack& rank = group.ranks[static_cast<size_t>(group_rank)];
  if (rank.pid != 0) return rank.pid;
  int job_rank = group_rank;
  if (group.pair) {
    job_rank = peer_named(group, group_rank);
    if (job_rank < 0) return 0;
  }
  int found = 0;
  const Process* best = nullptr;
  for (const auto& [pid, process] : m_processes) {
    if (process.rank != job_rank || (!group.pair && process.world_size != group.size)) continue;
    if (best == nullptr ||
        std::pair(!process.end, process.start_ticks) > std::pair(!best->end, best->start_ticks)) {
      best = &process;
      found = pid;
    }
  }
  return found;
}

// The job's rank of each member of a group, as users number ranks (a subgroup's or a pair's own
// numbering is not theirs): its process's, else, in a pair, the peer the other side's calls
// name. The group's own numbering for the default group, which is the job's; empty where a
// member's is unknown or two are the same.
std::vector<int> CollectiveChecker::job_ranks(const Group& group) const {
  std::vector<int> out;
  for (int r = 0; r < group.size; ++r) {
    const Process* process = process_of(group, r);
    int rank = process != nullptr ? process->rank : -1;
    if (rank < 0 && group.pair) rank = peer_named(group, r);
    if (rank < 0 || std::find(out.begin(), out.end(), rank) != out.end()) {
      out.clear();
      break;
    }
    out.push_back(rank);
  }
  if (out.empty() && group.is_default) {
    for (int r = 0; r < group.size; ++r) out.push_back(r);
  }
  return out;
}

// Ranks that each wait in a blocking point-to-point call for the next, the last for the first
// (each receives from the other before it sends): a deadlock, told once for every pair in it.
// `group` is a stalled pair.
bool CollectiveChecker::p2p_deadlock(uint64_t id, Group& group, int64_t now_ns,
                                     std::vector<FoundIssue>& out) {
  struct Wait {
    Group* group;
    int group_rank;
    int peer;  // the job rank it waits for
    const Held* held;
  };
  std::map<int, Wait> waits;  // by the job rank that waits
  int first = -1;
  for (auto& [other_id, other] : m_groups) {
    if (!other.pair || other.settled) continue;
    std::vector<int> names = job_ranks(other);
    if (names.empty()) continue;
    for (int r = 0; r < 2; ++r) {
      const RankTrack& mine = other.ranks[static_cast<size_t>(r)];
      const RankTrack& theirs = other.ranks[static_cast<size_t>(1 - r)];
      if (mine.recent.empty() || theirs.last_number >= mine.last_number) continue;
      const Held& held = mine.recent.back();
      const Process* process = process_of(other, r);
      bool gone = process != nullptr && process->end;
      if (held.end_ns != 0 || returns_early(held.call) || gone) continue;  // not blocked in it
      waits[names[static_cast<size_t>(r)]] = {&other, r, names[static_cast<size_t>(1 - r)], &held};
      if (other_id == id) first = names[static_cast<size_t>(r)];
    }
  }
  std::vector<int> cycle;
  for (int at = first; at >= 0;) {
    auto it = waits.find(at);
    // A chain that ends in a rank that is not waiting, or a circle this pair is not in.
    if (it == waits.end() || std::find(cycle.begin(), cycle.end(), at) != cycle.end()) {
      return false;
    }
    cycle.push_back(at);
    at = it->second.peer;
    if (at == first) break;
  }
  if (cycle.size() < 2) return false;
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());

  const Held* held = waits.at(first).held;
  FoundIssue found = new_issue(store::IssueKind::kOrder, id, held->call.number, held->call,
                               store::IssueField::kDeadlock, now_ns);
  store::CollectiveIssue& issue = found.issue;
  issue.quiet_ns = now_ns - group.last_activity_ns;
  for (int rank : cycle) {
    const Wait& wait = waits.at(rank);
    const CollectiveCall& call = wait.held->call;
    store::CollectiveIssueRank part = rank_part(*wait.group, wait.group_rank, {});
    part.job_rank = rank;
    part.site = site_text(call);
    part.value = call_text(call);
    part.state = store::RankState::kWaitsIn;
    part.op = op_name(call.op);
    part.peer = wait.peer;
    issue.first_ns = std::min(issue.first_ns, call.time_ns);
    if (part.pid != 0) found.dump_pids.push_back(part.pid);
    issue.ranks.push_back(part);
    wait.group->settled = true;
    wait.group->flush = true;
  }
  out.push_back(std::move(found));
  return true;
}

uint64_t CollectiveChecker::calls_of(int pid) const {
  uint64_t calls = 0;
  for (const auto& [id, group] : m_groups) {
    for (const RankTrack& rank : group.ranks) {
      if (rank.pid == pid) calls += rank.completed;
    }
  }
  return calls;
}

store::CollectiveIssueRank CollectiveChecker::rank_part(const Group& group, int group_rank,
                                                        const std::vector<int>& names) const {
  const RankTrack& rank = group.ranks[static_cast<size_t>(group_rank)];
  store::CollectiveIssueRank part;
  part.group_rank = group_rank;
  if (!names.empty()) part.job_rank = names[static_cast<size_t>(group_rank)];
  part.pid = pid_of(group, group_rank);
  part.start_ticks = rank.start_ticks;
  if (const Process* process = process_of(group, group_rank)) {
    part.start_ticks = process->start_ticks;
  }
  part.calls = rank.completed;
  if (!rank.recent.empty()) part.last_call = call_text(rank.recent.back().call);
  return part;
}

// A stall, a missing rank's end or a waiting rank giving up: the others wait in a call that some
// ranks never made.
void CollectiveChecker::watch(uint64_t id, Group& group, int64_t now_ns,
                              std::vector<FoundIssue>& out) {
  std::optional<GroupWait> wait = wait_in(group);
  if (!wait || !wait_over(id, group, now_ns, *wait, out)) return;
  out.push_back(missing_issue(id, group, now_ns, *wait));
  group.settled = true;
  group.flush = true;
}

// The group's latest call, who made it and who did not yet; none while every rank has made it.
std::optional<CollectiveChecker::GroupWait> CollectiveChecker::wait_in(Group& group) {
  GroupWait wait;
  for (const RankTrack& rank : group.ranks) wait.target = std::max(wait.target, rank.last_number);
  if (wait.target == 0) return std::nullopt;
  for (int r : members_here(group)) {  // a rank on another machine makes its calls out of sight
    bool came = group.ranks[static_cast<size_t>(r)].last_number >= wait.target;
    (came ? wait.arrived : wait.laggards).push_back(r);
  }
  if (wait.laggards.empty()) return std::nullopt;
  for (int r : wait.arrived) {
    const Held* held = find_call(group.ranks[static_cast<size_t>(r)], wait.target);
    if (held == nullptr) continue;
    if (wait.waited == nullptr) wait.waited = held;
    wait.since = std::min(wait.since, held->call.time_ns);
    const Process* process = process_of(group, r);
    bool died = process != nullptr && process->end;
    wait.someone_waits |= still_running(held->call, held->end_ns) && !held->raised && !died;
    int64_t gave_up_ns = died ? process->end->end_ns : gave_up_at(*held);
    if (gave_up_ns != 0 && (wait.gave_up_ns == 0 || gave_up_ns < wait.gave_up_ns)) {
      wait.gave_up_ns = gave_up_ns;
      wait.gave_up_rank = r;
      wait.gave_up_died = died;
    }
  }
  if (wait.waited == nullptr) return std::nullopt;
  // Fewer ranks made the call than did not, from a place no other rank ever calls from: the
  // call is theirs alone (code only they run, e.g. under `if rank == 0:`), not one the others
  // skipped, and they are the ones to blame. Unless another rank failed: it never got there.
  std::string site = site_text(wait.waited->call);
  bool laggard_failed = std::any_of(wait.laggards.begin(), wait.laggards.end(), [&](int r) {
    const Process* process = process_of(group, r);
    return process != nullptr && process->end && !ended_normally(*process->end) &&
           !stopped(*process->end) && !process->finished;
  });
  // DDP's broadcast of the buffers comes of a forward through the model: from a line that no
  // other rank calls the model from, a forward only those ranks run (evaluation on rank 0),
  // which half the ranks may run as well as fewer.
  bool fewer =
      wait.arrived.size() < wait.laggards.size() ||
      (wait.arrived.size() == wait.laggards.size() &&
       wait.waited->call.op == static_cast<uint16_t>(common::CollectiveOp::kBroadcastCoalesced));
  wait.alone = fewer && !site.empty() && !laggard_failed && only_from(group, wait.arrived, site);
  return wait;
}

// Why the wait is over: a missing rank ended, a waiting one gave up (its call returned without
// the others, or it died in it), or nothing moved for --stall-seconds. False while it is not
// (or not surely) over, and for a deadlock, which is told on its own.
bool CollectiveChecker::wait_over(uint64_t id, Group& group, int64_t now_ns, GroupWait& wait,
                                  std::vector<FoundIssue>& out) {
  for (int r : wait.laggards) {
    const Process* process = process_of(group, r);
    // A missing rank ended after a waiting one gave up was ended for it (by the launcher).
    if (process == nullptr || !process->end ||
        (wait.gave_up_ns != 0 && process->end->end_ns >= wait.gave_up_ns)) {
      continue;
    }
    if (now_ns - grace_ns() < process->end->end_ns) return false;  // its last records first
    wait.end = store::WaitEnd::kRankEnded;
    wait.end_rank = r;
    // One whose program had finished skipped the call, however its teardown then ended.
    if (!ended_normally(*process->end) && !process->finished) {
      wait.kind = store::IssueKind::kPeerExited;
      wait.peer_end_ns = process->end->end_ns;  // the failure the others are victims of
    }
    return true;
  }
  if (wait.gave_up_ns != 0) {
    if (now_ns - grace_ns() < wait.gave_up_ns) return false;  // a call read late is not missing
    wait.end = wait.gave_up_died ? store::WaitEnd::kEndedInIt : store::WaitEnd::kGaveUp;
    wait.end_rank = wait.gave_up_rank;
    return true;
  }
  if (!wait.someone_waits || now_ns - group.last_activity_ns < m_options.stall_ns) return false;
  if (group.pair && p2p_deadlock(id, group, now_ns, out)) return false;
  wait.end = store::WaitEnd::kStalled;
  group.stalled_number = wait.target;
  group.stalled_ranks = wait.laggards;
  return true;
}

// Whether a rank that never made the awaited call and left normally (out of batches; one still
// there is held up, not short of inputs) counted other training steps than one that made it.
bool CollectiveChecker::left_short(const Group& group, const GroupWait& wait) const {
  for (int laggard : wait.laggards) {
    const Process* behind = process_of(group, laggard);
    if (behind == nullptr || !behind->end || !ended_normally(*behind->end)) continue;
    for (int arrived : wait.arrived) {
      const Process* ahead = process_of(group, arrived);
      if (ahead != nullptr &&
          !store::same_step_counts(behind->steps, ahead->steps).value_or(true)) {
        return true;
      }
    }
  }
  return false;
}

// The issue of a wait that is over, with every rank's part.
FoundIssue CollectiveChecker::missing_issue(uint64_t id, Group& group, int64_t now_ns,
                                            const GroupWait& wait) const {
  bool extra = wait.alone && wait.kind == store::IssueKind::kMissing;
  store::IssueKind kind = wait.kind;
  // DDP's gradient all-reduce, which ranks of fewer training steps never made and left: they ran
  // out of batches or skipped a backward (uneven inputs), not a collective of the job's own code.
  if (kind == store::IssueKind::kMissing &&
      wait.waited->call.op == static_cast<uint16_t>(common::CollectiveOp::kDdpGradientAllReduce) &&
      left_short(group, wait)) {
    kind = store::IssueKind::kUnevenInputs;
  }
  FoundIssue found =
      new_issue(kind, id, wait.target, wait.waited->call, store::IssueField::kMissing, now_ns);
  store::CollectiveIssue& issue = found.issue;
  issue.first_ns = wait.peer_end_ns != 0 ? wait.peer_end_ns : wait.since;
  issue.wait_end = wait.end;
  issue.wait_end_rank = wait.end_rank;
  issue.alone = wait.alone;
  issue.waited_ns = now_ns - wait.since;
  issue.quiet_ns = now_ns - group.last_activity_ns;
  if (group.first_site_divergence != 0 && group.first_site_divergence <= wait.target) {
    issue.sites_differed_at = group.first_site_divergence;
  }
  std::vector<int> names = job_ranks(group);
  for (int r = 0; r < group.size; ++r) {
    store::CollectiveIssueRank part = rank_part(group, r, names);
    const Process* process = process_of(group, r);
    const RankTrack& rank = group.ranks[static_cast<size_t>(r)];
    bool ended = process && process->end;
    if (ended) part.end = end_of(*process->end, process->finished);
    const Held* held = find_call(rank, wait.target);
    if (elsewhere(group, r)) {
      part.state = store::RankState::kElsewhere;
    } else if (std::find(wait.laggards.begin(), wait.laggards.end(), r) != wait.laggards.end()) {
      part.state = extra ? store::RankState::kNeverCallsFromThere : store::RankState::kNeverCalled;
      if (!rank.recent.empty()) part.site = site_text(rank.recent.back().call);
    } else if (held != nullptr) {
      part.site = site_text(held->call);
      part.value = call_text(held->call);
      part.odd = extra;
      part.state = held->raised                ? store::RankState::kRaised
                   : held->end_ns == 0         ? store::RankState::kWaiting
                   : returns_early(held->call) ? store::RankState::kIssued
                                               : store::RankState::kReturned;
    }
    if (part.pid != 0 && !ended) found.dump_pids.push_back(part.pid);
    issue.ranks.push_back(part);
  }
  return found;
}

// A stalled group whose laggards made the awaited call after all, as the others did and from the
// same place: a straggler (more work on some ranks), not a desync. The group is checked again
// from that call on; a late call that differs is a mismatch, one from elsewhere leaves the stall.
void CollectiveChecker::watch_late(uint64_t id, Group& group, int64_t now_ns,
                                   std::vector<FoundIssue>& out) {
  uint64_t number = group.stalled_number;
  std::vector<Held*> calls;
  for (RankTrack& rank : group.ranks) {
    Held* held = find_call(rank, number);
    if (held == nullptr) {
      if (rank.last_number >= number) group.stalled_number = 0;  // ran past it, or evicted
      return;
    }
    calls.push_back(held);
  }
  group.stalled_number = 0;
  auto late = [&](int r) {
    return std::find(group.stalled_ranks.begin(), group.stalled_ranks.end(), r) !=
           group.stalled_ranks.end();
  };
  const Held* waited = nullptr;
  int64_t since = INT64_MAX;
  for (int r = 0; r < group.size; ++r) {
    if (late(r)) continue;
    waited = calls[static_cast<size_t>(r)];
    since = std::min(since, waited->call.time_ns);
  }
  if (waited == nullptr) return;
  for (int r : group.stalled_ranks) {
    const CollectiveCall& call = calls[static_cast<size_t>(r)]->call;
    if (call.op != waited->call.op || site_text(call) != site_text(waited->call)) return;
  }
  group.settled = false;
  size_t before = out.size();
  compare(id, group, number, now_ns, out);
  if (out.size() != before) return;

  FoundIssue found = new_issue(store::IssueKind::kMissing, id, number, waited->call,
                               store::IssueField::kLate, now_ns);
  store::CollectiveIssue& issue = found.issue;
  issue.first_ns = since;
  std::vector<int> names = job_ranks(group);
  for (int r = 0; r < group.size; ++r) {
    const Held* held = calls[static_cast<size_t>(r)];
    store::CollectiveIssueRank part = rank_part(group, r, names);
    part.site = site_text(held->call);
    part.late_ns = held->call.time_ns - since;
    part.state = late(r) ? store::RankState::kCameLate : store::RankState::kWaited;
    if (late(r)) issue.waited_ns = std::max(issue.waited_ns, part.late_ns);
    issue.ranks.push_back(part);
  }
  out.push_back(std::move(found));
}

// A rank that fails soon after another exited normally, with no collective records to say more
// (DDP's own all-reduces under gloo are not visible to the hook): the ranks ran different numbers
// of steps, and the survivor's collective lost its peer. Not when their step counts agree: the
// survivor then failed in work of its own after the last step (saving, evaluating).
void CollectiveChecker::watch_uneven(int64_t now_ns, std::vector<FoundIssue>& out) {
  if (m_any_issue || !out.empty()) return;
  const store::ProcessRecord* exited = nullptr;
  const store::ProcessRecord* failed = nullptr;
  const Process* exited_process = nullptr;
  const Process* failed_process = nullptr;
  int world = 0;
  for (const auto& [pid, process] : m_processes) {
    if (process.rank < 0 || process.world_size < 2 || !process.end) continue;
    if (now_ns - grace_ns() < process.end->end_ns) return;
    if (ended_normally(*process.end)) {
      if (exited == nullptr || process.end->end_ns < exited->end_ns) {
        exited = &*process.end;
        exited_process = &process;
      }
    } else if (failed == nullptr || process.end->end_ns < failed->end_ns) {
      failed = &*process.end;
      failed_process = &process;
    }
    world = process.world_size;
  }
  // Ends are known when a launcher reaps them, at its own pace and order: a failure reaped up
  // to a second before the normal exit may have come after it.
  if (exited == nullptr || failed == nullptr || failed->end_ns + kReapSlackNs < exited->end_ns ||
      failed->end_ns - exited->end_ns > m_options.uneven_window_ns ||
      store::same_step_counts(exited_process->steps, failed_process->steps).value_or(false)) {
    return;
  }
  // A peer that died by a signal first is a crash, reported by its own rule.
  FoundIssue found;
  store::CollectiveIssue& issue = found.issue;
  issue.t_ns = now_ns;
  issue.kind = store::IssueKind::kUnevenInputs;
  issue.field = store::IssueField::kCalls;
  issue.first_ns = exited->end_ns;
  issue.group_size = world;
  issue.waited_ns = std::max<int64_t>(0, failed->end_ns - exited->end_ns);
  for (const store::ProcessRecord* p : {exited, failed}) {
    store::CollectiveIssueRank part;
    part.group_rank = p->rank.value_or(-1);
    part.job_rank = part.group_rank;
    part.pid = p->pid;
    part.start_ticks = p->start_ticks;
    part.state = store::RankState::kEnded;
    part.end = end_of(*p, false);
    part.calls = calls_of(p->pid);
    issue.ranks.push_back(part);
  }
  out.push_back(std::move(found));
}

void CollectiveChecker::steps_counted(int pid, store::StepKind kind, int64_t count) {
  auto it = m_processes.find(pid);
  if (it == m_processes.end()) return;
  int64_t& known = it->second.steps[kind];
  known = std::max(known, count);
}

std::vector<store::CollectiveCall> CollectiveChecker::take_late_ends() {
  return std::exchange(m_late_ends, {});
}

std::vector<store::CollectiveCall> CollectiveChecker::take_calls(bool all) {
  std::vector<store::CollectiveCall> out;
  for (auto& [id, group] : m_groups) {
    for (RankTrack& rank : group.ranks) {
      if (!all && !group.flush) continue;
      for (; rank.first_stored < rank.first.size(); ++rank.first_stored) {
        const Held& h = rank.first[rank.first_stored];
        out.push_back(to_store(h.call, h.pid, h.start_ticks, h.end_ns, h.raised));
        rank.stored_upto = std::max(rank.stored_upto, h.call.number);
      }
      for (const Held& h : rank.recent) {
        if (h.call.number <= rank.stored_upto) continue;
        out.push_back(to_store(h.call, h.pid, h.start_ticks, h.end_ns, h.raised));
        rank.stored_upto = h.call.number;
      }
    }
    group.flush = false;
  }
  return out;
}

}  // namespace traindoc::supervisor
