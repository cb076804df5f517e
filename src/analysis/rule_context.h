// What the rules share (rules.h): the context they read, the helpers that name processes and cite
// their output, and the finding they append with its time. Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis/process_texts.h"
#include "analysis/traceback.h"

namespace traindoc::analysis {

struct RuleContext {
  const store::Evidence& evidence;
  const std::vector<ProcessSummary>& processes;
  const ProcessTexts& texts;

  // The process a pid referred to at `t_ns` (pids are reused); nullptr when unknown.
  const ProcessSummary* process(int pid, uint64_t start_ticks = 0) const;
  // "rank 1 (pid 4242)", "worker 0 of rank 1 (pid 4250)"
  std::string name(const ProcessSummary& process) const;
  // The rank a process belongs to, for Finding::ranks.
  std::vector<int> ranks_of(const ProcessSummary& process) const;
  // " at +12.3 s" from the run's start, for evidence lines; "" when unknown.
  std::string when(int64_t t_ns) const;
};

// "RuntimeError: the first line of its message", cut to a title's length.
std::string exception_summary(const PythonTraceback& traceback);
// A text cut to a title's length.
std::string title_cut(const std::string& text);
// Appends each of `more` that `ranks` lacks, in order.
void add_ranks(std::vector<int>& ranks, const std::vector<int>& more);
// The job ended well: exit code 0, no signal (false while no end is recorded).
bool run_finished(const RuleContext& context);
// A rank or one of its workers: a process that runs the job's own code. Unprefixed output that
// timing alone gives to a launcher was not the launcher's, and names no process.
bool runs_job_code(const ProcessSummary& process);
// The main thread's Python frames in a stack dump the agent wrote on request, innermost first:
// CPython's `  File "/tmp/train.py", line 3 in wait` lines.
std::vector<std::string> main_thread_frames(const std::string& dump);
// The innermost Python frames of the main thread in a stack dump the agent wrote on request,
// and the innermost frame of the user's code when those are all library frames:
// "/tmp/train.py:3 in wait, called from /tmp/train.py:5 in <module>"; "" when it has none.
std::string python_frames(const std::string& dump);
// The innermost frame of the user's code in such a dump, and the library call it was in:
// "/tmp/train.py:7 in <module>, in torch/nn/parallel/distributed.py:655 in __init__"; "" when
// the dump has no frame of the user's code.
std::string user_place(const std::string& dump);
// The innermost frame of the main thread in such a dump when it is the user's own code (a
// process busy or stuck there, not waiting in a library): "/tmp/train.py:8 in __getitem__";
// "" otherwise.
std::string stuck_in_user_code(const std::string& dump);
// Whether the dump's main thread runs code of a file whose path ends with `file`
// ("/torch/utils/data/dataloader.py"), below the frames a forked process copied from its parent.
bool runs_file(const std::string& dump, std::string_view file);
// The nearest rank above `p`: a DataLoader worker's, whether its rank forked it or a
// forkserver below the rank started it. nullptr when none.
const ProcessSummary* rank_above(const RuleContext& context, const ProcessSummary& p);
// The DataLoader worker of `p` whose end broke the batch `tb` was receiving: a batch's tensors
// come through a connection to the worker that made them (multiprocessing's resource sharer, the
// file_descriptor strategy), and a worker of `p` had died or failed by the time `p` raised. The
// first to end; nullptr when not so.
const ProcessSummary* worker_gone_mid_batch(const RuleContext& context, const ProcessSummary& p,
                                            const PythonTraceback& tb);
// Whether `worker` is a DataLoader worker whose dump shows it in the middle of a sample (its
// frames pass through the fetcher) while the dump of its rank (rank_above, which the caller
// found), `rank_dump`, waits for a batch.
bool fetching_for_rank(const ProcessSummary& worker, const std::string& dump,
                       const std::string& rank_dump);
// Workers in the middle of a sample, with their dumps.
using Fetchers = std::vector<std::pair<const ProcessSummary*, std::string>>;
// "waits for a batch from worker 1 of rank 0 (pid B), which is at X" for the first of
// `fetchers`, with the count of the others (which one the rank waits for depends on the order
// of the batches); "" for none.
std::string batch_wait(const RuleContext& context, const Fetchers& fetchers);
// "rank 0 (pid 4242) was in <python_frames of its dump>", or "was not asked for its stack: ..."
// (layout.h, kStackSpared); "" when the dump has no frames.
std::string where_it_was(const RuleContext& context, const ProcessSummary& process,
                         const std::string& dump);
// A request to stop the job: a signal traindoc passed on to it, or the time limit of a `timeout`
// in it that ran out.
struct StopRequest {
  int64_t t_ns = 0;
  std::string what;      // "SIGINT from the terminal", "its time limit: `timeout 4h` ran out"
  std::string evidence;  // "SIGINT from the terminal, passed on to 2 process(es)"
  const ProcessSummary* timeout = nullptr;  // the `timeout` whose limit it was
  bool second_interrupt = false;            // the SIGKILL of a second interrupt
};
// The stop requests, in order: "SIGINT from the terminal, passed on to 2 process(es)", then
// "SIGKILL at the second interrupt, sent to 2 process(es)".
std::vector<StopRequest> stop_requests(const RuleContext& context);
// The rank whose exception torch.multiprocessing.spawn's parent printed, a sibling of `process`:
// each failed process sends the parent its traceback, which raises the first one it finds,
// prints no other, and stops the rest (SIGTERM). nullptr when it printed none of its children's.
const ProcessSummary* spawn_reported_sibling(const RuleContext& context,
                                             const ProcessSummary& process);
// The kind of the known failure the process's last exception names; none when none.
std::optional<FindingKind> final_exception_kind(const RuleContext& context,
                                                const ProcessSummary& process);
// A process whose own last exception says it timed out waiting in a collective: it waited (in
// the call the others missed, or in another only it makes), so its end is a hang's.
bool gave_up_waiting(const RuleContext& context, const ProcessSummary& process);
// A process that a stop signal (or the SIGKILL of the teardown that followed) ended after a
// stop request: the request ended it, not a failure of its own.
bool stopped_on_request(const RuleContext& context, const store::ProcessRecord& r);
// The supervisor's record that this process was blocked on its standard input (a prompt) at or
// after `from_ns`; nullptr when none.
const store::Event* stdin_wait(const RuleContext& context, int pid, int64_t from_ns);
// The fix for a prompt that nobody answers.
extern const char* const kPromptFix;
// For a rank that waits on a DataLoader worker that never finishes its sample.
extern const char* const kWorkerStuckFix;
// For a forward through the DDP model that only some ranks ran (evaluation on rank 0).
extern const char* const kDdpForwardOnlyFix;
// A rank's backward (DDP's gradient all-reduce) met another collective of a peer: one rank
// skipped or added a training step.
extern const char* const kDdpBackwardMetOtherFix;
// The uncaught exception a Python program printed before a crash ended its process: the crash
// came in the interpreter's teardown, and the exception is the failure. nullptr when the
// process did not crash, is a DataLoader worker (its rank re-raises) or printed none.
const PythonTraceback* raised_before_crash(const RuleContext& context, const ProcessSummary& p);
// The lines that cite a traceback: where it is in the output, its exception, and where it was
// raised (the user's frame and the last frame).
std::vector<std::string> traceback_evidence(const RuleContext& context,
                                            const PythonTraceback& traceback);

// The rank or world size a process passed to init_process_group (its latest call), where it
// contradicts the launch: a world other than the launcher's WORLD_SIZE (the others wait for
// ranks never started, or one is refused), other than the processes torch.multiprocessing.spawn
// started, a rank another process passed at the same time, a rank other than torchrun's.
struct InitMismatch {
  std::string title;  // "init_process_group was asked for a world of 4 ranks, but ..."
  std::vector<std::string> evidence;  // its call, and the others' that contradict it alike
  std::string fix;
};
std::optional<InitMismatch> init_mismatch(const RuleContext& context, const ProcessSummary& p);

// Whether the collective checker found a call that some ranks made and the others do not (from
// there): the others, which went on or left, did nothing wrong. In rule_collectives.cpp, beside
// the reading of the checker's findings.
bool odd_call_found(const RuleContext& context);

// A finding with the time of the failure it reports, for ordering by causality.
struct TimedFinding {
  TimedFinding() = default;
  TimedFinding(Finding finding_, int64_t t_ns_, int pid_, std::string merge_key_ = "")
      : finding(std::move(finding_)), t_ns(t_ns_), pid(pid_), merge_key(std::move(merge_key_)) {}

  Finding finding;
  int64_t t_ns = 0;
  int pid = 0;  // the process that failed
  // Findings with the same non-empty key from different processes are one failure seen
  // several times (both ranks print the same mismatch, two workers crash in one place): they
  // are merged into the earliest.
  std::string merge_key;
  bool from_crash_record = false;  // rule_native_crash's, from the agent's record
  bool from_checker = false;       // rule_collectives's, from the supervisor's collective checker
};

}  // namespace traindoc::analysis
