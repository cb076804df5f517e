// Rule: a process exited with a non-zero code and nothing more specific explains it. The
// finding cites the Python exception it printed last, where the output shows one. Pure.
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "analysis/rules.h"
#include "analysis/signatures.h"

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

// What to do about the failures whose exception text says enough by itself.
std::string fix_for(const std::string& kind) {
  static const std::map<std::string, std::string> kFixes = {
      {"label-out-of-range",
       "A target label is outside [0, classes): the dataset's void label (255 in Cityscapes) is "
       "not ignored. Use CrossEntropyLoss(ignore_index=255) or remap the labels."},
      {"index-out-of-range",
       "An index exceeds its dimension: check the ids fed to the embedding "
       "or gather against its size."},
      {"ddp-unused-parameters",
       "Some parameters took no part in the loss, so DDP's reduction never finished. Use every "
       "output in the loss, remove the unused layers, or pass find_unused_parameters=True."},
      {"ddp-model-mismatch",
       "The model differs across ranks: build it identically everywhere "
       "(same config, same conditional layers) before wrapping in DDP."},
      {"rendezvous-timeout",
       "A store key that no rank ever wrote: a rank never reached the same rendezvous (it "
       "crashed, used another MASTER_PORT or group name). Find the rank that should have set it."},
      {"worker-timeout",
       "DataLoader workers are alive but slower than `timeout`: find the slow "
       "or blocked __getitem__ (py-spy dump), or raise the timeout."},
      {"collective-mismatch",
       "Ranks called the same collective with different shapes, dtypes or "
       "ops: make every rank issue identical collectives (pad, or "
       "all-gather the sizes first)."},
      {"host-alloc-failed",
       "One allocation was refused: the requested size is often a shape bug "
       "(a wrong dimension multiplied in); check it before adding memory."},
      {"fd-exhausted",
       "File descriptors ran out: raise `ulimit -n`, or use "
       "torch.multiprocessing.set_sharing_strategy('file_system')."},
  };
  auto it = kFixes.find(kind);
  return it == kFixes.end() ? "Read the traceback above this line in logs/stderr.log." : it->second;
}

}  // namespace

void rule_failed_exit(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.exit_code || *r.exit_code == 0) continue;
    if (p.role.role == Role::kOther && r.pid != context.evidence.run.root_pid) continue;
    // A dedicated rule that ran first (GPU memory, CUDA errors) explained this process already.
    if (std::any_of(out.begin(), out.end(),
                    [&r](const TimedFinding& t) { return t.pid == r.pid; })) {
      continue;
    }
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
      // A known text names the kind of failure and the numbers in it. Texts that report another
      // process's end (a worker killed, a peer gone) stay this process's exception: the other
      // process's own finding comes from its end and is the cause.
      for (const SignatureMatch& match : match_line(line->text)) {
        if (!match.failure || match.kind.empty()) continue;
        static const std::set<std::string> kAboutAnother = {"worker-crash", "worker-exit",
                                                            "peer-exited", "host-oom-killed"};
        if (!kAboutAnother.contains(match.kind)) f.kind = match.kind;
        std::string fields;
        for (const auto& [name, value] : match.fields) {
          if (name != "prefix" && name != "prefix_rank") {
            fields += (fields.empty() ? "" : ", ") + name + " " + value;
          }
        }
        f.evidence.push_back("known error " + match.id + (fields.empty() ? "" : ": " + fields));
        break;
      }
      f.fix = fix_for(f.kind);
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
