// The diagnosis of a job of several nodes from their node folders' evidence. Pure: no I/O.
#include "analysis/job_diagnosis.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <utility>

namespace traindoc::analysis {
namespace {

using CallKey = std::pair<uint64_t, uint64_t>;  // group, the call's number in it

// Calls that every rank of the group leaves only once all have come: their ends are one moment
// on every node. (Not a send or a broadcast's root, which may leave first.)
bool leaves_together(const store::CollectiveCall& call) {
  static const std::set<std::string, std::less<>> kTogether = {
      "all_reduce",        "all_gather",        "all_gather_into_tensor",
      "all_gather_object", "reduce_scatter",    "reduce_scatter_tensor",
      "all_to_all",        "all_to_all_single", "barrier"};
  return call.end_ns > 0 && !call.async && !call.raised && kTogether.contains(call.op);
}

template <typename T>
T median(std::vector<T> values) {
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// When each call that leaves together ended on the node: the median of its ranks' ends.
std::map<CallKey, int64_t> call_ends(const store::Evidence& evidence) {
  std::map<CallKey, std::vector<int64_t>> ends;
  for (const store::CollectiveCall& call : evidence.collectives) {
    if (leaves_together(call)) ends[{call.group, call.number}].push_back(call.end_ns);
  }
  std::map<CallKey, int64_t> out;
  for (auto& [key, times] : ends) out[key] = median(std::move(times));
  return out;
}

// `node`'s clock against `base`'s, from the calls both saw end; nullopt when they share none.
std::optional<NodeClock> clock_between(const std::map<CallKey, int64_t>& base,
                                       const std::map<CallKey, int64_t>& node) {
  std::vector<int64_t> differences;
  for (const auto& [key, end] : node) {
    auto it = base.find(key);
    if (it != base.end()) differences.push_back(end - it->second);
  }
  if (differences.empty()) return std::nullopt;
  NodeClock clock;
  clock.offset_ns = median(differences);
  clock.calls = differences.size();
  for (int64_t difference : differences) {
    clock.residual_ns = std::max(clock.residual_ns, std::abs(difference - clock.offset_ns));
  }
  return clock;
}

// Kinds in which a rank tells of another that went before it: never the job's root cause while
// a node holds a failure of its own.
bool tells_of_a_peer(const Finding& finding) {
  return finding.kind == FindingKind::kPeerExited ||
         finding.kind == FindingKind::kCollectiveMissing ||
         finding.kind == FindingKind::kRendezvousTimeout;
}

// The node's times read on the first node's clock.
void to_first_clock(Diagnosis& d, int64_t offset) {
  auto shift = [&](int64_t& t) {
    if (t != 0) t -= offset;
  };
  shift(d.run.start_ns);
  shift(d.run.end_ns);
  for (ProcessSummary& p : d.processes) {
    shift(p.record.start_ns);
    shift(p.record.end_ns);
    if (p.script_finished_ns) shift(*p.script_finished_ns);
    if (p.trained_after_ns) shift(*p.trained_after_ns);
  }
  for (Finding& f : d.findings) {
    shift(f.t_ns);
    if (!f.repeats) continue;
    shift(f.repeats->first_ns);
    shift(f.repeats->last_ns);
    for (Repeats::Example& example : f.repeats->examples) shift(example.t_ns);
  }
}

std::vector<int> ranks_of(const std::vector<ProcessSummary>& processes) {
  std::set<int> ranks;
  for (const ProcessSummary& p : processes) {
    if (p.role.role == Role::kRank && p.role.rank) ranks.insert(*p.role.rank);
  }
  return {ranks.begin(), ranks.end()};
}

// "2, 3 and 5", at most a dozen named.
std::string rank_list(const std::vector<int>& ranks) {
  constexpr size_t kNamed = 12;
  std::string out;
  for (size_t i = 0; i < ranks.size() && i < kNamed; ++i) {
    out += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  }
  if (ranks.size() > kNamed) out += " and " + std::to_string(ranks.size() - kNamed) + " more";
  return out;
}

// What the node folders together cannot tell.
void note_gaps(const std::vector<NodeEvidence>& nodes, Diagnosis& job) {
  for (size_t i = 1; i < job.nodes.size(); ++i) {
    if (job.nodes[i].clock.calls == 0) {
      job.missing_evidence.push_back(
          job.nodes[i].name + "'s clock is not aligned with " + job.nodes[0].name +
          "'s (no returned collective call of both was stored): its times are as its own clock "
          "gives them");
    }
  }
  for (const NodeSummary& node : job.nodes) {
    if (!node.ended) {
      job.missing_evidence.push_back(
          node.name +
          ": its traindoc did not see the job end (it was ended itself, or still runs): what "
          "happened there after its last record is unknown");
    }
  }
  int world = 0;
  for (const ProcessSummary& p : job.processes) {
    if (p.role.role == Role::kRank) world = std::max(world, p.record.world_size.value_or(0));
  }
  std::vector<int> seen = ranks_of(job.processes);
  std::vector<int> missing;
  for (int rank = 0; rank < world; ++rank) {
    if (!std::binary_search(seen.begin(), seen.end(), rank)) missing.push_back(rank);
  }
  if (!missing.empty()) {
    job.missing_evidence.push_back(
        std::string(missing.size() == 1 ? "rank " : "ranks ") + rank_list(missing) + " of " +
        std::to_string(world) + " ran on no node whose folder was given (" +
        std::to_string(nodes.size()) +
        " read): that node's folder is missing, and what happened there is unknown");
  }
  if (nodes.size() > 1) {
    job.missing_evidence.push_back(
        "collective calls were compared among the ranks of each node, not across nodes");
  }
}

// One root cause for the job: the earliest failure of its own among the nodes' root causes
// (else the earliest of them); the others that may follow from it become its consequences,
// with theirs. Findings are then ordered root first, the rest by time.
// Returns the root cause's index before the ordering; nullopt when no node has one.
std::optional<size_t> order_job_findings(const std::vector<size_t>& node_roots,
                                         std::vector<Finding>& findings) {
  auto moment = [&](size_t i) {
    return findings[i].t_ns != 0 ? findings[i].t_ns : std::numeric_limits<int64_t>::max();
  };
  std::optional<size_t> root;
  for (bool own : {true, false}) {
    for (size_t i : node_roots) {
      if (own == tells_of_a_peer(findings[i])) continue;
      if (!root || moment(i) < moment(*root)) root = i;
    }
    if (root) break;
  }
  if (!root) return std::nullopt;
  for (size_t i : node_roots) {
    if (i == *root) continue;
    Finding& other = findings[i];
    other.root_cause = false;
    if (!may_be_caused(other) || (!tells_of_a_peer(other) && moment(i) < moment(*root))) continue;
    std::vector<size_t>& caused = findings[*root].consequences;
    caused.push_back(i);
    caused.insert(caused.end(), other.consequences.begin(), other.consequences.end());
    other.consequences.clear();
  }
  std::vector<size_t> order(findings.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if ((a == *root) != (b == *root)) return a == *root;
    return moment(a) < moment(b);
  });
  std::vector<size_t> position(findings.size());
  for (size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
  std::vector<Finding> out;
  out.reserve(findings.size());
  for (size_t i : order) {
    Finding f = std::move(findings[i]);
    for (size_t& k : f.consequences) k = position[k];
    std::sort(f.consequences.begin(), f.consequences.end());
    out.push_back(std::move(f));
  }
  findings = std::move(out);
  return root;
}

}  // namespace

std::vector<NodeClock> align_clocks(const std::vector<NodeEvidence>& nodes) {
  std::vector<std::map<CallKey, int64_t>> ends;
  ends.reserve(nodes.size());
  for (const NodeEvidence& node : nodes) ends.push_back(call_ends(*node.evidence));
  std::vector<NodeClock> clocks(nodes.size());
  std::vector<bool> aligned(nodes.size(), false);
  if (!nodes.empty()) aligned[0] = true;
  // Node by node from the aligned ones: a node may share calls only with another (a group of
  // its own), which shares some with the first.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (aligned[i]) continue;
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (!aligned[j]) continue;
        std::optional<NodeClock> clock = clock_between(ends[j], ends[i]);
        if (!clock) continue;
        clock->offset_ns += clocks[j].offset_ns;
        clock->residual_ns += clocks[j].residual_ns;
        clocks[i] = *clock;
        aligned[i] = progress = true;
        break;
      }
    }
  }
  return clocks;
}

Diagnosis diagnose_job(const std::vector<NodeEvidence>& nodes) {
  std::vector<NodeClock> clocks = align_clocks(nodes);
  Diagnosis job;
  std::vector<size_t> node_roots;
  std::vector<size_t> finding_node;  // of each finding
  std::vector<store::RunInfo> runs;
  for (size_t i = 0; i < nodes.size(); ++i) {
    Diagnosis d = diagnose(*nodes[i].evidence);
    to_first_clock(d, clocks[i].offset_ns);
    job.nodes.push_back(
        {nodes[i].name, d.run.hostname, clocks[i], d.run.end_ns != 0, ranks_of(d.processes)});
    if (i == 0) {
      job.run = d.run;
    } else {
      if (d.run.start_ns != 0) job.run.start_ns = std::min(job.run.start_ns, d.run.start_ns);
      job.run.end_ns =
          job.run.end_ns == 0 || d.run.end_ns == 0 ? 0 : std::max(job.run.end_ns, d.run.end_ns);
    }
    runs.push_back(d.run);
    for (GpuSummary& gpu : d.gpus) gpu.node = nodes[i].name;
    for (std::string& line : d.missing_evidence) {
      job.missing_evidence.push_back(nodes[i].name + ": " + std::move(line));
    }
    size_t base = job.findings.size();
    for (Finding& f : d.findings) {
      for (size_t& k : f.consequences) k += base;
      if (f.root_cause) node_roots.push_back(job.findings.size());
      finding_node.push_back(i);
      job.findings.push_back(std::move(f));
    }
    std::move(d.processes.begin(), d.processes.end(), std::back_inserter(job.processes));
    std::move(d.gpus.begin(), d.gpus.end(), std::back_inserter(job.gpus));
  }
  job.run.node.clear();
  note_gaps(nodes, job);
  // The job ended as the root cause's node did; as the first node did where none has one.
  if (std::optional<size_t> root = order_job_findings(node_roots, job.findings)) {
    const store::RunInfo& ended = runs[finding_node[*root]];
    job.run.exit_code = ended.exit_code;
    job.run.exit_signal = ended.exit_signal;
  }
  return job;
}

}  // namespace traindoc::analysis
