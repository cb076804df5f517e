// Rule: a rank failed because a peer had gone ("Connection closed by peer", "Connection reset
// by peer"). That is never the root cause: the peer's end is. A peer that died has its own
// finding; a peer that exited normally while this rank still waited for it left a collective
// unmatched, which becomes the root cause here. Pure.
#include <algorithm>
#include <optional>
#include <set>

#include "analysis/known_failure.h"
#include "analysis/rules.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr int64_t kSlackNs = 1'000'000'000;

std::string how_it_ended(const store::ProcessRecord& r) {
  if (r.exit_signal) return "died of " + signal_name(*r.exit_signal);
  if (r.exit_code) return "exited with code " + std::to_string(*r.exit_code);
  return "ended";
}

bool clean_exit(const store::ProcessRecord& r) {
  return r.exit_code == 0 && !r.exit_signal;
}

// The other rank that ended first, before `t_ns`: the one this rank lost. Ends are seen late (a
// walk every second, a launcher that reaps late); a rank that exited normally cannot have been
// stopped because of this failure, so it counts whenever its end was seen (it may also have
// closed its connections before it exited, with destroy_process_group).
const ProcessSummary* first_gone(const RuleContext& context, const ProcessSummary& victim,
                                 int64_t t_ns) {
  const ProcessSummary* found = nullptr;
  for (const ProcessSummary& p : context.processes) {
    if (&p == &victim || p.role.role != Role::kRank || p.role.rank == victim.role.rank) continue;
    if (p.record.end_ns == 0 ||
        (p.record.end_ns > store::shifted_ns(t_ns, kSlackNs) && !clean_exit(p.record))) {
      continue;
    }
    if (found == nullptr || p.record.end_ns < found->record.end_ns) found = &p;
  }
  return found;
}

// "optimizer steps: rank 1 3, rank 0 4" for each kind of step both ranks counted differently.
std::vector<std::string> step_differences(const ProcessSummary& a, const ProcessSummary& b) {
  std::vector<std::string> out;
  for (const auto& [kind, count] : a.steps) {
    auto other = b.steps.find(kind);
    if (other == b.steps.end() || other->second == count) continue;
    out.push_back(std::string(store::to_string(kind)) + " steps: " + describe(a.role) + " ran " +
                  std::to_string(count) + ", " + describe(b.role) + " " +
                  std::to_string(other->second));
  }
  return out;
}

std::optional<int64_t> count_of(const ProcessSummary& p, store::StepKind kind) {
  auto it = p.steps.find(kind);
  return it == p.steps.end() ? std::nullopt : std::optional<int64_t>(it->second);
}

// Both ranks ran the same training steps (backward, optimizer: each where both counted it) and
// different numbers of forwards through the DDP model: forwards outside training (evaluation on
// one rank), not uneven inputs.
bool forwards_only(const ProcessSummary& a, const ProcessSummary& b) {
  bool compared = false;
  for (store::StepKind kind : {store::StepKind::kBackward, store::StepKind::kOptimizer}) {
    std::optional<int64_t> x = count_of(a, kind);
    std::optional<int64_t> y = count_of(b, kind);
    if (!x || !y) continue;
    if (*x != *y) return false;
    compared = true;
  }
  std::optional<int64_t> x = count_of(a, store::StepKind::kDdpForward);
  std::optional<int64_t> y = count_of(b, store::StepKind::kDdpForward);
  return compared && x && y && *x != *y;
}

Finding early_exit(const RuleContext& context, const ProcessSummary& peer,
                   const ProcessSummary& victim, const std::string& victim_line) {
  Finding f;
  // With the step counts of both, a different number of steps is the story; without them (or
  // equal), a collective the leaving rank never issued.
  std::vector<std::string> uneven = step_differences(peer, victim);
  f.kind = uneven.empty() ? FindingKind::kCollectiveMissing : FindingKind::kUnevenInputs;
  f.title = context.name(peer) + " finished (exit code 0) while " + context.name(victim) +
            " still waited for it in a collective";
  f.ranks = context.ranks_of(peer);
  f.pids = {peer.record.pid};
  if (forwards_only(peer, victim)) {
    // The rank that ran the extra forwards made the collective its peer never made.
    const ProcessSummary& more = *count_of(victim, store::StepKind::kDdpForward) >
                                         *count_of(peer, store::StepKind::kDdpForward)
                                     ? victim
                                     : peer;
    const ProcessSummary& other = &more == &victim ? peer : victim;
    f.kind = FindingKind::kCollectiveMissing;
    f.title = context.name(more) + " ran forwards through the DDP model that " +
              context.name(other) + " did not, with the same training steps (code that only " +
              describe(more.role) + " runs, e.g. evaluation under `if rank == 0:`); " +
              context.name(peer) + " then finished (exit code 0) while " + context.name(victim) +
              " still waited for it in a collective";
    f.ranks = context.ranks_of(more);
    f.pids = {more.record.pid};
  }
  f.evidence.push_back(context.name(peer) + " exited with code 0 first" +
                       context.when(peer.record.end_ns));
  f.evidence.push_back(context.name(victim) + " then failed: " + victim_line);
  f.evidence.insert(f.evidence.end(), uneven.begin(), uneven.end());
  if (f.kind == FindingKind::kCollectiveMissing && !uneven.empty()) {
    f.fix = kDdpForwardOnlyFix;
    f.confidence = 0.7;
    return f;
  }
  f.fix =
      "The ranks did not issue the same collectives: this rank skipped one (a rank-dependent "
      "branch, a `continue` before backward, an early return) or ran fewer batches, then left. "
      "Make every rank issue the same collectives (decide skips collectively: all_reduce a flag "
      "with MIN/MAX), give every rank the same number of batches (DistributedSampler with "
      "drop_last, or the DDP join() context manager for uneven inputs).";
  f.confidence = 0.7;
  return f;
}

}  // namespace

void rule_peer_exited(const RuleContext& context, std::vector<TimedFinding>& out) {
  std::set<const ProcessSummary*> blamed;
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (p.role.role != Role::kRank || !r.exit_code || *r.exit_code == 0) continue;
    const PythonTraceback* tb = context.texts.final_exception(p);
    if (tb == nullptr) continue;
    auto known = describe_known(context.texts.signatures(*tb));
    if (!known || known->kind != FindingKind::kPeerExited) continue;
    const ProcessSummary* peer = first_gone(context, p, tb->t_ns);
    Finding f;
    f.kind = FindingKind::kPeerExited;
    f.ranks = context.ranks_of(p);
    f.pids = {r.pid};
    std::string who = context.name(p);
    if (peer != nullptr) {
      f.title = who + " lost its connection to " + context.name(*peer) + ", which had " +
                how_it_ended(peer->record) + " before";
      if (peer->role.rank) f.ranks.push_back(*peer->role.rank);
      f.evidence.push_back(context.name(*peer) + " " + how_it_ended(peer->record) + " first" +
                           context.when(peer->record.end_ns));
    } else {
      f.title = who + " lost its connection to a peer: " + exception_summary(*tb);
    }
    std::vector<std::string> cited = traceback_evidence(context, *tb);
    f.evidence.insert(f.evidence.end(), cited.begin(), cited.end());
    f.evidence.insert(f.evidence.end(), known->evidence.begin(), known->evidence.end());
    f.fix = "Not a network fault: the peer process had already ended. Fix the root cause above.";
    f.confidence = 0.8;
    // The connection was lost when the peer ended, whenever this rank printed it (the ranks'
    // lines pass through the launcher in any order): after the peer's own failure, and before
    // the collective checker's account of the same end (rule_collectives).
    int64_t lost_ns = peer != nullptr ? store::shifted_ns(peer->record.end_ns, 1) : tb->t_ns;
    out.push_back({std::move(f), lost_ns, r.pid, merge_key(FindingKind::kPeerExited, "")});
    // A peer that left after a call only this rank made (rank-0-only code) is no cause.
    bool clean = peer != nullptr && clean_exit(peer->record) && !odd_call_found(context);
    if (clean && blamed.insert(peer).second) {
      // The exit caused the failure, so it came first, whenever its end was seen.
      int64_t t_ns = std::min(peer->record.end_ns, store::shifted_ns(tb->t_ns, -1));
      Finding cause = early_exit(context, *peer, p, exception_summary(*tb));
      std::string key = merge_key(cause.kind, "");
      out.push_back({std::move(cause), t_ns, peer->record.pid, std::move(key)});
    }
  }
}

}  // namespace traindoc::analysis
