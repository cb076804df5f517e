// Rule: a process exited with a non-zero code. The finding cites the exception it ended with,
// named by its known text where there is one, with the frame that raised it. Pure.
#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

#include "analysis/batch_advice.h"
#include "analysis/gpu_facts.h"
#include "analysis/known_failure.h"
#include "analysis/match_fields.h"
#include "analysis/rules.h"
#include "analysis/signature_words.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

std::string exit_text(const store::ProcessRecord& r) {
  return "exited with code " + std::to_string(*r.exit_code);
}

// Ranks that failed before the launcher ended, for its own finding. A rank ended by SIGTERM,
// SIGINT or SIGHUP was stopped (by the launcher's teardown, most often), not failed.
std::string failed_before(const RuleContext& context, const ProcessSummary& launcher) {
  std::vector<std::string> ranks;  // each once, however many times the launcher restarted it
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (&p == &launcher || p.role.role != Role::kRank || !failed_itself(r)) continue;
    if (r.end_ns > launcher.record.end_ns) continue;
    std::string rank = describe(p.role);
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
  }
  std::string out;
  for (const std::string& rank : ranks) out += (out.empty() ? "" : ", ") + rank;
  return out;
}

// A launcher's known texts are its ranks' as long as it started some; one that started none
// failed by itself (its own command line, its rendezvous).
bool started_ranks(const RuleContext& context) {
  return std::any_of(context.processes.begin(), context.processes.end(),
                     [](const ProcessSummary& p) { return p.role.role == Role::kRank; });
}

// A collective timed out here and the text does not say which rank was missing: the ranks that
// were not waiting too (no timeout of their own) are the ones that never joined.
std::vector<int> ranks_not_waiting(const RuleContext& context, const ProcessSummary& waiting) {
  std::vector<int> out;
  for (const ProcessSummary& p : context.processes) {
    if (p.role.role != Role::kRank || !p.role.rank || &p == &waiting) continue;
    std::optional<FindingKind> kind = final_exception_kind(context, p);
    if (kind == FindingKind::kCollectiveMissing || kind == FindingKind::kPeerExited) continue;
    out.push_back(*p.role.rank);
  }
  return out;
}

// The class count and the targets' largest label that "Target 12 is out of bounds." does not say,
// from the Python hook's record of the loss that rejected the label: the latest of this process for
// that label (`text`, "" when the text did not say it). With both numbers the fix names the
// mistake.
void add_class_count(const RuleContext& context, const ProcessSummary& p, const std::string& text,
                     Finding& f) {
  for (auto event = context.evidence.events.rbegin(); event != context.evidence.events.rend();
       ++event) {
    if (event->kind != store::EventKind::kLabelOutOfRange || event->pid != p.record.pid ||
        !event->a || !event->b || (!text.empty() && text != std::to_string(*event->a))) {
      continue;
    }
    const int64_t label = *event->a;
    const int64_t classes = *event->b;
    std::string range = "[0, " + std::to_string(classes) + ")";
    if (size_t at = f.title.find("[0, classes)"); at != std::string::npos) {
      f.title.replace(at, std::string_view("[0, classes)").size(), range);
    }
    f.title += ": the loss's input has " + std::to_string(classes) + " classes";
    std::string seen = "the loss got label " + std::to_string(label) + " for an input of " +
                       std::to_string(classes) + " classes";
    if (event->c) seen += "; its targets' largest label is " + std::to_string(*event->c);
    f.evidence.push_back(seen + " (Python hook)");
    f.fix = words::label_fix(label, classes, event->c);
    return;
  }
}

// The first exception of the chain `tb` was raised from (`raise ... from`), or `tb` itself.
const PythonTraceback& innermost_cause(const RuleContext& context, const PythonTraceback& tb) {
  const PythonTraceback* at = &tb;
  for (size_t hops = 0; at->cause && hops < 8; ++hops) {
    at = &context.texts.all_tracebacks()[*at->cause];
  }
  return *at;
}

// Anomaly detection's account of an autograd error: the warning it printed just before, with
// the frames of the forward call that made the failing function (the backward's traceback only
// reaches loss.backward()). Empty when the process printed none.
std::vector<std::string> forward_call(const RuleContext& context, const ProcessSummary& p,
                                      const PythonTraceback& tb) {
  const TextMatch* warning = nullptr;
  for (const TextMatch* m : context.texts.matches(p)) {
    if (m->match.id == "torch.anomaly-forward-trace" && m->line->stream == tb.stream &&
        m->line->number < tb.first_line) {
      warning = m;
    }
  }
  if (warning == nullptr) return {};
  for (const PythonTraceback* frames : context.texts.tracebacks(p)) {
    if (frames->stream != tb.stream || frames->first_line != warning->line->number + 1) continue;
    std::vector<std::string> out;
    for (const std::string& line : where(*frames)) {
      if (line.starts_with("at ")) out.push_back("the forward call that made it, " + line);
    }
    return out;
  }
  return {};
}

// "the job's processes held 812 threads at once (in 34 processes), as sampled", from the round
// of samples with the most; "" without samples. Samples of one round share their time.
std::string thread_peak(const RuleContext& context) {
  std::map<int64_t, std::pair<int, int>> rounds;  // time -> threads, processes
  for (const store::ProcSample& s : context.evidence.proc_samples) {
    rounds[s.t_ns].first += s.threads;
    ++rounds[s.t_ns].second;
  }
  std::pair<int, int> peak{0, 0};
  for (const auto& [t, round] : rounds) peak = std::max(peak, round);
  if (peak.first == 0) return "";
  return "the job's processes held " + counted(peak.first, "thread", "threads") + " at once (in " +
         counted(peak.second, "process", "processes") + "), as sampled";
}

// A known text's words where the process says more than the text: the one
// torch.multiprocessing.spawn started must set MASTER_ADDR itself; of several ranks, one may
// read a checkpoint another is still writing; one out of host memory told its batch size.
void fit_to_process(const RuleContext& context, const ProcessSummary& p, const SignatureMatch& m,
                    const std::string& who, Finding& f) {
  if (m.id == "torch.env-rendezvous-unset" && p.record.rank_source == common::RankSource::kSpawn) {
    f.title = who + ": " + field(m, "variable") +
              " is not set in the process torch.multiprocessing.spawn started, and "
              "init_process_group's env:// reads it";
    f.fix =
        "Set MASTER_ADDR and MASTER_PORT in os.environ before mp.spawn (every process it "
        "starts inherits them) and pass rank= and world_size= to init_process_group, or give "
        "it init_method=\"tcp://HOST:PORT\".";
  } else if (f.kind == FindingKind::kCheckpointCorrupt && p.record.world_size.value_or(1) > 1) {
    f.fix +=
        " With several ranks, one may read the file while another still writes it: load it "
        "only after the rank that saves it is done (dist.barrier() after rank 0's torch.save).";
  } else if (f.kind == FindingKind::kHostAllocFailed || f.kind == FindingKind::kHostOomKilled) {
    f.fix = with_batch_advice(context, p,
                              {BatchMemory::kMachine,
                               p.record.end_ns,
                               {},
                               {},
                               {},
                               field_bytes(m.fields, "requested_bytes")},
                              std::move(f.fix));
  } else if (f.kind == FindingKind::kProcessLimit) {
    if (std::string peak = thread_peak(context); !peak.empty()) f.evidence.push_back(peak);
  } else if (f.kind == FindingKind::kFdExhausted) {
    // Descriptors are sampled now and then: a peak far below the limit missed the climb.
    if (p.peak_fds && p.fd_limit && *p.peak_fds * 2 >= *p.fd_limit) {
      f.evidence.push_back("its open descriptors peaked at " + std::to_string(*p.peak_fds) +
                           ", of a limit of " + std::to_string(*p.fd_limit));
    }
    // Without workers, no tensors pass between processes: the sharing strategy is beside the
    // point, and the process itself keeps what it opens.
    bool workers = std::any_of(
        context.processes.begin(), context.processes.end(), [&](const ProcessSummary& q) {
          return q.role.role == Role::kWorker && rank_above(context, q) == &p;
        });
    if (m.id == "python.too-many-open-files" && !workers) {
      f.fix =
          "The process kept open what it opened (files, sockets) until its limit: close each "
          "(a `with open(...)` block; a dataset that opens a file per sample closes it after "
          "reading). Raising `ulimit -n` only delays the failure.";
    }
  }
}

// A rank that timed out waiting in torch's init_process_group for the others to join, or that
// gloo refused a rank beyond the world, where its call asked for a world the launch does not
// match: the mismatch is the cause, the timeout (or the refusal) its evidence. False when not.
bool fit_to_init_arguments(const RuleContext& context, const ProcessSummary& p,
                           const std::string& who, const PythonTraceback& tb, Finding& f) {
  // Of plain exceptions, the refusals a world of another size explains (gloo's enforce).
  if (f.kind != FindingKind::kRendezvousTimeout &&
      !(f.kind == FindingKind::kPythonException &&
        tb.message.find("rank < size") != std::string::npos)) {
    return false;
  }
  if (std::none_of(tb.frames.begin(), tb.frames.end(), [](const PythonFrame& frame) {
        return frame.function == "init_process_group" &&
               frame.file.ends_with("/torch/distributed/distributed_c10d.py");
      })) {
    return false;
  }
  std::optional<InitMismatch> mismatch = init_mismatch(context, p);
  if (!mismatch) return false;
  // The wait it ended in, which the title told so far, is evidence now.
  if (f.kind == FindingKind::kRendezvousTimeout && f.title.starts_with(who + ": ")) {
    f.evidence.push_back(f.title.substr(who.size() + 2));
  }
  f.title = who + ": " + mismatch->title;
  f.evidence.insert(f.evidence.end(), mismatch->evidence.begin(), mismatch->evidence.end());
  f.fix = mismatch->fix;
  return true;
}

// An exception that a signature knows: its kind, title and fix, fitted to the process.
// `raised`: " raised ValueError: ...", the title where the signature has none.
// The module a parameter belongs to, in words that follow its name: " (module encoder.0)", or
// " (the model's own)" for a parameter of the wrapped module itself.
std::string module_of(const std::string& parameter) {
  size_t dot = parameter.rfind('.');
  return dot == std::string::npos ? " (the model's own)"
                                  : " (module " + parameter.substr(0, dot) + ")";
}

// The names of the parameters DDP's error lists only by index ("Parameter indices which did not
// receive grad for rank 0: 3 4"), from the Python hook's record of the model whose forward
// raised it, with the module each belongs to.
void add_parameter_names(const RuleContext& context, const ProcessSummary& p,
                         const std::string& indices, Finding& f) {
  std::map<int64_t, std::string> names;
  for (const store::Event& e : context.evidence.events) {
    if (e.kind == store::EventKind::kDdpParameter && e.pid == p.record.pid && e.a &&
        !e.name.empty()) {
      names[*e.a] = e.name;
    }
  }
  // The indices as the text lists them ("3 4"), whatever separates them.
  std::string spaced = indices;
  std::replace_if(
      spaced.begin(), spaced.end(), [](char c) { return c < '0' || c > '9'; }, ' ');
  std::istringstream numbers(spaced);
  std::string listed;
  for (int64_t index = 0; numbers >> index;) {
    auto named = names.find(index);
    if (named == names.end()) continue;
    listed += (listed.empty() ? "" : ", ") + named->second + module_of(named->second);
    f.evidence.push_back("DDP's parameter " + std::to_string(index) + " is " + named->second +
                         module_of(named->second) + " (Python hook)");
  }
  if (listed.empty()) return;
  f.title += ": " + listed;
  f.fix = "These parameters got no gradient: " + listed + ". " + f.fix;
}

void from_known_exception(const RuleContext& context, const ProcessSummary& p,
                          const std::string& who, const std::string& raised, KnownFailure& known,
                          Finding& f) {
  f.kind = known.kind;
  if (f.kind == FindingKind::kCollectiveMissing && known.ranks.empty()) {
    known.ranks = ranks_not_waiting(context, p);
    if (!known.ranks.empty()) {
      std::string names;
      for (int rank : known.ranks) names += (names.empty() ? "" : ", ") + std::to_string(rank);
      known.title +=
          (known.ranks.size() == 1 ? " (rank " : " (ranks ") + names + " never joined it)";
    }
  }
  f.title = who + (known.title.empty() ? raised : ": " + known.title);
  f.fix = known.fix;
  // A signal it was sent, not a failure of its own (torchrun's SignalException).
  if (f.kind == FindingKind::kKilledExternally) f.severity = Severity::kWarning;
  if (f.kind == FindingKind::kLabelOutOfRange) {
    add_class_count(context, p, field(*known.match, "label"), f);
  }
  if (f.kind == FindingKind::kDdpUnusedParameters) {
    add_parameter_names(context, p, field(*known.match, "param_indices"), f);
  }
  fit_to_process(context, p, *known.match, who, f);
  // A missing rank is the one to look at; the ranks that waited for it are in the title.
  if (f.kind == FindingKind::kCollectiveMissing && !known.ranks.empty()) f.ranks.clear();
  add_ranks(f.ranks, known.ranks);
}

// Where the exception was raised: its traceback, the first exception of a `raise ... from`
// chain, and a DataLoader worker's own exception that it re-raised.
void add_exception_evidence(const RuleContext& context, const PythonTraceback& tb,
                            const PythonTraceback& first, Finding& f) {
  std::vector<std::string> cited = traceback_evidence(context, tb);
  f.evidence.insert(f.evidence.end(), cited.begin(), cited.end());
  // `raise ... from` (a multiprocessing.Pool worker's exception, re-raised in its parent; a
  // library's error wrapped in the user's): where the first exception of the chain came from.
  if (&first != &tb) {
    f.evidence.push_back("the exception it was raised from: " + exception_summary(first));
    for (const std::string& line : where(first)) {
      f.evidence.push_back("the exception it was raised from, " + line);
    }
  }
  // A DataLoader worker's exception, re-raised here: where the worker raised it.
  if (tb.original) {
    const PythonTraceback& worker = context.texts.all_tracebacks()[*tb.original];
    f.evidence.push_back("in the worker: " + exception_summary(worker));
    for (const std::string& line : where(worker)) f.evidence.push_back("in the worker, " + line);
  }
}

void from_exception(const RuleContext& context, const ProcessSummary& p, const PythonTraceback& tb,
                    Finding& f, std::string& merge_key) {
  // A thread's traceback, unprefixed, may be read as the launcher's: it is no launcher's.
  std::string who = tb.thread.empty()  ? context.name(p)
                    : runs_job_code(p) ? "thread " + tb.thread + " of " + context.name(p)
                                       : "thread " + tb.thread;
  std::optional<KnownFailure> known = describe_known(context.texts.signatures(tb), &tb);
  std::string exception = exception_summary(tb);
  std::string raised = " raised " + exception;
  const PythonTraceback& first = innermost_cause(context, tb);  // of a `raise ... from` chain
  // A DataLoader worker's exception, re-raised here: the worker's own exception is the one to
  // name, and what its text says comes before the re-raise's advice.
  if (tb.original) {
    const PythonTraceback& worker = context.texts.all_tracebacks()[*tb.original];
    std::string index = known ? field(*known->match, "worker") : "";
    raised = ": DataLoader worker " + (index.empty() ? "" : index + " ") + "raised " +
             exception_summary(worker);
    if (auto inner = describe_known(context.texts.signatures(worker), &tb)) {
      known = std::move(inner);
    }
  }
  if (known && !reports_another_process(known->kind)) {
    from_known_exception(context, p, who, raised, *known, f);
    merge_key = analysis::merge_key(f.kind, known->match->id);
  } else if (p.role.role == Role::kLauncher && tb.thread.empty()) {
    f.kind = FindingKind::kLauncherExit;
    std::string ranks = failed_before(context, p);
    f.title = who + (ranks.empty() ? " raised " + exception
                                   : " stopped the job after " + ranks + " failed");
    f.fix = "The launcher's error follows the failure of its ranks: see the root cause.";
  } else if (const ProcessSummary* worker = worker_gone_mid_batch(context, p, tb)) {
    const store::ProcessRecord& r = worker->record;
    f.kind = FindingKind::kPythonException;
    f.title = who + " was receiving a batch from DataLoader " + context.name(*worker) +
              " when it " +
              (r.exit_signal ? "died of " + signal_name(*r.exit_signal) : exit_text(r)) + ": " +
              exception;
    f.fix =
        "Not a network fault: the worker ended while its batch was on its way (a batch's "
        "tensors come through a connection to the worker that made them). The worker's end is "
        "the cause: see it above.";
    merge_key = "exception " + raised;
  } else {
    f.kind = FindingKind::kPythonException;
    f.title = who + raised;
    f.fix = known ? known->fix : unknown_exception_fix(first);
    // The same exception, word for word, from several ranks or from each attempt of a launcher
    // that restarted them, is one failure.
    merge_key = "exception " + raised;
  }
  bool fitted = fit_to_init_arguments(context, p, who, tb, f);
  add_exception_evidence(context, tb, first, f);
  if (known) f.evidence.insert(f.evidence.end(), known->evidence.begin(), known->evidence.end());
  std::vector<std::string> forward = forward_call(context, p, tb);
  f.evidence.insert(f.evidence.end(), forward.begin(), forward.end());
  f.confidence = known || fitted ? 0.8 : 0.5;
}

// A process that ended without a traceback but printed a known error of its own: a native
// program's NCCL warning or CUDA error. False when it printed none.
bool from_known_line(const RuleContext& context, const ProcessSummary& p, Finding& f,
                     std::string& merge_key) {
  std::vector<const TextMatch*> lines = context.texts.matches(p);
  // An error it printed before it trained on was caught (logged), not what it ended with.
  std::erase_if(lines, [&](const TextMatch* line) {
    return p.trained_after_ns && *p.trained_after_ns > line->line->t_ns;
  });
  std::vector<SignatureMatch> matches;
  matches.reserve(lines.size());
  for (const TextMatch* line : lines) matches.push_back(line->match);
  std::optional<KnownFailure> known = describe_known(matches);
  if (!known || reports_another_process(known->kind)) return false;
  const store::LogLine& line = *lines[known->match - matches.data()]->line;
  std::string text(strip_launcher_prefix(line.text).text);
  f.kind = known->kind;
  f.title = context.name(p) + ": " + (known->title.empty() ? title_cut(text) : known->title);
  f.evidence.push_back("the error it printed, " + line.stream + " line " +
                       std::to_string(line.number) + context.when(line.t_ns) + ": " + text);
  f.evidence.insert(f.evidence.end(), known->evidence.begin(), known->evidence.end());
  f.fix = known->fix;
  fit_to_process(context, p, *known->match, context.name(p), f);
  f.confidence = 0.7;
  merge_key = analysis::merge_key(f.kind, known->match->id);
  return true;
}

// A traceback through multiprocessing's start of a process: printed by that process itself.
bool in_multiprocessing_bootstrap(const PythonTraceback& tb) {
  return std::any_of(tb.frames.begin(), tb.frames.end(), [](const PythonFrame& frame) {
    return frame.file.ends_with("multiprocessing/spawn.py") ||
           frame.file.ends_with("multiprocessing/process.py") ||
           frame.file.ends_with("multiprocessing/forkserver.py");
  });
}

// The idle watch samples once a second: a spell may be dated just before the last output.
constexpr int64_t kIdleSlackNs = 1'000'000'000;
// A process waiting for a dead thread's work first uses up what the thread had done (a queue of
// prefetched batches).
constexpr int64_t kHangAfterThreadNs = 300'000'000'000;
// ...or gives up waiting for it (queue.get(timeout=...)).
constexpr int64_t kFailAfterThreadNs = 120'000'000'000;

constexpr const char* kThreadHangFix =
    " The thread died and its process went on, waiting for what the thread would have done (a "
    "queue it filled, an event it set): the job hung. Catch and report errors in the thread's "
    "function, and wait with a timeout (queue.get(timeout=...)), or run it with "
    "concurrent.futures, whose result() raises the thread's exception where it is awaited.";

// When the job went idle soon after `t_ns` and never moved again, or the others waited soon
// after in a collective that process `pid` never called (it waited for the thread's work): the
// start of that hang. A thread that died long before a hang (a logger's upload an hour earlier)
// did not cause it.
std::optional<int64_t> hung_after(const RuleContext& context, int64_t t_ns, int pid) {
  for (const store::CollectiveIssue& issue : context.evidence.collective_issues) {
    // The others may have waited already (a rank slowed by its data): the hang counts if it was
    // still there when the thread died.
    if (issue.kind != store::IssueKind::kMissing ||
        store::shifted_ns(issue.t_ns, kIdleSlackNs) < t_ns ||
        issue.first_ns > store::shifted_ns(t_ns, kHangAfterThreadNs)) {
      continue;
    }
    for (const store::CollectiveIssueRank& rank : issue.ranks) {
      // One that never called it and still ran: it waited for the thread's work.
      if (rank.pid == pid && rank.state == store::RankState::kNeverCalled && !rank.end) {
        return issue.first_ns;
      }
    }
  }
  const std::vector<store::Event>& events = context.evidence.events;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].kind != store::EventKind::kJobIdle ||
        store::shifted_ns(events[i].t_ns, kIdleSlackNs) < t_ns ||
        events[i].t_ns > store::shifted_ns(t_ns, kHangAfterThreadNs)) {
      continue;
    }
    bool resumed = false;
    for (size_t j = i + 1; j < events.size() && events[j].kind != store::EventKind::kJobIdle; ++j) {
      resumed = resumed || events[j].kind == store::EventKind::kJobResumed;
    }
    if (!resumed) return events[i].t_ns;
  }
  return std::nullopt;
}

// A process that ended with a code of its own, with neither a traceback nor an error line that
// a signature knows: its code, what it printed last, and (a rank under
// torch.multiprocessing.spawn) whether it only echoes a sibling's exception, then dated after it.
void from_exit_code(const RuleContext& context, const ProcessSummary& p, Finding& f,
                    int64_t& t_ns) {
  const store::ProcessRecord& r = p.record;
  std::string who = context.name(p);
  f.kind = p.role.role == Role::kLauncher ? FindingKind::kLauncherExit : FindingKind::kNonzeroExit;
  f.title = who + " " + exit_text(r);
  // Without a traceback, what it said last is usually why (`sys.exit("no config")`,
  // argparse's "error: unrecognized arguments").
  const store::LogLine* last = context.texts.last_words(p);
  if (last != nullptr) {
    std::string text(strip_launcher_prefix(last->text).text);
    f.title += ": " + title_cut(text);
    f.evidence.push_back("the last line it printed, " + last->stream + " line " +
                         std::to_string(last->number) + context.when(last->t_ns) + ": " + text);
  }
  f.fix = "See the process's last output in logs/.";
  if (const store::LogStream* file = output_file(context.evidence, p, 2)) {
    f.fix = "See the process's last output in " + file->name +
            (file->files.empty() ? "" : " (kept in " + file->files.front() + ")") + ".";
  }
  // A rank that printed nothing with a code of its own choosing (not 1, an uncaught
  // exception's, whose traceback a launcher may have filtered out): an exit call.
  if (last == nullptr && f.kind == FindingKind::kNonzeroExit && *r.exit_code != 1) {
    f.fix =
        "It printed nothing on stderr as it ended: an exit call with that code and no "
        "message (sys.exit(" +
        std::to_string(*r.exit_code) + "), os._exit(" + std::to_string(*r.exit_code) +
        "), exit() in native code) in the program or a library it calls: search them for "
        "it, and its output on stdout (logs/stdout.log).";
  }
  f.confidence = 0.5;
  // spawn's wrapper exits 1 after it sent the exception.
  if (const ProcessSummary* sibling = p.role.role == Role::kRank && r.exit_code == 1
                                          ? spawn_reported_sibling(context, p)
                                          : nullptr) {
    // Its exception went to the parent unprinted: the one printed is the failure to read,
    // and this exit its echo (most often the same error), not a cause of its own.
    f.severity = Severity::kWarning;
    f.title +=
        " as well: its exception went to torch.multiprocessing.spawn, which printed "
        "only the exception of " +
        context.name(*sibling);
    f.fix = "Fix the exception printed for " + context.name(*sibling) +
            "; run again to see whether this process fails differently (spawn prints the "
            "first failure only).";
    t_ns = std::max(t_ns, store::shifted_ns(context.texts.final_exception(*sibling)->t_ns, 1));
  }
}

}  // namespace

void rule_failed_exit(const RuleContext& context, std::vector<TimedFinding>& out) {
  std::vector<StopRequest> requests = stop_requests(context);
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    // A `timeout` whose limit ran out exits 124: rule_stop_request tells the limit.
    if (std::any_of(requests.begin(), requests.end(),
                    [&p](const StopRequest& request) { return request.timeout == &p; })) {
      continue;
    }
    // A program that raised, then crashed on its way out, failed with its exception.
    const PythonTraceback* raised = raised_before_crash(context, p);
    if ((!r.exit_code || *r.exit_code == 0) && raised == nullptr) continue;
    // A program a rank ran (git, a compiler, a shell command) returns its code to the rank,
    // which decides what it means; the rank's own failure, if any, is the finding.
    if (p.role.role == Role::kOther && r.pid != context.evidence.run.root_pid) continue;
    // A dedicated rule that ran first (GPU memory, CUDA errors) explained this process already.
    if (std::any_of(out.begin(), out.end(), [&r](const TimedFinding& t) {
          return t.pid == r.pid && !t.from_crash_record;
        })) {
      continue;
    }
    Finding f;
    f.pids = {r.pid};
    f.ranks = context.ranks_of(p);
    std::string who = context.name(p);
    f.evidence.push_back(who + " " +
                         (raised ? "died of " + signal_name(*r.exit_signal) : exit_text(r)) +
                         context.when(r.end_ns));
    int64_t t_ns = r.end_ns;
    std::string merge_key;
    const PythonTraceback* tb = raised ? raised : context.texts.final_exception(p);
    // A DataLoader worker hands its exception to its rank; a process that multiprocessing
    // started and that printed a traceback of its own (spawn's bootstrap, a Pool's initializer)
    // is explained by it. Another traceback near a worker's end is its rank's.
    if (p.role.role == Role::kWorker && (tb == nullptr || !in_multiprocessing_bootstrap(*tb))) {
      f.kind = FindingKind::kWorkerExit;
      f.title = who + " " + exit_text(r);
      f.fix =
          "A DataLoader worker raised or called exit: run with num_workers=0 to see the "
          "error in the main process.";
      f.confidence = 0.5;
    } else if (tb != nullptr) {
      auto known = describe_known(context.texts.signatures(*tb));
      if (known && known->kind == FindingKind::kPeerExited) continue;  // rule_peer_exited
      from_exception(context, p, *tb, f, merge_key);
      if (t_ns == 0 || tb->t_ns < t_ns) t_ns = tb->t_ns;  // it failed when it printed it
      // unless it failed for its worker's end, however late that was seen,
      if (const ProcessSummary* worker = worker_gone_mid_batch(context, p, *tb)) {
        t_ns = std::max(t_ns, store::shifted_ns(worker->record.end_ns, 1));
      }
      // and before the crash it led to, even where its lines were read after the crash record.
      for (const TimedFinding& crash : out) {
        if (crash.from_crash_record && crash.pid == r.pid)
          t_ns = std::min(t_ns, store::shifted_ns(crash.t_ns, -1));
      }
    } else if ((p.role.role == Role::kLauncher && started_ranks(context)) ||
               !from_known_line(context, p, f, merge_key)) {
      from_exit_code(context, p, f, t_ns);
    }
    out.push_back({std::move(f), t_ns, r.pid, merge_key});
  }
}

void rule_thread_exception(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const ProcessSummary& p : context.processes) {
    for (const PythonTraceback* tb : context.texts.tracebacks(p)) {
      if (tb->thread.empty() || tb->embedded || tb->exception_type.empty()) continue;
      // A thread that died after its process's own exception is part of its teardown (a
      // DataLoader's pin-memory thread losing its queue).
      const PythonTraceback* own = context.texts.final_exception(p);
      if (own != nullptr && own->t_ns <= tb->t_ns) continue;
      Finding f;
      if (runs_job_code(p)) {
        f.pids = {p.record.pid};
        f.ranks = context.ranks_of(p);
      }
      std::string merge_key;
      from_exception(context, p, *tb, f, merge_key);
      if (!merge_key.empty()) merge_key.insert(0, "thread ");
      int64_t t_ns = tb->t_ns;
      // The process went on without the thread; if the job then never moved again, it waited
      // for what the thread would have done: the hang's cause.
      if (std::optional<int64_t> idle = hung_after(context, tb->t_ns, p.record.pid)) {
        f.title += "; the job then hung";
        f.fix += kThreadHangFix;
        t_ns = std::min(t_ns, store::shifted_ns(*idle, -1));
      } else if (own != nullptr && own->t_ns <= store::shifted_ns(tb->t_ns, kFailAfterThreadNs)) {
        // Its process failed soon after: waiting for the thread's work, most likely.
        std::optional<int64_t> later_ns = store::duration_ns(tb->t_ns, own->t_ns);
        f.title += "; its process failed" +
                   (later_ns ? " " + format_seconds(*later_ns) + " later" : std::string(" later"));
        f.fix +=
            " The thread died first, and its process, which waited for what the thread "
            "would have done, failed after it: fix the thread's error first.";
      } else {
        f.severity = Severity::kWarning;
        f.title += "; the process went on without it";
        f.fix += " What the thread did (prefetching, logging, uploading) stopped with it.";
      }
      out.push_back({std::move(f), t_ns, p.record.pid, merge_key});
    }
  }
}

}  // namespace traindoc::analysis
