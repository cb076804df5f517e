// Attribution of tracebacks and known texts to processes. Pure.
#include "analysis/process_texts.h"

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "analysis/file_name.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

// The log tap stamps a line when it reads it, a reaper when it sees the end: a process can be
// seen dead a little before its last line is stamped.
constexpr int64_t kReadSlackNs = 1'000'000'000;
// A process may take a while to exit after printing its exception (gloo and NCCL shut down).
constexpr int64_t kExitAfterPrintNs = 30'000'000'000;
constexpr int64_t kFinalSlackNs = 2'000'000'000;
// How long before the reader stamps a plain line the reaper may see its process end.
constexpr int64_t kPlainLineLagNs = 50'000'000;
// An exception printed long before the end was handled (logged) rather than fatal.
constexpr int64_t kFinalWithinNs = 60'000'000'000;
// The hook marks a thread's death just before Python prints its traceback.
constexpr int64_t kThreadPrintNs = 5'000'000'000;

// Ended by a signal that stops a process without a word (SIGTERM, SIGKILL, SIGHUP): not by the
// exit that follows a traceback Python prints (SIGINT's KeyboardInterrupt prints one first).
bool stopped_silently(const store::ProcessRecord& r) {
  return r.exit_signal &&
         (*r.exit_signal == SIGTERM || *r.exit_signal == SIGKILL || *r.exit_signal == SIGHUP);
}

bool alive_at(const store::ProcessRecord& r, int64_t t_ns) {
  return r.start_ns <= store::shifted_ns(t_ns, kReadSlackNs) &&
         (r.end_ns == 0 || store::shifted_ns(r.end_ns, kReadSlackNs) >= t_ns);
}

// torchrun's --tee prefix names the local rank ("[default1]:"); PyTorch 2.x's own "[rank1]:"
// and mpirun's tags name the global rank.
bool prefix_names_global_rank(std::string_view prefix) {
  return prefix.find("[rank") != std::string_view::npos ||
         prefix.find(',') != std::string_view::npos;
}

const ProcessSummary* by_prefix(const std::vector<ProcessSummary>& processes,
                                std::string_view prefix, int rank, int64_t t_ns) {
  bool global = prefix_names_global_rank(prefix);
  const ProcessSummary* found = nullptr;
  for (int pass = 0; pass < 2 && found == nullptr; ++pass) {
    bool use_global = (pass == 0) == global;
    for (const ProcessSummary& p : processes) {
      if (p.role.role != Role::kRank) continue;
      std::optional<int> value = use_global ? p.role.rank : p.role.local_rank;
      if (value != rank || !alive_at(p.record, t_ns)) continue;
      if (found == nullptr || p.record.start_ns > found->record.start_ns) found = &p;
    }
  }
  return found;
}

// Whether `r` runs the code of a traceback's outermost frame (`file`): the script Python runs
// (`python train.py`; a launcher's script, not the one it starts), code given by `-c`
// ("<string>"), or a module run by `-m` (runpy's frame).
bool runs_frame(const store::ProcessRecord& r, std::string_view file) {
  if (file.empty()) return false;
  const PythonMain main = python_main(r);
  if (file == "<string>") return main.kind == PythonMain::Kind::kCode;
  if (file == "<frozen runpy>" || file.ends_with("/runpy.py")) {
    return main.kind == PythonMain::Kind::kModule;
  }
  std::string_view script = file_name(file);
  if (main.kind != PythonMain::Kind::kScript || script.empty()) return false;
  const std::string_view program = main.from;
  if (file_name(program.substr(0, program.find(' '))) == script) return true;
  // A path with spaces ("my proj/train.py"), which the frame's path ends with.
  for (size_t at = program.find(script); at != std::string_view::npos;
       at = program.find(script, at + 1)) {
    size_t end = at + script.size();
    if ((end == program.size() || program[end] == ' ') && file.ends_with(program.substr(0, end))) {
      return true;
    }
  }
  return false;
}

bool may_have_printed(const ProcessSummary& p, const std::set<const ProcessSummary*>& prefixed,
                      const std::set<const ProcessSummary*>& silent, int64_t t_ns) {
  const store::ProcessRecord& r = p.record;
  return !prefixed.contains(&p) && !silent.contains(&p) && ended_in_failure(r) &&
         store::shifted_ns(r.end_ns, kReadSlackNs) >= t_ns &&
         r.end_ns <= store::shifted_ns(t_ns, kExitAfterPrintNs) &&
         r.start_ns <= store::shifted_ns(t_ns, kReadSlackNs);
}

// The owners of the tracebacks before one: when each printed its last, and those that printed
// the same exception.
struct EarlierOwners {
  std::map<const ProcessSummary*, int64_t> last_printed_ns;
  std::set<const ProcessSummary*> same_exception;
};

// Unprefixed output read at `t_ns`, or the traceback `tb` that ended then: the process that
// failed soonest after it began; else the only non-worker alive then, preferring the job's root.
// Processes whose output the launcher prefixes (`prefixed`) did not print it, nor did those in
// `silent`. A traceback goes to a process running the code of its outermost frame, where one
// that failed does; those that printed the same exception before (`earlier`) come after the
// others that failed: processes failing alike (DataLoader workers that cannot unpickle their
// dataset, ranks without a prefix) each print it once as they die.
const ProcessSummary* by_time(const std::vector<ProcessSummary>& processes,
                              const std::set<const ProcessSummary*>& prefixed,
                              const std::set<const ProcessSummary*>& silent, int root_pid,
                              int64_t t_ns, const PythonTraceback* tb = nullptr,
                              const EarlierOwners& earlier = {}) {
  int64_t from_ns = tb != nullptr ? tb->start_t_ns : t_ns;
  std::string_view outer_file =
      tb != nullptr && !tb->frames.empty() ? std::string_view(tb->frames.front().file) : "";
  struct Candidate {
    const ProcessSummary* process;
    bool runs_frame;
  };
  std::vector<Candidate> candidates;
  bool any_runs_frame = false;
  for (const ProcessSummary& p : processes) {
    if (!may_have_printed(p, prefixed, silent, t_ns)) continue;
    candidates.push_back({&p, runs_frame(p.record, outer_file)});
    any_runs_frame = any_runs_frame || candidates.back().runs_frame;
  }
  const ProcessSummary* found = nullptr;
  int64_t best = 0;
  for (const auto& [candidate, runs] : candidates) {
    const ProcessSummary& p = *candidate;
    const store::ProcessRecord& r = p.record;
    // Ended before the output began: ranked after every process that ended after (the reader
    // may stamp lines late), unless it exited with a code, as Python does after a traceback or
    // sys.exit's message, which the reaper can see before the reader stamps the lines (a plain
    // line only just before: a launcher reports a rank's end in its own words), and printed no
    // traceback in the time before its end (that one was its last words). Stopped silently (a
    // DataLoader's workers as their rank shuts them down): after those; printed the same
    // exception before: after those (spawn's parent stops the other processes once one failed,
    // whether or not they printed theirs); running other code than the traceback's: after
    // every other.
    int64_t distance = store::elapsed_ns(from_ns, r.end_ns);
    if (distance < 0) {
      auto last = earlier.last_printed_ns.find(&p);
      bool had_last_words = last != earlier.last_printed_ns.end() &&
                            store::shifted_ns(last->second, kFinalSlackNs) >= r.end_ns;
      int64_t before = store::elapsed_ns(distance, 0);
      bool just_exited = r.exit_code && !had_last_words && (tb || before <= kPlainLineLagNs);
      distance = just_exited ? before : store::elapsed_ns(distance, kExitAfterPrintNs);
    }
    if (stopped_silently(r)) distance = store::shifted_ns(distance, 2 * kExitAfterPrintNs);
    if (earlier.same_exception.contains(&p)) {
      distance = store::shifted_ns(distance, 4 * kExitAfterPrintNs);
    }
    if (any_runs_frame && !runs) distance = store::shifted_ns(distance, 8 * kExitAfterPrintNs);
    if (found == nullptr || distance < best) {
      found = &p;
      best = distance;
    }
  }
  if (found != nullptr) return found;
  for (const ProcessSummary& p : processes) {
    if (p.role.role == Role::kWorker || prefixed.contains(&p) || !alive_at(p.record, t_ns)) {
      continue;
    }
    if (p.record.pid == root_pid) return &p;
    found = found == nullptr ? &p : found;
  }
  return found;
}

// The process that torch.multiprocessing.spawn's parent started as number `index`: its rank of
// that number (spawn passes the number as the rank, by convention), else its index-th rank child
// in start order.
const ProcessSummary* spawned_child(const std::vector<ProcessSummary>& processes,
                                    const ProcessSummary& parent, int index) {
  std::vector<const ProcessSummary*> children;
  for (const ProcessSummary& p : processes) {
    if (p.role.role == Role::kRank && p.record.ppid == parent.record.pid &&
        p.record.start_ns >= parent.record.start_ns) {
      children.push_back(&p);
    }
  }
  // The index spawn gave it (kept as its local rank), whatever rank the program then chose
  // (`rank = world_size - 1 - index`); else a rank equal to it.
  for (const ProcessSummary* child : children) {
    if (child->record.local_rank == index) return child;
  }
  for (const ProcessSummary* child : children) {
    if (child->role.rank == index) return child;
  }
  // Processes are summarized in start order.
  return index >= 0 && static_cast<size_t>(index) < children.size()
             ? children[static_cast<size_t>(index)]
             : nullptr;
}

// The process that told it wrote to a file: its pid, alive when it told (the latest such, where
// the pid was reused).
const ProcessSummary* writer_process(std::span<const ProcessSummary> processes,
                                     const store::LogWriter& writer) {
  const ProcessSummary* found = nullptr;
  for (const ProcessSummary& p : processes) {
    if (p.record.pid == writer.pid &&
        p.record.start_ns <= store::shifted_ns(writer.t_ns, kReadSlackNs) &&
        (found == nullptr || p.record.start_ns > found->record.start_ns)) {
      found = &p;
    }
  }
  return found;
}

// Whether two unprefixed tracebacks tell the same exception, raised at the same places.
bool same_exception(const PythonTraceback& a, const PythonTraceback& b) {
  auto place = [](const PythonFrame& x, const PythonFrame& y) {
    return x.file == y.file && x.line == y.line;
  };
  return !a.prefix_rank && !b.prefix_rank && a.exception_type == b.exception_type &&
         a.message == b.message &&
         std::equal(a.frames.begin(), a.frames.end(), b.frames.begin(), b.frames.end(), place);
}

}  // namespace

// Attribution of one run's output, which learns from the prefixed lines which processes the
// launcher prefixes.
class LineOwners {
 public:
  LineOwners(const store::Evidence& evidence, const std::vector<ProcessSummary>& processes)
      : m_evidence(evidence), m_processes(processes), m_root(evidence.run.root_pid) {
    std::set<const ProcessSummary*> by_launcher;  // prefixed by their launcher, not by torch
    for (const store::LogLine& line : evidence.log_lines) {
      LinePrefix prefix = strip_launcher_prefix(line.text);
      // A prefix alone is no rank's line: torchrun's error summary heads each failure "[0]:".
      if (!prefix.rank || prefix.text.empty()) continue;
      if (const ProcessSummary* p = by_prefix(processes, prefix.prefix, *prefix.rank, line.t_ns)) {
        m_prefixed.insert(p);
        // PyTorch 2.x writes "[rank1]:" itself, on its own log lines only.
        if (!prefix.prefix.starts_with("[rank")) by_launcher.insert(p);
      }
    }
    // A launcher that prefixes a rank's lines (torchrun --tee) prefixes every rank it starts,
    // and what their workers print through them, also those that printed nothing (a rank that
    // os._exit()ed): its own unprefixed lines (torchrun's OMP_NUM_THREADS banner) are not
    // theirs. Processes come in start order, a parent before its children.
    std::map<int, const ProcessSummary*> by_pid;
    for (const ProcessSummary& p : processes) {
      auto parent = by_pid.find(p.record.ppid);
      bool sibling = p.role.role == Role::kRank &&
                     std::any_of(by_launcher.begin(), by_launcher.end(), [&](auto* q) {
                       return q->role.role == Role::kRank && q->record.ppid == p.record.ppid;
                     });
      if (sibling || (parent != by_pid.end() && by_launcher.contains(parent->second))) {
        by_launcher.insert(&p);
        m_prefixed.insert(&p);
      }
      by_pid[p.record.pid] = &p;
    }
    // Output written to a file is its writers' alone, and they did not print on the job's
    // stream of that descriptor.
    std::map<std::string, std::set<const ProcessSummary*>> writing;
    for (const store::LogStream& stream : evidence.logs) {
      for (const store::LogWriter& writer : stream.writers) {
        const ProcessSummary* p = writer_process(processes, writer);
        if (p == nullptr) continue;
        writing[stream.name].insert(p);
        // A log file it opened leaves its own stdout and stderr where they were.
        if (writer.fd <= 2) m_excluded[writer.fd == 1 ? "stdout" : "stderr"].insert(p);
      }
    }
    for (auto& [stream, writers] : writing) {
      std::set<const ProcessSummary*>& others = m_excluded[stream];
      for (const ProcessSummary& p : processes) {
        if (!writers.contains(&p)) others.insert(&p);
      }
      if (writers.size() == 1) m_sole_writer[stream] = *writers.begin();
    }
    // A prefix marks what a launcher copied to the job's streams, not what went to a file.
    for (auto& [stream, excluded] : m_excluded) {
      if (store::is_job_stream(stream)) excluded.insert(m_prefixed.begin(), m_prefixed.end());
    }
  }

  const ProcessSummary* of(const std::string& stream, std::string_view prefix,
                           std::optional<int> prefix_rank, int64_t t_ns) const {
    if (prefix_rank) return by_prefix(m_processes, prefix, *prefix_rank, t_ns);
    if (const ProcessSummary* sole = sole_writer(stream)) return sole;
    return by_time(m_processes, excluded(stream), {}, m_root, t_ns);
  }

  // A Python traceback that ended at `t_ns`: as of(), but not a DataLoader worker whose crash
  // handler ran before then. It runs no Python after its crash, and while its crash is
  // captured its rank reports another worker's death: the rank printed that traceback. Those in
  // `earlier` printed one before.
  const ProcessSummary* of_traceback(const PythonTraceback& tb,
                                     const EarlierOwners& earlier) const {
    if (tb.prefix_rank) return of(tb.stream, tb.prefix, tb.prefix_rank, tb.t_ns);
    if (const ProcessSummary* sole = sole_writer(tb.stream)) return sole;
    std::set<const ProcessSummary*> crashed;
    for (const store::Crash& crash : m_evidence.crashes) {
      if (crash.time_ns == 0 || crash.time_ns >= tb.t_ns) continue;
      for (const ProcessSummary& p : m_processes) {
        if (p.role.role == Role::kWorker && p.record.pid == crash.pid &&
            (crash.start_ticks == 0 || p.record.start_ticks == crash.start_ticks)) {
          crashed.insert(&p);
        }
      }
    }
    return by_time(m_processes, excluded(tb.stream), crashed, m_root, tb.t_ns, &tb, earlier);
  }

  // The process whose hook marked a thread's death just before this thread's traceback was read,
  // whatever the output's interleaving: the earliest such mark of a thread of that name (the mark
  // holds its first 16 bytes; none from an older hook) not `used` by an earlier one.
  const ProcessSummary* of_thread(const PythonTraceback& tb,
                                  std::set<const store::Event*>& used) const {
    const store::Event* mark = nullptr;
    for (const store::Event& e : m_evidence.events) {
      if (e.kind != store::EventKind::kThreadDied || used.contains(&e) ||
          e.t_ns > store::shifted_ns(tb.t_ns, kReadSlackNs) ||
          store::shifted_ns(e.t_ns, kThreadPrintNs) < tb.t_ns || !tb.thread.starts_with(e.text)) {
        continue;
      }
      if (mark == nullptr || e.t_ns < mark->t_ns) mark = &e;
    }
    if (mark == nullptr) return nullptr;
    used.insert(mark);
    const ProcessSummary* found = nullptr;
    for (const ProcessSummary& p : m_processes) {
      if (p.record.pid == mark->pid && p.record.start_ns <= mark->t_ns) found = &p;
    }
    return found;
  }

 private:
  // The one process that wrote the file `stream`; nullptr for the job's streams, or several.
  const ProcessSummary* sole_writer(const std::string& stream) const {
    auto found = m_sole_writer.find(stream);
    return found != m_sole_writer.end() ? found->second : nullptr;
  }

  // Those that did not print on `stream`: prefixed by their launcher, or writing elsewhere.
  const std::set<const ProcessSummary*>& excluded(const std::string& stream) const {
    auto found = m_excluded.find(stream);
    return found != m_excluded.end() ? found->second : m_prefixed;
  }

  const store::Evidence& m_evidence;
  const std::vector<ProcessSummary>& m_processes;
  int m_root;
  std::set<const ProcessSummary*> m_prefixed;
  std::map<std::string, std::set<const ProcessSummary*>> m_excluded;  // by stream
  std::map<std::string, const ProcessSummary*> m_sole_writer;         // of a file stream
};

namespace {

// Whether some writer of the file `stream` has it as a descriptor `fd_is` accepts.
bool written_as(const store::Evidence& evidence, std::string_view stream, bool (*fd_is)(int)) {
  for (const store::LogStream& file : evidence.logs) {
    if (file.name != stream) continue;
    return std::any_of(file.writers.begin(), file.writers.end(),
                       [&](const store::LogWriter& w) { return fd_is(w.fd); });
  }
  return false;
}

}  // namespace

bool is_error_stream(const store::Evidence& evidence, std::string_view stream) {
  return stream == "stderr" || written_as(evidence, stream, [](int fd) { return fd == 2; });
}

bool is_log_file(const store::Evidence& evidence, std::string_view stream) {
  return written_as(evidence, stream, [](int fd) { return fd > 2; });
}

const store::LogStream* output_file(const store::Evidence& evidence, const ProcessSummary& process,
                                    int fd) {
  for (const store::LogStream& file : evidence.logs) {
    for (const store::LogWriter& writer : file.writers) {
      if (writer.fd == fd && writer_process(std::span(&process, 1), writer) == &process) {
        return &file;
      }
    }
  }
  return nullptr;
}

ProcessTexts::ProcessTexts(const store::Evidence& evidence,
                           const std::vector<ProcessSummary>& processes)
    : m_evidence(evidence),
      m_owners(std::make_unique<LineOwners>(evidence, processes)),
      m_tracebacks(parse_tracebacks(evidence.log_lines)) {
  const LineOwners& owners = *m_owners;
  std::set<const store::Event*> thread_marks;
  for (const PythonTraceback& tb : m_tracebacks) {
    std::vector<SignatureMatch> found = match_traceback(tb);
    // An exception raised from another ("direct cause") or while handling it ("during handling")
    // often only reports that one: a torch.save on a full disk ends in "unexpected pos" after
    // "file write failed". The chain links to earlier tracebacks, whose lists are complete. One
    // that the user's own code raised while handling another, other than by a `raise` (which
    // wraps it: `except OutOfMemoryError: raise RuntimeError("training failed")`), is a bug of
    // the handler (a NameError in an `except FileNotFoundError:` block): the handled one is not
    // its failure.
    bool handler_bug = !tb.frames.empty() && !is_library_file(tb.frames.back().file) &&
                       !tb.frames.back().code.starts_with("raise");
    for (std::optional<size_t> link : {tb.cause, tb.context}) {
      if (!link || (link == tb.context && handler_bug)) continue;
      for (const SignatureMatch& m : m_traceback_signatures[*link]) {
        bool seen = std::any_of(found.begin(), found.end(),
                                [&](const SignatureMatch& own) { return own.id == m.id; });
        if (!seen) found.push_back(m);
      }
    }
    m_traceback_signatures.push_back(std::move(found));
    EarlierOwners earlier;
    for (size_t i = 0; i < m_traceback_owner.size(); ++i) {
      if (m_traceback_owner[i] == nullptr) continue;
      int64_t& last = earlier.last_printed_ns[m_traceback_owner[i]];
      last = std::max(last, m_tracebacks[i].t_ns);
      if (same_exception(m_tracebacks[i], tb)) earlier.same_exception.insert(m_traceback_owner[i]);
    }
    const ProcessSummary* owner = owners.of_traceback(tb, earlier);
    // A chain is printed in one go, by the process that printed its first traceback.
    std::optional<size_t> link = tb.cause ? tb.cause : tb.context;
    if (link && !tb.prefix_rank) {
      owner = m_traceback_owner[*link];
    } else if (!tb.thread.empty() && !tb.prefix_rank) {
      if (const ProcessSummary* dying = owners.of_thread(tb, thread_marks)) owner = dying;
    }
    if (owner != nullptr && tb.spawned_process) {
      if (const ProcessSummary* child = spawned_child(processes, *owner, *tb.spawned_process)) {
        owner = child;
      }
    }
    m_traceback_owner.push_back(owner);
  }
  // An embedded traceback was printed by the process that printed its host.
  for (size_t i = 0; i < m_tracebacks.size(); ++i) {
    if (auto original = m_tracebacks[i].original) {
      m_traceback_owner[*original] = m_traceback_owner[i];
    }
  }
  for (const store::LogLine& line : evidence.log_lines) {
    std::vector<SignatureMatch> found = match_line(line.text);
    if (found.empty()) continue;
    const ProcessSummary* who = nullptr;
    for (size_t i = 0; i < m_tracebacks.size() && who == nullptr; ++i) {
      const PythonTraceback& tb = m_tracebacks[i];
      if (!tb.embedded && tb.stream == line.stream && line.number >= tb.first_line &&
          line.number <= tb.last_line) {
        LinePrefix prefix = strip_launcher_prefix(line.text);
        if (prefix.prefix == tb.prefix) who = m_traceback_owner[i];
      }
    }
    if (who == nullptr) {
      LinePrefix prefix = strip_launcher_prefix(line.text);
      who = owners.of(line.stream, prefix.prefix, prefix.rank, line.t_ns);
    }
    for (SignatureMatch& match : found) {
      m_matches.push_back({std::move(match), &line});
      m_match_owner.push_back(who);
    }
  }
}

ProcessTexts::~ProcessTexts() = default;

const store::LogLine* ProcessTexts::last_words(const ProcessSummary& process) const {
  int64_t end = process.record.end_ns;
  if (end == 0) return nullptr;
  const std::vector<store::LogLine>& lines = m_evidence.log_lines;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->t_ns > store::shifted_ns(end, kFinalSlackNs)) continue;
    // Before it trained on: words of a moment it went on from.
    if (it->t_ns < store::shifted_ns(end, -kFinalWithinNs) ||
        it->t_ns < process.trained_after_ns.value_or(0))
      break;
    if (!is_error_stream(m_evidence, it->stream)) continue;
    LinePrefix prefix = strip_launcher_prefix(it->text);
    if (prefix.text.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    // A logging library's warning or note (gloo's "Unable to resolve hostname" at start-up) is
    // never what a process failed with.
    LogLevel level = log_record_level(prefix.text);
    if (level == LogLevel::kWarning || level == LogLevel::kInfo || level == LogLevel::kDebug ||
        is_python_warning(prefix.text)) {
      continue;
    }
    if (m_owners->of(it->stream, prefix.prefix, prefix.rank, it->t_ns) == &process) return &*it;
  }
  return nullptr;
}

std::vector<const PythonTraceback*> ProcessTexts::tracebacks(const ProcessSummary& process) const {
  std::vector<const PythonTraceback*> out;
  for (size_t i = 0; i < m_tracebacks.size(); ++i) {
    if (m_traceback_owner[i] == &process) out.push_back(&m_tracebacks[i]);
  }
  return out;
}

const PythonTraceback* ProcessTexts::final_exception(const ProcessSummary& process) const {
  const PythonTraceback* found = nullptr;
  const PythonTraceback* logged = nullptr;  // only in a log file (`logger.exception`)
  int64_t end = process.record.end_ns;
  for (const PythonTraceback* tb : tracebacks(process)) {
    bool error_stream = is_error_stream(m_evidence, tb->stream);
    // A thread's exception ended the thread; the process went on.
    if (tb->embedded || tb->exception_type.empty() || !tb->thread.empty() ||
        (!error_stream && !is_log_file(m_evidence, tb->stream))) {
      continue;
    }
    // A spawned process's exception is printed by its parent, after the others were stopped.
    int64_t slack = tb->spawned_process ? kExitAfterPrintNs : kFinalSlackNs;
    if (end != 0 && (tb->t_ns > store::shifted_ns(end, slack) ||
                     tb->t_ns < store::shifted_ns(end, -kFinalWithinNs))) {
      continue;
    }
    // It trained on after printing it (logged and caught): not what it ended with.
    if (process.trained_after_ns && *process.trained_after_ns > tb->t_ns) continue;
    (error_stream ? found : logged) = tb;
  }
  // Logged and then raised, the copy it printed on stderr is the one it ended with.
  return found != nullptr ? found : logged;
}

std::vector<const TextMatch*> ProcessTexts::matches(const ProcessSummary& process) const {
  std::vector<const TextMatch*> out;
  for (size_t i = 0; i < m_matches.size(); ++i) {
    if (m_match_owner[i] == &process) out.push_back(&m_matches[i]);
  }
  return out;
}

const std::vector<SignatureMatch>& ProcessTexts::signatures(
    const PythonTraceback& traceback) const {
  return m_traceback_signatures[static_cast<size_t>(&traceback - m_tracebacks.data())];
}

}  // namespace traindoc::analysis
