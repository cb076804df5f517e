// Helpers the rules share to name processes and cite their output. Pure.
#include "analysis/rule_context.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string_view>

#include "analysis/known_failure.h"
#include "common/layout.h"
#include "store/time_math.h"

namespace traindoc::analysis {

const ProcessSummary* RuleContext::process(int pid, uint64_t start_ticks) const {
  const ProcessSummary* found = nullptr;
  for (const ProcessSummary& p : processes) {
    if (p.record.pid != pid) continue;
    if (start_ticks != 0 && p.record.start_ticks == start_ticks) return &p;
    found = &p;  // the latest holder of the pid
  }
  return found;
}

std::string RuleContext::name(const ProcessSummary& p) const {
  return process_name(p);
}

std::vector<int> RuleContext::ranks_of(const ProcessSummary& p) const {
  if (p.role.rank) return {*p.role.rank};
  return {};
}

std::string exception_summary(const PythonTraceback& tb) {
  // The first line that says something: a message written as an indented block (multiprocessing's
  // `raise RuntimeError('''...`) starts on the line after the type, torchrun's ChildFailedError
  // with a rule of '='.
  std::string_view first;
  std::string_view rest = tb.message;
  while (first.empty() && !rest.empty()) {
    size_t cut = std::min(rest.find('\n'), rest.size());
    first = rest.substr(0, cut);
    first.remove_prefix(std::min(first.find_first_not_of(" \t"), first.size()));
    if (first.find_first_not_of("=-_*# \t") == std::string_view::npos) first = {};
    rest.remove_prefix(std::min(cut + 1, rest.size()));
  }
  return title_cut(tb.exception_type + (first.empty() ? "" : ": " + std::string(first)));
}

void add_ranks(std::vector<int>& ranks, const std::vector<int>& more) {
  for (int rank : more) {
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
  }
}

bool runs_job_code(const ProcessSummary& process) {
  return process.role.role == Role::kRank || process.role.role == Role::kWorker;
}

bool run_finished(const RuleContext& context) {
  const store::RunInfo& run = context.evidence.run;
  return !run.exit_signal && run.exit_code.value_or(1) == 0;
}

const PythonTraceback* raised_before_crash(const RuleContext& context, const ProcessSummary& p) {
  if (!p.record.exit_signal || p.role.role == Role::kWorker) return nullptr;
  bool crashed = std::any_of(
      context.evidence.crashes.begin(), context.evidence.crashes.end(),
      [&](const store::Crash& c) { return context.process(c.pid, c.start_ticks) == &p; });
  // Its lines were all printed before it died: a traceback of its last minute came first.
  return crashed ? context.texts.final_exception(p) : nullptr;
}

std::string title_cut(const std::string& text) {
  constexpr size_t kTitleChars = 200;
  return text.size() > kTitleChars ? text.substr(0, kTitleChars) + "..." : text;
}

std::string RuleContext::when(int64_t t_ns) const {
  int64_t start = evidence.run.start_ns;
  std::optional<int64_t> since = store::duration_ns(start, t_ns);
  if (t_ns == 0 || start == 0 || !since) return "";
  char text[32];
  std::snprintf(text, sizeof(text), " at +%.1f s", static_cast<double>(*since) / 1e9);
  return text;
}

std::vector<std::string> traceback_evidence(const RuleContext& context, const PythonTraceback& tb) {
  std::vector<std::string> out;
  std::string lines = tb.first_line == tb.last_line ? "line " + std::to_string(tb.first_line)
                                                    : "lines " + std::to_string(tb.first_line) +
                                                          "-" + std::to_string(tb.last_line);
  out.push_back(tb.stream + " " + lines + (tb.prefix.empty() ? "" : " (" + tb.prefix + ")") +
                context.when(tb.t_ns) + ": " + exception_summary(tb));
  std::vector<std::string> place = where(tb);
  out.insert(out.end(), place.begin(), place.end());
  if (tb.incomplete) {
    out.push_back("(lines of this traceback were not kept in run.db; logs/ has every line)");
  }
  return out;
}

std::vector<std::string> main_thread_frames(const std::string& dump) {
  std::istringstream lines(dump);
  std::string line;
  bool main_thread = false;
  std::vector<std::string> out;
  while (std::getline(lines, line)) {
    if (line.starts_with("Current thread ")) main_thread = true;
    if (!main_thread) continue;
    if (line.starts_with("Thread ") || line.starts_with("native")) break;
    if (line.find("File \"") != std::string::npos) out.push_back(line);
  }
  return out;
}

namespace {

// A frame of a dump, CPython's `  File "/tmp/train.py", line 3 in wait`.
struct DumpFrame {
  std::string path;
  std::string at;  // ":3 in wait"

  std::string place() const { return path + at; }
};

std::optional<DumpFrame> parse_frame(std::string_view text) {
  size_t file = text.find("File \"");
  size_t end = text.find("\", line ");
  if (file == std::string_view::npos || end == std::string_view::npos || end < file) {
    return std::nullopt;
  }
  std::string rest(text.substr(end + 8));  // "3 in wait"
  size_t in = rest.find(" in ");
  return DumpFrame{
      std::string(text.substr(file + 6, end - file - 6)),
      ":" + rest.substr(0, in) + (in == std::string::npos ? "" : " in " + rest.substr(in + 4))};
}

// The main thread's frames, innermost first, without the hook's wrappers, and without the frames
// below multiprocessing's start of a forked process (a DataLoader worker's): its parent's, copied
// at fork, where the process never returns.
std::vector<DumpFrame> frames_of(const std::string& dump) {
  std::vector<DumpFrame> out;
  for (const std::string& line : main_thread_frames(dump)) {
    std::optional<DumpFrame> frame = parse_frame(line);
    if (!frame || is_hook_file(frame->path)) continue;
    out.push_back(std::move(*frame));
    if (out.back().path.ends_with("/multiprocessing/process.py") &&
        out.back().at.ends_with(" in _bootstrap")) {
      break;
    }
  }
  return out;
}

// A library's file from its package on: "torch/nn/parallel/distributed.py".
std::string package_path(const std::string& path) {
  for (std::string_view dir : {"site-packages/", "dist-packages/"}) {
    if (size_t at = path.rfind(dir); at != std::string::npos) return path.substr(at + dir.size());
  }
  return path;
}

}  // namespace

// CPython's format, most recent call first.
std::string python_frames(const std::string& dump) {
  constexpr size_t kFrames = 3;
  std::string out;
  size_t count = 0;
  bool user_cited = false;
  for (const DumpFrame& frame : frames_of(dump)) {
    bool user = !is_library_file(frame.path);
    // Past the innermost frames, only the innermost frame of the user's code, if none was.
    if (count >= kFrames && (user_cited || !user)) continue;
    out += (count == 0        ? ""
            : count < kFrames ? ", called from "
                              : ", from your code at ") +
           frame.place();
    ++count;
    user_cited |= user;
    if (count > kFrames) break;
  }
  return out;
}

std::string user_place(const std::string& dump) {
  std::vector<DumpFrame> frames = frames_of(dump);
  for (size_t i = 0; i < frames.size(); ++i) {
    if (is_library_file(frames[i].path)) continue;
    if (i == 0) return frames[i].place();
    const DumpFrame& called = frames[i - 1];
    return frames[i].place() + ", in " + package_path(called.path) + called.at;
  }
  return "";
}

std::string stuck_in_user_code(const std::string& dump) {
  std::vector<DumpFrame> frames = frames_of(dump);
  return frames.empty() || is_library_file(frames.front().path) ? "" : frames.front().place();
}

bool runs_file(const std::string& dump, std::string_view file) {
  std::vector<DumpFrame> frames = frames_of(dump);
  return std::any_of(frames.begin(), frames.end(),
                     [&](const DumpFrame& frame) { return frame.path.ends_with(file); });
}

// An end is seen a little late (its parent reaps it, the walk comes every second).
constexpr int64_t kEndSeenLateNs = 1'000'000'000;

const ProcessSummary* rank_above(const RuleContext& context, const ProcessSummary& p) {
  constexpr int kMaxDepth = 8;
  const ProcessSummary* at = &p;
  for (int depth = 0; depth < kMaxDepth && at != nullptr; ++depth) {
    at = context.process(at->record.ppid);
    if (at != nullptr && at->role.role == Role::kRank) return at;
  }
  return nullptr;
}

namespace {

// Whether `tb` failed receiving a batch's tensors through multiprocessing's resource sharer.
// Where the worker's death interrupts the traceback itself (the DataLoader's SIGCHLD handler
// raises while Python prints it), CPython dumps the exception alone: no frames, only the
// connection's error.
bool receiving_batch(const PythonTraceback& tb) {
  if (std::any_of(tb.frames.begin(), tb.frames.end(), [](const PythonFrame& frame) {
        return frame.file.ends_with("/multiprocessing/resource_sharer.py");
      })) {
    return true;
  }
  return tb.frames.empty() && tb.incomplete &&
         (tb.exception_type == "ConnectionResetError" ||
          tb.exception_type == "ConnectionRefusedError");
}

}  // namespace

const ProcessSummary* worker_gone_mid_batch(const RuleContext& context, const ProcessSummary& p,
                                            const PythonTraceback& tb) {
  if (!receiving_batch(tb)) return nullptr;
  const ProcessSummary* found = nullptr;
  for (const ProcessSummary& q : context.processes) {
    const store::ProcessRecord& r = q.record;
    if (q.role.role != Role::kWorker || rank_above(context, q) != &p || r.end_ns == 0 ||
        (r.exit_code.value_or(0) == 0 && !r.exit_signal) ||
        r.end_ns > store::shifted_ns(tb.t_ns, kEndSeenLateNs)) {
      continue;
    }
    if (found == nullptr || r.end_ns < found->record.end_ns) found = &q;
  }
  return found;
}

bool fetching_for_rank(const ProcessSummary& worker, const std::string& dump,
                       const std::string& rank_dump) {
  return worker.role.role == Role::kWorker &&
         runs_file(dump, "/torch/utils/data/_utils/fetch.py") &&
         runs_file(rank_dump, "/torch/utils/data/dataloader.py");
}

std::string batch_wait(const RuleContext& context, const Fetchers& fetchers) {
  if (fetchers.empty()) return "";
  const auto& [worker, dump] = fetchers.front();
  std::string place = user_place(dump);
  std::string text = "waits for a batch from " + context.name(*worker) + ", which is at " +
                     (place.empty() ? python_frames(dump) : place);
  if (fetchers.size() > 1) {
    text += " (" +
            counted(static_cast<int>(fetchers.size()) - 1, "other worker is", "other workers are") +
            " in the middle of a sample too)";
  }
  return text;
}

const ProcessSummary* spawn_reported_sibling(const RuleContext& context,
                                             const ProcessSummary& process) {
  for (const ProcessSummary& q : context.processes) {
    if (&q == &process || q.record.ppid != process.record.ppid || q.role.role != Role::kRank) {
      continue;
    }
    const PythonTraceback* tb = context.texts.final_exception(q);
    if (tb != nullptr && tb->spawned_process) return &q;
  }
  return nullptr;
}

std::optional<FindingKind> final_exception_kind(const RuleContext& context,
                                                const ProcessSummary& process) {
  const PythonTraceback* last = context.texts.final_exception(process);
  std::optional<KnownFailure> known =
      last ? describe_known(context.texts.signatures(*last)) : std::nullopt;
  return known ? std::optional(known->kind) : std::nullopt;
}

bool gave_up_waiting(const RuleContext& context, const ProcessSummary& process) {
  return final_exception_kind(context, process) == FindingKind::kCollectiveMissing;
}

std::string where_it_was(const RuleContext& context, const ProcessSummary& process,
                         const std::string& dump) {
  std::string frames = python_frames(dump);
  if (frames.empty() && dump.starts_with(common::kStackSpared)) {
    return context.name(process) + " was " + dump;
  }
  return frames.empty() ? "" : context.name(process) + " was in " + frames;
}

const store::Event* stdin_wait(const RuleContext& context, int pid, int64_t from_ns) {
  for (const store::Event& event : context.evidence.events) {
    if (event.kind == store::EventKind::kStdinWait && event.pid == pid && event.t_ns >= from_ns)
      return &event;
  }
  return nullptr;
}

const char* const kDdpForwardOnlyFix =
    "Evaluate on every rank (shard the evaluation data with a DistributedSampler and all_reduce "
    "the metric), or run the unwrapped model.module on rank 0 (under torch.no_grad()): a "
    "forward through the DDP model is a collective step of its own (it broadcasts the model's "
    "buffers from rank 0 with broadcast_buffers=True, and under join() it all-reduces a flag), "
    "which ranks that do not run that code never make. The ranks' training steps agree: no "
    "DistributedSampler or join() fixes this.";

const char* const kDdpBackwardMetOtherFix =
    "A rank skipped a backward that the others ran, or ran one they did not (a per-rank `continue` "
    "on a bad batch or a NaN loss, a rank with more batches): DDP's gradient all-reduce in that "
    "backward paired with another collective of its peers, which then reduce the wrong data or "
    "fail. Decide to skip a batch on every rank together (all_reduce a skip flag with MAX and "
    "skip where it is set), and give every rank the same number of batches (DistributedSampler "
    "with drop_last=True).";

const char* const kWorkerStuckFix =
    "A DataLoader worker that never finishes its sample holds up its rank, which waits for that "
    "batch. See what the worker waits for where it is: a read from network storage or a remote "
    "service without a timeout, a lock, a subprocess, a sleep or a retry loop; give such reads "
    "a timeout. Pass timeout=SECONDS to the DataLoader, longer than its slowest good batch, so "
    "that the rank raises an error instead of hanging the job. A worker stuck in a library its "
    "parent used from threads before fork (OpenCV, OpenMP) needs cv2.setNumThreads(0) in the "
    "parent, or the spawn start method (multiprocessing_context='spawn').";

const char* const kPromptFix =
    "A process waits for an answer on its standard input, which under a launcher or a scheduler "
    "nobody gives (and several ranks' prompts mix on one terminal): a breakpoint() or "
    "pdb.set_trace() left in the code, an input() call, or a library's login prompt (wandb: set "
    "WANDB_API_KEY or WANDB_MODE=offline; Hugging Face: HF_TOKEN). Remove it, or set what it "
    "asks for beforehand. A debugger needs a terminal of its own: run the process to debug "
    "alone in one (python train.py, torchrun --nproc_per_node 1), or attach a remote debugger. "
    "A job that reads its data from standard input waits instead for the program feeding it.";

}  // namespace traindoc::analysis
