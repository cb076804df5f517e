// Rule: a process exited with a non-zero code and nothing more specific explains it. The
// finding cites the Python exception it printed last, where the output shows one. Pure.
#include <regex>

#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

constexpr int64_t kBeforeNs = 60'000'000'000;
constexpr int64_t kAfterNs = 2'000'000'000;

// The last "SomethingError: message" line printed around the end of the process. Launchers
// prefix ranks' lines ("[default0]:", "[rank1]:"), so the pattern skips such a prefix.
const store::LogLine* last_exception(const store::Evidence& evidence, int64_t end_ns) {
  static const std::regex exception_line(
      R"(^(\[[^\]]*\]:?)?\s*([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure))(: |$))");
  const store::LogLine* found = nullptr;
  for (const store::LogLine& line : evidence.log_lines) {
    if (line.stream != "stderr" || line.t_ns < end_ns - kBeforeNs ||
        line.t_ns > end_ns + kAfterNs) {
      continue;
    }
    if (std::regex_search(line.text, exception_line)) found = &line;
  }
  return found;
}

}  // namespace

void rule_failed_exit(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.exit_code || *r.exit_code == 0) continue;
    if (p.role.role == Role::kOther && r.pid != context.evidence.run.root_pid) continue;
    Finding f;
    f.pids = {r.pid};
    f.ranks = context.ranks_of(p);
    std::string who = context.name(p);
    f.evidence.push_back(who + " exited with code " + std::to_string(*r.exit_code));
    if (p.role.role == Role::kWorker) {
      f.kind = "worker-exit";
      f.title = who + " exited with code " + std::to_string(*r.exit_code);
      f.fix =
          "A DataLoader worker raised or called exit: run with num_workers=0 to see the "
          "error in the main process.";
    } else if (const store::LogLine* line = last_exception(context.evidence, r.end_ns)) {
      f.kind = "python-exception";
      f.title = who + " raised " + line->text.substr(0, 200);
      f.evidence.push_back(line->stream + " line " + std::to_string(line->number) + ": " +
                           line->text);
      f.fix = "Read the traceback above this line in logs/stderr.log.";
    } else {
      f.kind = p.role.role == Role::kLauncher ? "launcher-exit" : "nonzero-exit";
      f.title = who + " exited with code " + std::to_string(*r.exit_code);
      f.fix = "See the process's last output in logs/.";
    }
    f.confidence = 0.5;
    out.push_back({std::move(f), r.end_ns, r.pid});
  }
}

}  // namespace traindoc::analysis
