// Rule: what the supervisor's collective checker found while the job ran (collective-mismatch,
// collective-order, collective-missing, uneven-inputs, peer-exited), with each rank's part, the
// call sites, the stacks it collected and the fix. Pure.
#include <algorithm>
#include <sstream>

#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

constexpr size_t kStackLines = 12;  // of each rank's dump, in the evidence

std::string fix_for(const store::CollectiveIssue& issue) {
  if (issue.kind == "collective-order") {
    return "Issue collectives in the same order on every rank: no rank-dependent branches, "
           "early returns or iteration over unordered containers around them.";
  }
  if (issue.kind == "collective-missing") {
    return "Make the collective unconditional, or guard it identically on every rank (decide a "
           "skip collectively, e.g. all_reduce a flag with MAX); if the missing rank is only "
           "slower, balance its work or raise the process group timeout.";
  }
  if (issue.kind == "peer-exited") {
    return "Find why the rank that ended first failed (its own finding and log); the ranks that "
           "waited for it are victims, not causes.";
  }
  if (issue.kind == "uneven-inputs") {
    return "Give every rank the same number of batches (DistributedSampler with drop_last=True, "
           "or the DDP join() context manager), and decide to skip a batch collectively rather "
           "than per rank.";
  }
  if (issue.field == "shape" || issue.field == "count") {
    return "Pass tensors of the same shape on every rank: pad to a common size, or all-gather "
           "the sizes first and pad, then trim (or use all_gather_object).";
  }
  if (issue.field == "dtype") {
    return "Cast to one dtype on every rank before the call (e.g. .float() or .long()): a "
           "collective must see the same element type everywhere.";
  }
  if (issue.field == "reduce op") {
    return "Use the same reduce op on every rank: a different op silently corrupts the result.";
  }
  if (issue.field == "root") {
    return "Use the same root (src/dst) on every rank.";
  }
  return "Make the control flow around collectives rank-independent, so that every rank issues "
         "the same collective at the same point.";
}

std::string stack_excerpt(const std::string& stack) {
  std::istringstream lines(stack);
  std::string line;
  std::string out;
  for (size_t n = 0; n < kStackLines && std::getline(lines, line); ++n) {
    out += (out.empty() ? "" : " | ") + line;
  }
  return out;
}

}  // namespace

void rule_collectives(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const store::CollectiveIssue& issue : context.evidence.collective_issues) {
    TimedFinding timed;
    Finding& f = timed.finding;
    f.kind = issue.kind;
    f.severity = Severity::kError;
    f.title = issue.message.substr(issue.message.find(": ") + 2);
    f.fix = fix_for(issue);
    f.confidence = issue.kind == "uneven-inputs" ? 0.7 : 0.9;
    timed.t_ns = issue.first_ns;
    for (const store::CollectiveIssueRank& rank : issue.ranks) {
      const ProcessSummary* process = context.process(rank.pid, rank.start_ticks);
      std::string who = process ? context.name(*process) : "pid " + std::to_string(rank.pid);
      if (process) {
        for (int r : context.ranks_of(*process)) {
          if (std::find(f.ranks.begin(), f.ranks.end(), r) == f.ranks.end()) f.ranks.push_back(r);
        }
      }
      if (rank.pid != 0) f.pids.push_back(rank.pid);
      if (timed.pid == 0) timed.pid = rank.pid;
      std::string line =
          "group rank " + std::to_string(rank.group_rank) + ", " + who + ": " + rank.state;
      if (!rank.value.empty()) line += "; " + issue.field + " " + rank.value;
      if (!rank.site.empty()) line += "; at " + rank.site;
      if (!rank.last_call.empty()) line += "; last call " + rank.last_call;
      line += "; " + std::to_string(rank.calls) + " collective(s) completed";
      f.evidence.push_back(line);
      if (!rank.stack.empty()) f.evidence.push_back(who + " stack: " + stack_excerpt(rank.stack));
    }
    if (issue.kind == "uneven-inputs") {
      f.evidence.push_back(
          "step counts are not recorded in this run: the counts above are the collectives each "
          "rank completed through torch.distributed");
    }
    if (issue.aborted) {
      f.evidence.push_back("traindoc ended the job at this finding (--on-mismatch abort)");
    }
    out.push_back(std::move(timed));
  }
}

}  // namespace traindoc::analysis
