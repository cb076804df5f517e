// The OOM evidence of a SIGKILLed process: the kernel log, its own memory cgroup, the machine.
// Analysis; pure.
#include "analysis/oom_facts.h"

#include <algorithm>
#include <cstdint>

#include "analysis/diagnosis.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr double kNearLimit = 0.95;
constexpr int64_t kAroundNs = 5'000'000'000;
// How far back the growth before a kill is told from.
constexpr int64_t kGrowthWindowNs = 60'000'000'000;
// The kernel logs its kill a moment before the process is seen gone.
constexpr int64_t kKernelSlackNs = 2'000'000'000;

// One reading of a memory cgroup: of the process's own (cgroup_samples), or traindoc's
// (host_samples) for a run that did not record the process's own.
struct Point {
  int64_t t_ns = 0;
  std::optional<uint64_t> current;
  std::optional<uint64_t> max;
  std::optional<uint64_t> oom_kills;
  std::string limit_dir;
};

// The process's memory cgroup at its end: its last membership row from before then.
const store::ProcessCgroup* cgroup_at_end(const store::Evidence& evidence,
                                          const store::ProcessRecord& r) {
  const store::ProcessCgroup* found = nullptr;
  for (const store::ProcessCgroup& m : evidence.process_cgroups) {
    if (m.pid != r.pid || (m.start_ticks != r.start_ticks && r.start_ticks != 0)) continue;
    if (r.end_ns != 0 && m.t_ns > r.end_ns && found != nullptr) break;
    found = &m;
  }
  return found;
}

const store::KernelOomKill* kernel_kill(const store::Evidence& evidence,
                                        const store::ProcessRecord& r) {
  for (const store::KernelOomKill& k : evidence.kernel_oom_kills) {
    if (k.pid != r.pid) continue;
    // Pids are reused: the kill must fall within this process's life.
    if (r.start_ns != 0 && store::shifted_ns(k.t_ns, kKernelSlackNs) < r.start_ns) continue;
    if (r.end_ns != 0 && k.t_ns > store::shifted_ns(r.end_ns, kKernelSlackNs)) continue;
    return &k;
  }
  return nullptr;
}

// Whether the kernel log lost records that could have told of the process's kill, which the kernel
// writes as it kills, a moment before the process is seen gone: a loss whose records were written
// (after the last read to the log's end before it, before it was found) around its end.
bool kernel_log_lost_around(const store::Evidence& evidence, const store::ProcessRecord& r) {
  const int64_t from = r.end_ns != 0 ? store::shifted_ns(r.end_ns, -kAroundNs)
                                     : store::shifted_ns(r.start_ns, -kKernelSlackNs);
  const int64_t to = r.end_ns != 0 ? store::shifted_ns(r.end_ns, kKernelSlackNs) : INT64_MAX;
  // Past the cap on events, those between the first kept and the newest are gone: a loss may
  // have been anywhere from the first to the last kept.
  const bool rolled = evidence.events_dropped.contains(
      std::string(store::to_string(store::EventKind::kKernelLogRecordsLost)));
  std::optional<int64_t> first_after;
  int64_t last_found = INT64_MIN;
  for (const store::Event& e : evidence.events) {
    if (e.kind != store::EventKind::kKernelLogRecordsLost) continue;
    // Without its start, the loss may have begun at any time before it was found.
    const int64_t after = e.b.value_or(0);
    if (e.t_ns >= from && after < to) return true;
    first_after = std::min(first_after.value_or(after), after);
    last_found = std::max(last_found, e.t_ns);
  }
  return rolled && first_after && last_found >= from && *first_after < to;
}

std::string kernel_words(const store::KernelOomKill& k) {
  std::string out = "the kernel log: \"" +
                    std::string(k.memcg ? "Memory cgroup out of memory" : "Out of memory") +
                    ": Killed process " + std::to_string(k.pid) + " (" + k.comm + ")\"";
  if (k.anon_rss) out += ", with " + format_bytes(*k.anon_rss) + " of anonymous memory";
  if (k.memcg && !k.oom_cgroup.empty()) {
    out += "; the limit hit was that of cgroup " + k.oom_cgroup;
  } else if (!k.memcg) {
    out += "; the machine itself ran out of memory";
  }
  return out;
}

// The cgroup's count of OOM kills rose across `t_ns` (not merely since the run began: an
// earlier kill of another process is no evidence), it was at its limit, and how it grew.
void cgroup_evidence(const std::vector<Point>& points, int64_t t_ns, int64_t since_ns,
                     const std::string& name, OomFacts& facts) {
  std::optional<uint64_t> baseline;  // the last count well before the death, else the first
  std::optional<uint64_t> after;     // the first count at or after it, else the last before
  for (const Point& p : points) {
    if (!p.oom_kills) continue;
    if (p.t_ns <= store::shifted_ns(t_ns, -kAroundNs) || !baseline) baseline = p.oom_kills;
    if (p.t_ns >= t_ns && !after) after = p.oom_kills;
  }
  if (!after) {
    for (const Point& p : points) {
      if (p.oom_kills && p.t_ns <= t_ns) after = p.oom_kills;
    }
  }
  bool counted = baseline && after && *after > *baseline;
  if (counted) {
    facts.evidence.push_back(name + " counted an OOM kill: its oom_kill count rose from " +
                             std::to_string(*baseline) + " to " + std::to_string(*after));
  }
  // The limit and the peak before the end; the usage after it has fallen with the kill.
  const Point* peak = nullptr;
  const Point* first = nullptr;
  for (const Point& p : points) {
    if (p.max) {
      facts.limit = p.max;
      facts.limit_dir = p.limit_dir;
    }
    if (!p.current || p.t_ns > t_ns ||
        p.t_ns < std::max(since_ns, store::shifted_ns(t_ns, -kGrowthWindowNs))) {
      continue;
    }
    if (first == nullptr) first = &p;
    if (peak == nullptr || *p.current >= *peak->current) peak = &p;
  }
  bool near = false;
  for (const Point& p : points) {
    if (store::distance_ns(p.t_ns, t_ns) > kAroundNs || !p.current || !p.max || *p.max == 0) {
      continue;
    }
    if (static_cast<double>(*p.current) >= kNearLimit * static_cast<double>(*p.max)) {
      facts.evidence.push_back(name + " at " + format_bytes(*p.current) + " of its " +
                               format_bytes(*p.max) + " limit");
      near = true;
      break;
    }
  }
  if ((counted || near) && first != nullptr && peak != first && *peak->current > *first->current) {
    std::string growth = name + " grew from " + format_bytes(*first->current) + " to " +
                         format_bytes(*peak->current);
    if (std::optional<int64_t> span = store::duration_ns(first->t_ns, t_ns)) {
      growth += " in the " + format_seconds(*span) + " before the kill";
    } else {
      growth += " before the kill";
    }
    if (facts.limit) growth += " (its limit: " + format_bytes(*facts.limit) + ")";
    facts.evidence.push_back(growth);
  }
  if (!counted && !near) {
    facts.checked.push_back(name + " counted no OOM kill" +
                            (facts.limit
                                 ? " and was not near its " + format_bytes(*facts.limit) + " limit"
                                 : " and has no limit"));
  }
}

}  // namespace

const store::ProcessCgroup* memory_cgroup_at(const store::Evidence& evidence,
                                             const store::ProcessRecord& r, int64_t t_ns,
                                             std::string& whose) {
  store::ProcessRecord at = r;
  at.end_ns = t_ns;
  whose = "its";
  if (const store::ProcessCgroup* own = cgroup_at_end(evidence, at)) return own;
  if (r.ppid == 0) return nullptr;
  // Gone before any walk read its own: a process starts in its parent's cgroup.
  store::ProcessRecord parent;
  parent.pid = r.ppid;
  for (const store::ProcessRecord& q : evidence.processes) {
    if (q.pid == r.ppid && (q.end_ns == 0 || q.end_ns >= r.start_ns)) parent = q;
  }
  parent.end_ns = r.start_ns;
  whose = "its parent's";
  return cgroup_at_end(evidence, parent);
}

OomFacts oom_facts(const store::Evidence& evidence, const store::ProcessRecord& r) {
  OomFacts facts;
  const int64_t t_ns = r.end_ns;
  const store::KernelOomKill* kernel = kernel_kill(evidence, r);
  if (kernel != nullptr) {
    facts.evidence.push_back(kernel_words(*kernel));
    facts.machine = !kernel->memcg;
  }
  std::string whose;
  const store::ProcessCgroup* member = memory_cgroup_at(evidence, r, r.end_ns, whose);
  std::vector<Point> points;
  int64_t since_ns = r.start_ns;
  if (member != nullptr && !member->dir.empty()) {
    // Its own cgroup, wherever traindoc's is: never a fact of a cgroup it was not in.
    facts.cgroup_dir = member->dir;
    facts.cgroup = whose + " memory cgroup " + member->dir;
    since_ns = std::max(since_ns, member->t_ns);
    for (const store::CgroupSample& s : evidence.cgroup_samples) {
      if (s.dir == member->dir)
        points.push_back({s.t_ns, s.current, s.max, s.oom_kills, s.limit_dir});
    }
  } else if (member == nullptr && evidence.process_cgroups.empty()) {
    // A run that recorded no process's cgroup (before schema 12): traindoc's own, said so.
    facts.cgroup = "traindoc's own memory cgroup";
    for (const store::HostSample& s : evidence.host_samples) {
      if (s.cgroup_version != 0)
        points.push_back({s.t_ns, s.cgroup_current, s.cgroup_max, s.cgroup_oom_kills, ""});
    }
  }
  if (!points.empty()) {
    cgroup_evidence(points, t_ns, since_ns, facts.cgroup, facts);
  } else {
    facts.checked.push_back(member != nullptr ? "its memory cgroup could not be read"
                                              : "its memory cgroup was not recorded");
  }
  for (const store::HostSample& s : evidence.host_samples) {
    if (store::distance_ns(s.t_ns, t_ns) > kAroundNs) continue;
    if (s.mem_total > 0 && s.mem_available < s.mem_total / 33) {
      facts.evidence.push_back("the machine had " + format_bytes(s.mem_available) +
                               " available of " + format_bytes(s.mem_total));
      facts.machine = facts.machine || kernel == nullptr;
      break;
    }
  }
  bool log_read = evidence.schema_version >= 12 &&
                  std::none_of(evidence.events.begin(), evidence.events.end(), [](const auto& e) {
                    return e.kind == store::EventKind::kKernelLogUnavailable;
                  });
  if (kernel == nullptr) {
    const std::string pid = std::to_string(r.pid);
    if (!log_read) {
      facts.checked.push_back("the kernel log was not read");
    } else if (kernel_log_lost_around(evidence, r)) {
      // Its silence is no evidence: the kill's record may be among those lost.
      facts.checked.push_back("the kernel log lost records around the end of pid " + pid +
                              ", so its account of an OOM kill of it may be missing");
    } else {
      facts.checked.push_back("the kernel log told no OOM kill of pid " + pid);
    }
  }
  return facts;
}

std::string kernel_log_loss_words(const store::Event& loss) {
  const int64_t lost = loss.a.value_or(0);
  // "At least": a gap whose size the kernel did not tell counts one.
  return "at least " + std::to_string(lost) + " kernel log " +
         (lost == 1 ? "record was" : "records were") +
         " lost (overwritten by the kernel before traindoc read them): an OOM kill told in "
         "them is not known";
}

}  // namespace traindoc::analysis
