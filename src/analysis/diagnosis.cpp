// Builds the diagnosis from the evidence. Pure: no I/O.
// Rules that turn evidence into findings each live in a file of their own and are called here.
#include "analysis/diagnosis.h"

#include "analysis/gpu_facts.h"
#include "analysis/nccl_visibility_words.h"
#include "analysis/oom_facts.h"
#include "analysis/rules.h"
#include "store/signal_words.h"
#include "store/time_math.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

namespace traindoc::analysis {
namespace {

template <typename T>
void raise_to(std::optional<T>& peak, T value) {
  if (!peak || value > *peak) peak = value;
}

std::vector<ProcessSummary> summarize(const store::Evidence& evidence) {
  std::vector<ProcessRole> roles = assign_roles(evidence.processes, evidence.run.root_pid);
  std::vector<ProcessSummary> out;
  std::map<std::pair<int, uint64_t>, size_t> index;
  for (size_t i = 0; i < evidence.processes.size(); ++i) {
    ProcessSummary summary;
    summary.record = evidence.processes[i];
    summary.role = roles[i];
    summary.node = evidence.run.node;
    out.push_back(std::move(summary));
    index[{evidence.processes[i].pid, evidence.processes[i].start_ticks}] = i;
  }
  for (const store::ProcSample& s : evidence.proc_samples) {
    auto it = index.find({s.pid, s.start_ticks});
    if (it == index.end()) continue;
    ProcessSummary& p = out[it->second];
    p.cpu_s = std::max(p.cpu_s, s.cpu_user_s + s.cpu_sys_s);
    // A zombie's sample reads no memory: nothing of the process it was but its CPU time.
    if (s.rss == 0) continue;
    raise_to(p.peak_rss, s.rss);
    // The kernel's own peak, which a transient peak between samples reached.
    if (s.rss_peak) raise_to(p.peak_rss, *s.rss_peak);
    raise_to(p.peak_swap, s.swap);
    raise_to(p.peak_threads, s.threads);
    if (s.pss) raise_to(p.peak_pss, *s.pss);
    if (s.uss) raise_to(p.peak_uss, *s.uss);
    if (s.fds) raise_to(p.peak_fds, *s.fds);
    if (s.fd_limit) p.fd_limit = s.fd_limit;
  }
  // Each process's previous sample of each kind, in time order.
  std::map<std::tuple<int, uint64_t, store::StepKind>, const store::StepSample*> previous;
  for (const store::StepSample& s : evidence.steps) {
    auto it = index.find({s.pid, s.start_ticks});
    if (it == index.end()) continue;
    ProcessSummary& p = out[it->second];
    int64_t& count = p.steps[s.kind];
    count = std::max(count, s.count);
    const store::StepSample*& before = previous[{s.pid, s.start_ticks, s.kind}];
    if (before != nullptr && s.count > before->count) {
      p.trained_after_ns = std::max(p.trained_after_ns.value_or(before->t_ns), before->t_ns);
    }
    before = &s;
  }
  std::multimap<int, size_t> by_pid;
  for (size_t i = 0; i < out.size(); ++i) by_pid.emplace(out[i].record.pid, i);
  for (const store::Event& event : evidence.events) {
    if (event.kind != store::EventKind::kScriptFinished) continue;
    // Events carry the pid alone: the process that held it at that time.
    auto [first, last] = by_pid.equal_range(event.pid);
    for (auto it = first; it != last; ++it) {
      ProcessSummary& p = out[it->second];
      if (p.record.start_ns <= event.t_ns &&
          (p.record.end_ns == 0 || event.t_ns <= p.record.end_ns)) {
        p.script_finished_ns = event.t_ns;
      }
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const ProcessSummary& a, const ProcessSummary& b) {
    return std::tie(a.record.start_ticks, a.record.start_ns, a.record.pid) <
           std::tie(b.record.start_ticks, b.record.start_ns, b.record.pid);
  });
  return out;
}

std::vector<std::string> missing_evidence(const store::Evidence& evidence) {
  std::vector<std::string> out;
  // Counting events repeat with a growing total: the last one says it all, in the first's place.
  std::map<store::EventKind, size_t> counted;
  for (const store::Event& event : evidence.events) {
    if (event.kind == store::EventKind::kAgentNoSlot ||
        event.kind == store::EventKind::kAgentRecordsDropped ||
        event.kind == store::EventKind::kAgentSlotRefused ||
        event.kind == store::EventKind::kKernelLogRecordsLost) {
      // The kernel log's loss is stored as numbers alone: its words are made here.
      std::string words = event.kind == store::EventKind::kKernelLogRecordsLost
                              ? kernel_log_loss_words(event)
                              : event.text;
      auto [it, fresh] = counted.emplace(event.kind, out.size());
      if (fresh)
        out.push_back(std::move(words));
      else
        out[it->second] = std::move(words);
    } else if (event.kind == store::EventKind::kAgentUnavailable ||
               event.kind == store::EventKind::kSupervisorLost ||
               event.kind == store::EventKind::kStoreFailed ||
               event.kind == store::EventKind::kKernelLogUnavailable ||
               event.kind == store::EventKind::kPreflightFailed) {
      out.push_back(event.text);
    } else if (event.kind == store::EventKind::kCollectivesNotVisible) {
      out.push_back(nccl_not_visible_words(event, evidence));
    }
  }
  size_t without_agent =
      static_cast<size_t>(std::count_if(evidence.processes.begin(), evidence.processes.end(),
                                        [](const store::ProcessRecord& p) { return !p.agent; }));
  if (without_agent > 0) {
    out.push_back(std::to_string(without_agent) +
                  " process(es) ran without the agent (static or set-uid programs, programs given "
                  "an environment of their own such as env -i or a traindoc inside the job, or "
                  "gone before it started): only sampled from /proc");
  }
  if (evidence.host_samples.empty()) out.push_back("no host memory samples were taken");
  for (std::string& gpu : gpu_missing_evidence(evidence)) out.push_back(std::move(gpu));
  return out;
}

}  // namespace

std::optional<store::StepKind> ProcessSummary::step_kind() const {
  for (store::StepKind kind :
       {store::StepKind::kOptimizer, store::StepKind::kBackward, store::StepKind::kDdpForward}) {
    if (steps.contains(kind)) return kind;
  }
  return std::nullopt;
}

std::optional<int64_t> ProcessSummary::step_count() const {
  std::optional<store::StepKind> kind = step_kind();
  if (!kind) return std::nullopt;
  return steps.at(*kind);
}

const char* to_string(Severity severity) {
  switch (severity) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      break;
  }
  return "info";
}

bool ended_in_failure(const store::ProcessRecord& record) {
  return (record.exit_code && *record.exit_code != 0) || record.exit_signal;
}

bool stopped_by_request_signal(const store::ProcessRecord& record) {
  int sig = record.exit_signal.value_or(0);
  return sig == SIGTERM || sig == SIGINT || sig == SIGHUP;
}

bool may_be_caused(const Finding& finding) {
  return finding.severity != Severity::kWarning || finding.kind == FindingKind::kKilledExternally ||
         finding.kind == FindingKind::kJobIdle;
}

bool failed_itself(const store::ProcessRecord& record) {
  return ended_in_failure(record) && !stopped_by_request_signal(record);
}

std::string format_seconds(int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(ns) / 1e9);
  return text;
}

std::string process_name(const ProcessSummary& p) {
  return describe(p.role) + " (pid " + std::to_string(p.record.pid) +
         (p.node.empty() ? "" : " on " + p.node) + ")";
}

std::string counted(int n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string format_bytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  auto value = static_cast<double>(bytes);
  size_t unit = 0;
  // Step up on the value as printed, so that 1 MiB - 10 B reads "1.0 MiB", not "1024 KiB".
  auto rounded = [&] {
    return unit == 0 || value >= 100 ? std::round(value) : std::round(value * 10) / 10;
  };
  while (rounded() >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 || value >= 100 ? "%.0f %s" : "%.1f %s", value,
                kUnits[unit]);
  return text;
}

std::string signal_name(int signal) {
  // A number no signal has: a damaged or forged run.db.
  if ((signal <= 0 || signal >= NSIG) && sigabbrev_np(signal) == nullptr) {
    return "an invalid signal number " + std::to_string(signal);
  }
  return store::signal_words(signal);
}

// One failure that several processes report (both ranks of a mismatch, workers crashing in the
// same place) is one finding: the earliest, naming every rank and process.
constexpr int64_t kSameFailureNs = 30'000'000'000;

void merge_same(std::vector<TimedFinding>& found) {
  std::stable_sort(found.begin(), found.end(),
                   [](const TimedFinding& a, const TimedFinding& b) { return a.t_ns < b.t_ns; });
  std::vector<TimedFinding> out;
  for (TimedFinding& timed : found) {
    auto same = std::find_if(out.begin(), out.end(), [&](const TimedFinding& kept) {
      return !timed.merge_key.empty() && kept.merge_key == timed.merge_key &&
             store::elapsed_ns(kept.t_ns, timed.t_ns) <= kSameFailureNs;
    });
    if (same == out.end()) {
      out.push_back(std::move(timed));
      continue;
    }
    // A hang the checker saw names who never came; a rank's timeout text of it, however early
    // it was stamped, names the one that waited, and is evidence. (For a peer that left, the
    // texts' account, with each rank's steps, stays first.)
    if (timed.from_checker && !same->from_checker &&
        timed.finding.kind == FindingKind::kCollectiveMissing) {
      int64_t first_ns = same->t_ns;
      std::swap(*same, timed);
      same->t_ns = first_ns;
    }
    Finding& into = same->finding;
    // A hang names the ranks that were missing; another rank's timeout, the same hang seen
    // from where it waited, is evidence and adds no one to look at.
    bool waited = into.kind == FindingKind::kCollectiveMissing && !into.ranks.empty() &&
                  timed.finding.kind == FindingKind::kCollectiveMissing;
    if (!waited) {
      add_ranks(into.ranks, timed.finding.ranks);
      std::sort(into.ranks.begin(), into.ranks.end());
      for (int pid : timed.finding.pids) {
        if (std::find(into.pids.begin(), into.pids.end(), pid) == into.pids.end()) {
          into.pids.push_back(pid);
        }
      }
    }
    // A title that names no process (a warning every rank printed) is said once; who else
    // said it is the news.
    const Finding& other = timed.finding;
    into.evidence.push_back(other.title == into.title && !other.evidence.empty()
                                ? "also " + other.evidence.front()
                                : "the same failure, also: " + other.title);
  }
  found = std::move(out);
}

// The rank that replaced this one when the launcher restarted its ranks (torchrun
// --max_restarts) and ended well; nullptr when none did.
const ProcessSummary* restarted_as(const RuleContext& context, const ProcessSummary& p) {
  if (p.role.role != Role::kRank || !p.role.rank) return nullptr;
  for (const ProcessSummary& q : context.processes) {
    if (q.role.role == Role::kRank && q.role.rank == p.role.rank &&
        q.record.start_ns > p.record.start_ns && q.record.exit_code == 0 && !q.record.exit_signal) {
      return &q;
    }
  }
  return nullptr;
}

// A failure of ranks that a restart replaced, in a job that then ended well, is a warning: the
// job recovered from it, and it is no root cause of anything.
void mark_recovered(const RuleContext& context, std::vector<TimedFinding>& found) {
  if (!run_finished(context)) return;
  for (TimedFinding& timed : found) {
    Finding& f = timed.finding;
    if (f.severity != Severity::kError || f.pids.empty()) continue;
    std::vector<std::string> restarts;
    for (int pid : f.pids) {
      const ProcessSummary* p = context.process(pid);
      const ProcessSummary* again = p != nullptr ? restarted_as(context, *p) : nullptr;
      if (again == nullptr) break;
      restarts.push_back(describe(p->role) + " was started again" +
                         context.when(again->record.start_ns) + " (pid " +
                         std::to_string(again->record.pid) + ") and exited with code 0");
    }
    if (restarts.size() != f.pids.size()) continue;
    f.severity = Severity::kWarning;
    f.title += " (recovered: the launcher restarted the ranks and the job finished)";
    f.evidence.insert(f.evidence.end(), restarts.begin(), restarts.end());
  }
}

// A failure that each attempt of a launcher's restarts repeated (merged into one finding): the
// attempts are counted, and a restart is no fix for it.
void mark_repeated(const RuleContext& context, std::vector<TimedFinding>& found) {
  for (TimedFinding& timed : found) {
    Finding& f = timed.finding;
    const ProcessSummary* first = f.pids.empty() ? nullptr : context.process(f.pids.front());
    if (f.severity != Severity::kError || first == nullptr || first->role.role != Role::kRank) {
      continue;
    }
    size_t attempts = 0;
    for (int pid : f.pids) {
      const ProcessSummary* p = context.process(pid);
      if (p != nullptr && p->role.role == Role::kRank && p->role.rank == first->role.rank) {
        ++attempts;
      }
    }
    if (attempts < 2) continue;
    f.title +=
        " (in each of " + std::to_string(attempts) + " attempts: the launcher restarted the ranks)";
    f.fix +=
        " The launcher restarted the ranks and each attempt failed the same way: "
        "restarts do not help a failure of the code, its configuration or its data.";
  }
}

// Whether `later` is a consequence of the root cause: a failure (an error, or the launcher's
// teardown, an info) at or after it, a process stopped by a signal after it (the teardown it set
// off), or the job hanging after it (waiting for what failed). Warnings about a condition (a
// leak, a straggler, memory on the wrong GPU) and anything before the root cause are not caused
// by it: they are listed on their own.
bool caused_by(const TimedFinding& root, const TimedFinding& later) {
  return later.t_ns >= root.t_ns && may_be_caused(later.finding);
}

// Alike findings are grouped from this many on; fewer read well one by one.
constexpr size_t kGroupFrom = 3;
// A group keeps its first few findings as examples, and its last.
constexpr size_t kGroupFirstExamples = 3;

// `text` with what tells alike findings apart blanked: the numbers that name processes (pid
// 4250, pid(s) 4250, 4251, rank 1, worker 3), lines of the output, and times (+12.3 s, 0.4 s).
// Other numbers (an exit code, a size, a line of code) are the failure's own and stay.
std::string alike_text(std::string_view text) {
  static constexpr std::string_view kNaming[] = {"pid ",    "pids ", "pid(s) ", "rank ", "ranks ",
                                                 "worker ", "line ", "lines ",  "+"};
  auto digit = [&](size_t i) {
    return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
  };
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!digit(i) || (i > 0 && std::isalnum(static_cast<unsigned char>(text[i - 1])))) {
      out += text[i++];
      continue;
    }
    size_t end = i;
    while (digit(end) || (end < text.size() && text[end] == '.' && digit(end + 1))) ++end;
    std::string_view before = text.substr(0, i);
    bool naming = std::any_of(std::begin(kNaming), std::end(kNaming), [&](std::string_view word) {
      return before.ends_with(word) &&
             (before.size() == word.size() || word == "+" ||
              !std::isalpha(static_cast<unsigned char>(before[before.size() - word.size() - 1])));
    });
    std::string_view after = text.substr(end);
    bool seconds = after.starts_with(" s") &&
                   (after.size() == 2 || !std::isalnum(static_cast<unsigned char>(after[2])));
    if (!naming && !seconds) {
      out.append(text.substr(i, end - i));
      i = end;
      continue;
    }
    out += '#';
    i = end;
    // and the rest of a list or range of them: "pids 4250, 4251", "lines 12-30"
    while ((text.substr(i).starts_with(", ") && digit(i + 2)) ||
           (i < text.size() && text[i] == '-' && digit(i + 1))) {
      i += text[i] == '-' ? 1 : 2;
      while (digit(i)) ++i;
    }
  }
  return out;
}

// Findings that say the same but for the processes and times they name (a job that forks
// thousands of children, each exiting alike) are told once: the earliest stands for them all,
// with their count, every pid and rank, and a few examples. The root cause is never grouped: it
// stays alone, and the alike findings after it are one consequence. Those it caused and those it
// did not are grouped apart.
void group_alike(const RuleContext& context, std::vector<TimedFinding>& found, bool rooted) {
  size_t from = rooted ? 1 : 0;
  std::map<std::string, std::vector<size_t>> alike;
  for (size_t i = from; i < found.size(); ++i) {
    const Finding& f = found[i].finding;
    bool caused = rooted && caused_by(found.front(), found[i]);
    alike[std::string(to_string(f.kind)) + '\n' + to_string(f.severity) + '\n' +
          (caused ? "caused" : "") + '\n' + alike_text(f.title) + '\n' + alike_text(f.fix)]
        .push_back(i);
  }
  std::vector<bool> grouped(found.size(), false);
  for (const auto& [key, members] : alike) {
    if (members.size() < kGroupFrom) continue;
    Finding& into = found[members.front()].finding;
    std::set<int> named(into.pids.begin(), into.pids.end());
    Repeats repeats;
    repeats.count = members.size();
    repeats.first_ns = found[members.front()].t_ns;
    repeats.last_ns = found[members.back()].t_ns;
    std::string examples;
    for (size_t k = 0; k < members.size(); ++k) {
      const TimedFinding& member = found[members[k]];
      if (k < kGroupFirstExamples || k + 1 == members.size()) {
        repeats.examples.push_back({member.finding.title, member.finding.pids, member.t_ns});
        examples += (k == 0                    ? ""
                     : k + 1 == members.size() ? "; the last, "
                                               : "; ") +
                    member.finding.title + context.when(member.t_ns);
      } else if (k == kGroupFirstExamples) {
        examples += "; ...";
      }
      if (k == 0) continue;
      grouped[members[k]] = true;
      add_ranks(into.ranks, member.finding.ranks);
      for (int pid : member.finding.pids) {
        if (named.insert(pid).second) into.pids.push_back(pid);
      }
    }
    std::sort(into.ranks.begin(), into.ranks.end());
    into.evidence.insert(into.evidence.begin(),
                         std::to_string(members.size()) + " alike findings: " + examples);
    into.title += " (and " + std::to_string(members.size() - 1) + " more alike)";
    into.repeats = std::move(repeats);
  }
  std::vector<TimedFinding> kept;
  for (size_t i = 0; i < found.size(); ++i) {
    if (!grouped[i]) kept.push_back(std::move(found[i]));
  }
  found = std::move(kept);
}

// Failures cascade (a worker dies, its rank raises, the launcher stops the rest): the earliest
// error is the root cause and the later failures are its consequences. A stop that was asked for
// (Ctrl-C, a scheduler's SIGTERM) with no error before it is the cause of what fails after it; a
// job that finished (exit code 0) after one did not fail.
std::vector<Finding> order_by_cause(const RuleContext& context, std::vector<TimedFinding> found) {
  bool finished = run_finished(context);
  auto leads = [&](const TimedFinding& t) {
    return t.finding.severity == Severity::kError ||
           (t.finding.kind == FindingKind::kStopRequested && !finished);
  };
  std::stable_sort(found.begin(), found.end(), [&](const TimedFinding& a, const TimedFinding& b) {
    if (leads(a) != leads(b)) return leads(a);
    return a.t_ns < b.t_ns;
  });
  bool rooted = !found.empty() && leads(found.front());
  if (rooted) found.front().finding.root_cause = true;
  group_alike(context, found, rooted);
  if (rooted) {
    for (size_t i = 1; i < found.size(); ++i) {
      if (caused_by(found.front(), found[i])) found.front().finding.consequences.push_back(i);
    }
  }
  std::vector<Finding> out;
  out.reserve(found.size());
  for (TimedFinding& timed : found) {
    timed.finding.t_ns = timed.t_ns;
    out.push_back(std::move(timed.finding));
  }
  return out;
}

namespace {

// The files whose lines a launcher also printed on the job's own output (torchrun --tee copies
// each rank's file there, prefixed): the copy the user saw is the one to tell, attributed as
// before; the file's would only tell each line twice. Known by at least half of the file's
// non-blank kept lines printed there too.
std::set<std::string> copied_files(const store::Evidence& evidence) {
  std::set<std::string_view> printed;
  for (const store::LogLine& line : evidence.log_lines) {
    if (store::is_job_stream(line.stream)) {
      printed.insert(strip_launcher_prefix(line.text).text);
    }
  }
  std::map<std::string, std::pair<size_t, size_t>> seen;  // by file: lines, and those printed
  for (const store::LogLine& line : evidence.log_lines) {
    if (store::is_job_stream(line.stream) ||
        line.text.find_first_not_of(" \t\r") == std::string::npos) {
      continue;
    }
    auto& [lines, copied] = seen[line.stream];
    ++lines;
    copied += printed.contains(line.text) ? 1 : 0;
  }
  std::set<std::string> out;
  for (const auto& [file, counts] : seen) {
    if (counts.second > 0 && 2 * counts.second >= counts.first) out.insert(file);
  }
  return out;
}

// Every rule, on the evidence as the analysis reads it.
Diagnosis diagnose_evidence(const store::Evidence& evidence) {
  Diagnosis out;
  out.run = evidence.run;
  out.processes = summarize(evidence);
  out.missing_evidence = missing_evidence(evidence);
  ProcessTexts texts(evidence, out.processes);
  RuleContext context{evidence, out.processes, texts};
  out.gpus = summarize_gpus(context);
  std::vector<TimedFinding> found;
  for (const Rule& rule : rule_table()) rule.run(context, found);
  mark_recovered(context, found);
  merge_same(found);
  mark_repeated(context, found);
  out.findings = order_by_cause(context, std::move(found));
  return out;
}

}  // namespace

Diagnosis diagnose(const store::Evidence& evidence) {
  std::set<std::string> copied = copied_files(evidence);
  if (copied.empty()) return diagnose_evidence(evidence);
  store::Evidence own = evidence;
  std::erase_if(own.log_lines,
                [&](const store::LogLine& line) { return copied.contains(line.stream); });
  for (store::LogStream& stream : own.logs) {
    if (copied.contains(stream.name)) stream.writers.clear();
  }
  return diagnose_evidence(own);
}

}  // namespace traindoc::analysis
