// Rule: a CUDA kernel failed in a process: a device-side assertion (named label-out-of-range or
// index-out-of-range where the assertion says so, as Cityscapes' void label 255 does) or an
// illegal memory access. The kernels' own assertion lines, printed before the Python
// exception, say which kernel and which check, also where the exception is a later CUDA library
// error. Pure.
#include <algorithm>

#include "analysis/gpu_facts.h"
#include "analysis/rules.h"
#include "analysis/signature_words.h"

namespace traindoc::analysis {
namespace {

// A kernel's own assertion line, which names the block and the thread (cuda.device-assertion's
// required part), beside the checks of label and index kernels it may also match.
bool kernel_assertion(const SignatureMatch& m) {
  return m.kind == FindingKind::kDeviceSideAssert && m.fields.contains("block");
}

struct Assertions {
  std::map<std::string, std::string> kernel;  // cuda.device-assertion's block, thread, file, line
  std::optional<FindingKind> kind;            // label-out-of-range or index-out-of-range, if said
  std::string line;
  size_t count = 0;
};

// The assertion lines of the same stream and launcher prefix as the traceback, just before it
// or, flushed at exit, just after it.
Assertions assertions_near(const RuleContext& context, const PythonTraceback& tb) {
  Assertions out;
  for (const store::LogLine* line : lines_near(context.evidence, tb, true)) {
    if (line->text.find("Assertion `") == std::string::npos) continue;
    bool counted = false;
    for (const SignatureMatch& m : match_line(line->text)) {
      if (kernel_assertion(m) || m.kind == FindingKind::kLabelOutOfRange ||
          m.kind == FindingKind::kIndexOutOfRange) {
        if (!counted) ++out.count;
        counted = true;
        if (out.line.empty()) out.line = line->text;
        if (!out.kind && m.kind != FindingKind::kDeviceSideAssert) out.kind = m.kind;
        if (kernel_assertion(m) && out.kernel.empty()) out.kernel = m.fields;
      }
    }
  }
  return out;
}

std::string fix_for(FindingKind kind, bool kernel_known) {
  // The kernel's assertion names neither the label nor the class count.
  if (kind == FindingKind::kLabelOutOfRange)
    return words::label_fix(std::nullopt, std::nullopt, std::nullopt);
  if (kind == FindingKind::kIndexOutOfRange) {
    return "An index exceeds its dimension on the GPU: check the ids fed to the embedding, "
           "gather or index_select against its size (vocabulary, number of classes).";
  }
  std::string rerun =
      kernel_known ? ""
                   : "The failing kernel is unknown (CUDA reports errors asynchronously): rerun "
                     "with CUDA_LAUNCH_BLOCKING=1 so that the traceback points at it. ";
  if (kind == FindingKind::kCudaIllegalAccess) {
    return rerun +
           "An illegal address is an out-of-bounds access in a kernel (often an index or label "
           "out of range in a custom or fused op), or, inside NCCL, ranks calling a collective "
           "with different sizes; compute-sanitizer python train.py names the access.";
  }
  return rerun + "Read the assertion: it names the check that failed and the kernel's file.";
}

// A CUDA library's error of no kind of its own (a bare `CUDA error: ...`, cuBLAS's or cuDNN's
// status).
bool gpu_library_error(const PrintedFailure& failure) {
  return std::any_of(failure.matches.begin(), failure.matches.end(), [](const SignatureMatch& m) {
    const SignatureInfo* info = find_signature(m.id);
    return info != nullptr && info->framework == "cuda";
  });
}

// A kernel failure, with the assertions its process printed around it.
struct KernelFailure {
  PrintedFailure failure;
  Assertions found;
};

// The kernel failures: the errors that say so, and a CUDA library's error raised after kernels
// of the process printed assertions, which is their echo at a later call (PyTorch 2.11 on an
// H200: the label's assertion in the loss, then `cuDNN error: CUDNN_STATUS_INTERNAL_ERROR` at
// backward).
std::vector<KernelFailure> kernel_failures(const RuleContext& context,
                                           const std::vector<PythonTraceback>& tracebacks) {
  std::vector<KernelFailure> out;
  for (PrintedFailure& failure :
       printed_failures(context, tracebacks,
                        {FindingKind::kDeviceSideAssert, FindingKind::kCudaIllegalAccess})) {
    Assertions found = assertions_near(context, *failure.traceback);
    out.push_back({std::move(failure), std::move(found)});
  }
  for (PrintedFailure& echo : printed_failures(context, tracebacks, {std::nullopt})) {
    bool told = std::any_of(out.begin(), out.end(), [&](const KernelFailure& k) {
      return k.failure.process == echo.process;
    });
    if (told || !gpu_library_error(echo)) continue;
    Assertions found = assertions_near(context, *echo.traceback);
    if (found.count == 0) continue;
    echo.kind = FindingKind::kDeviceSideAssert;
    out.push_back({std::move(echo), std::move(found)});
  }
  return out;
}

}  // namespace

void rule_cuda_error(const RuleContext& context, std::vector<TimedFinding>& out) {
  const std::vector<PythonTraceback>& tracebacks = context.texts.all_tracebacks();
  for (const auto& [failure, found] : kernel_failures(context, tracebacks)) {
    const PythonTraceback& tb = *failure.traceback;
    Finding f;
    f.kind = found.kind ? *found.kind : *failure.kind;
    std::string who = failure.process ? context.name(*failure.process) : "a process";
    int pid = failure.process ? failure.process->record.pid : 0;
    if (failure.process) {
      f.pids = {pid};
      f.ranks = context.ranks_of(*failure.process);
    }
    const auto& kernel = found.kernel;
    if (!kernel.empty()) {
      std::string assertion = kernel.contains("assertion") ? kernel.at("assertion") : "";
      std::string place =
          kernel.contains("file")
              ? kernel.at("file") + ":" + (kernel.contains("line") ? kernel.at("line") : "?")
              : "";
      f.title = who + ": a CUDA kernel assertion failed: `";
      f.title += assertion + "`";
      if (!place.empty()) f.title += " in " + place;
      f.evidence.push_back(tb.stream + ": " + found.line.substr(0, 400));
      if (found.count > 1) {
        f.evidence.push_back(std::to_string(found.count) + " GPU threads printed this assertion");
      }
    } else {
      f.title = who + ": " +
                (f.kind == FindingKind::kCudaIllegalAccess
                     ? "a CUDA kernel accessed an illegal address"
                     : "a CUDA kernel assertion failed (device-side assert)");
    }
    if (f.kind == FindingKind::kLabelOutOfRange)
      f.title += " (a target label outside [0, classes))";
    if (f.kind == FindingKind::kIndexOutOfRange) f.title += " (an index beyond its dimension)";
    std::string line = tb.exception_type + ": " + tb.message.substr(0, tb.message.find('\n'));
    f.evidence.push_back(who + ", " + tb.stream + " line " + std::to_string(tb.last_line) + ": " +
                         line.substr(0, 300));
    if (const PythonFrame* frame = tb.last_frame()) {
      f.evidence.push_back("reported at " + frame->file + ":" + std::to_string(frame->line) + " (" +
                           frame->function +
                           "); CUDA errors surface at a later call than the kernel that failed");
    }
    f.fix = fix_for(f.kind, !kernel.empty());
    f.confidence = found.kind ? 0.9 : 0.7;
    out.push_back({std::move(f), failure.t_ns, pid});
  }
}

}  // namespace traindoc::analysis
