// Rule: a process's agent recorded a fatal signal. The finding names the process, the fault in
// words, the blame frame, the Python line that called into native code, and the fix. Pure.
#include <signal.h>

#include "analysis/crash_facts.h"
#include "analysis/known_failure.h"
#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

// Where the crash happened, cited in `f`: the Python exception it followed, or the Python line
// that called into native code, then the native stack and what the crash facts add.
void cite_where(const RuleContext& context, const store::Crash& crash, const CrashFacts& facts,
                const ProcessSummary* process, bool at_exit, Finding& f) {
  const PythonTraceback* raised =
      process != nullptr && !at_exit ? raised_before_crash(context, *process) : nullptr;
  if (raised != nullptr) {
    f.title += " (in its teardown, after it raised " + raised->exception_type + ")";
    f.evidence.push_back("it had raised " + exception_summary(*raised) +
                         context.when(raised->t_ns) +
                         ": the crash came as the interpreter shut down after that failure");
  } else if (!facts.python_line.empty()) {
    f.evidence.push_back("Python frame that called into native code: " + facts.python_line);
    if (!facts.user_line.empty() && facts.user_line != facts.python_line) {
      f.evidence.push_back("in your code: " + facts.user_line);
    }
  } else if (process != nullptr && !at_exit && crash.python_traceback.empty() &&
             process->record.cmdline.find("python") != std::string::npos) {
    f.evidence.push_back(
        "no Python traceback: traindoc cannot read this interpreter's threads (a free-threaded "
        "build, a CPython after 3.14, a debug or patched build of 3.9 or 3.10), or it had not "
        "started");
  }
  // The native stack last: the lines above say where, these how it got there.
  for (size_t i = 0; i < crash.frames.size() && i < 8; ++i) {
    f.evidence.push_back("  #" + std::to_string(i) + " " + describe_frame(crash.frames[i]));
  }
  if (crash.other_crashes > 0) {
    f.evidence.push_back(std::to_string(crash.other_crashes) +
                         " other thread(s) crashed at the same time");
  }
  f.evidence.insert(f.evidence.end(), facts.evidence.begin(), facts.evidence.end());
}

// A crash after the program had finished: the interpreter's or a library's teardown.
void tell_at_exit(const RuleContext& context, const ProcessSummary& process, bool worker,
                  Finding& f) {
  f.title += " (at exit, after its program had finished)";
  f.evidence.push_back("its Python program and atexit handlers had finished" +
                       context.when(*process.script_finished_ns) +
                       ": the crash is in the teardown of the interpreter or a library");
  f.fix =
      "The program's work was done. A crash at exit most often comes from a library object "
      "left to be destroyed with the interpreter; for torch.distributed, call "
      "dist.destroy_process_group() at the end of the program. " +
      f.fix;
  // A worker shut down in the teardown of a rank that failed of its own exception: a
  // consequence of that failure, which leads, however late its traceback was printed
  // (torch.multiprocessing.spawn's parent prints it after the others ended).
  const ProcessSummary* rank = worker ? rank_above(context, process) : nullptr;
  if (rank != nullptr && ended_in_failure(rank->record) &&
      context.texts.final_exception(*rank) != nullptr) {
    f.severity = Severity::kWarning;
  }
}

}  // namespace

void rule_native_crash(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const store::Crash& crash : context.evidence.crashes) {
    const ProcessSummary* process = context.process(crash.pid, crash.start_ticks);
    CrashFacts facts = classify_crash(crash, context);
    Finding f;
    bool worker = process != nullptr && process->role.role == Role::kWorker;
    // In a DataLoader worker the crash itself is the news: the rank's RuntimeError follows it.
    f.kind =
        worker && facts.kind != FindingKind::kShmExhausted ? FindingKind::kWorkerCrash : facts.kind;
    std::string who =
        process != nullptr ? context.name(*process) : "process " + std::to_string(crash.pid);
    f.title = who + " " + crash_words(crash, facts);
    bool at_exit = process != nullptr && process->script_finished_ns &&
                   *process->script_finished_ns <= crash.time_ns;
    f.pids = {crash.pid};
    if (process != nullptr) f.ranks = context.ranks_of(*process);
    f.evidence.push_back("crash record of pid " + std::to_string(crash.pid) + ", thread " +
                         std::to_string(crash.tid) +
                         (crash.thread_name.empty() ? "" : " \"" + crash.thread_name + "\"") +
                         ": " + signal_name(crash.signo) + " si_code " +
                         std::to_string(crash.code) + context.when(crash.time_ns));
    if (facts.blame >= 0) {
      f.evidence.push_back("blame frame #" + std::to_string(facts.blame) + ": " +
                           describe_frame(crash.frames[static_cast<size_t>(facts.blame)]));
    }
    cite_where(context, crash, facts, process, at_exit, f);
    f.fix = facts.fix;
    if (at_exit) tell_at_exit(context, *process, worker, f);
    // An abort whose message is a known failure (gloo's size check in a collective) is that
    // failure; the abort is only how it ended the process.
    if (auto known = describe_known(facts.message_signatures);
        known && known->kind != FindingKind::kAbort && !worker) {
      f.kind = known->kind;
      f.title = who + " aborted: " + known->title;
      f.fix = known->fix;
      f.ranks.insert(f.ranks.end(), known->ranks.begin(), known->ranks.end());
      f.evidence.insert(f.evidence.end(), known->evidence.begin(), known->evidence.end());
    }
    if (f.kind == FindingKind::kWorkerCrash) {
      f.fix +=
          " The crash is in a DataLoader worker: reproduce it in the main process with "
          "num_workers=0, where the traceback is complete.";
    }
    f.confidence = facts.blame >= 0 ? 0.9 : 0.7;
    // Crashes at one place are one failure; an abort that is a collective failure (gloo's size
    // check) is the failure that the collective checker and the other ranks report too.
    std::string key =
        merge_key(f.kind, std::string(to_string(f.kind)) + " at " +
                              (facts.blame >= 0
                                   ? describe_frame(crash.frames[static_cast<size_t>(facts.blame)])
                                   : facts.what));
    out.push_back({std::move(f), crash.time_ns, crash.pid, std::move(key)});
    out.back().from_crash_record = true;
  }
}

}  // namespace traindoc::analysis
