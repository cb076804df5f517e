// Rule: framework warnings that point at a bug whose results are silently wrong (a loss that
// broadcasts its targets against its input, softmax over a dimension it guessed, CUDA that did
// not start): a warning each, one for all the ranks that printed it. The job runs on and learns
// the wrong thing, or on the CPU; this is the only place it says so. Hints about speed alone are
// info. The words are the catalog entries' (signature_words.h); their describers are here. Pure.
#include "analysis/match_fields.h"
#include "analysis/rules.h"
#include "analysis/signature_words.h"
#include "analysis/traceback.h"

namespace traindoc::analysis {
namespace {

// " at train.py:52" where the warning names the user's line; a module's call names the
// library's own line, which says nothing.
std::string user_place(const SignatureMatch& m) {
  std::string file = field(m, "file");
  if (file.empty() || is_library_file(file)) return "";
  return " at " + file + ":" + field(m, "line");
}

}  // namespace

namespace words {

void loss_broadcast(const SignatureMatch& m, KnownFailure& f) {
  std::string target = shape(field(m, "target_shape"));
  std::string input = shape(field(m, "input_shape"));
  f.title = "a loss compares targets of shape " + target + " with predictions of shape " + input +
            user_place(m) + ": broadcasting pairs each prediction with every target";
  f.fix =
      "The loss is computed over every pair, not each sample with its own target, and "
      "training learns the wrong thing without an error. Give both the same shape: "
      "predictions.squeeze(-1) for a model with one output, or targets.unsqueeze(-1) "
      "(targets.view_as(predictions)).";
}

void cuda_init_warning(const SignatureMatch& m, KnownFailure& f) {
  f.title = "CUDA failed to start (" + field(m, "reason") +
            "): torch.cuda.is_available() is False, and code that falls back to the CPU "
            "trains there";
  f.fix = field(m, "reason").starts_with("CUDA unknown error")
              ? kCudaUnknownErrorFix
              : "Run nvidia-smi in the job's environment. A driver updated without a reboot (its "
                "kernel module no longer matches its libraries), CUDA_VISIBLE_DEVICES changed "
                "after CUDA started, a GPU in exclusive mode taken by another process, or a CUDA "
                "forward-compatibility package (cuda-compat) on the library path of a GPU that "
                "does not support it (Error 804) are the usual causes; a driver too old for this "
                "build says so.";
}

void softmax_implicit_dim(const SignatureMatch& m, KnownFailure& f) {
  std::string function = field(m, "function");
  f.title = function + " without dim" + user_place(m) +
            ": it picks dimension 0, the batch, for 0-, 1- and 3-dimensional inputs";
  f.fix = "Pass the dimension of the classes: " + function +
          "(x, dim=-1) (dim=1 for [N, C, H, W] "
          "images, nn.Softmax(dim=-1)). Normalizing across the batch gives probabilities that mix "
          "samples, without an error.";
}

}  // namespace words

void rule_framework_warning(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const TextMatch& text : context.texts.all_matches()) {
    const SignatureMatch& m = text.match;
    if (m.kind != FindingKind::kFrameworkWarning) continue;
    Finding f;
    f.kind = *m.kind;
    f.severity = Severity::kWarning;  // unless it is about speed alone
    f.confidence = 0.8;
    KnownFailure words = describe_match(m);
    f.title = std::move(words.title);
    f.fix = std::move(words.fix);
    if (words.info) f.severity = Severity::kInfo;
    const store::LogLine& line = *text.line;
    std::string printed = line.stream + " line " + std::to_string(line.number) +
                          context.when(line.t_ns) + ": " +
                          std::string(strip_launcher_prefix(line.text).text);
    const ProcessSummary* p = context.texts.owner(text);
    if (p != nullptr && runs_job_code(*p)) {
      f.pids = {p->record.pid};
      f.ranks = context.ranks_of(*p);
      f.evidence.push_back(context.name(*p) + " printed it, " + printed);
    } else {
      f.evidence.push_back("printed on " + printed);
    }
    // Each rank prints it once per place in the code and message (a last batch of another size
    // prints it again): one finding for all of them.
    std::string merge_key = "warning " + m.id + user_place(m);
    out.push_back({std::move(f), line.t_ns, p != nullptr ? p->record.pid : 0, merge_key});
  }
}

}  // namespace traindoc::analysis
