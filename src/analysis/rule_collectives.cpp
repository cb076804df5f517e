// Rule: what the supervisor's collective checker found while the job ran (collective-mismatch,
// collective-order, collective-missing, uneven-inputs, peer-exited), with each rank's part, the
// call sites, the stacks it collected and the fix. Pure.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "analysis/rules.h"
#include "store/collective_words.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr size_t kStackLines = 12;  // of each rank's dump, in the evidence

std::string fix_for(FindingKind kind, store::IssueField field) {
  using store::IssueField;
  if (field == IssueField::kSite) {
    return "Make every rank run the same collectives: move the call out of code that only some "
           "ranks run (`if rank == 0:`, rank_zero_only), or keep that code local (log the "
           "rank's own value; in Lightning, self.log(..., rank_zero_only=True)).";
  }
  if (field == IssueField::kDeadlock) {
    return "Order the point-to-point calls so that every recv meets a send already made: let one "
           "side send first (even ranks send then receive, odd ranks receive then send), or post "
           "both with isend/irecv (or batch_isend_irecv) and wait on both.";
  }
  if (kind == FindingKind::kCollectiveOrder) {
    return "Issue collectives in the same order on every rank: no rank-dependent branches, "
           "early returns or iteration over unordered containers around them.";
  }
  if (kind == FindingKind::kCollectiveMissing) {
    return "Make the collective unconditional, or guard it identically on every rank (decide a "
           "skip collectively, e.g. all_reduce a flag with MAX); if the missing rank is only "
           "slower, balance its work or raise the process group timeout.";
  }
  if (kind == FindingKind::kPeerExited) {
    return "Find why the rank that ended first failed (its own finding and log); the ranks that "
           "waited for it are victims, not causes.";
  }
  if (kind == FindingKind::kUnevenInputs) {
    return "Give every rank the same number of batches (DistributedSampler with drop_last=True, "
           "or the DDP join() context manager), and decide to skip a batch collectively rather "
           "than per rank.";
  }
  if (field == IssueField::kListLength) {
    return "Pass broadcast_object_list a list of the same length on every rank: it fills the "
           "list in place, element for element ([None] * n on the receiving ranks, with the n "
           "of the sending rank), and lists of other lengths pair the wrong bytes (an EOFError "
           "or UnpicklingError on the receivers, or a hang).";
  }
  if (field == IssueField::kShape || field == IssueField::kCount) {
    return "Pass tensors of the same shape on every rank: pad to a common size, or all-gather "
           "the sizes first and pad, then trim (or use all_gather_object).";
  }
  if (field == IssueField::kDtype) {
    return "Cast to one dtype on every rank before the call (e.g. .float() or .long()): a "
           "collective must see the same element type everywhere.";
  }
  if (field == IssueField::kDevice) {
    return "Put the tensors on the same kind of device on every rank (e.g. .to(device) with each "
           "rank's own GPU): a backend that takes both (gloo) then moves or compares different "
           "memory, and NCCL takes only CUDA tensors.";
  }
  if (field == IssueField::kRedop) {
    return "Use the same reduce op on every rank: a different op silently corrupts the result.";
  }
  if (field == IssueField::kRoot) {
    return "Use the same root (src/dst) on every rank.";
  }
  return "Make the control flow around collectives rank-independent, so that every rank issues "
         "the same collective at the same point.";
}

// A rank the others waited for: it never made the call, or ended without making it.
bool missing(const store::CollectiveIssueRank& rank) {
  return rank.state == store::RankState::kNeverCalled;
}

// A kind of failure that a process's peers or collectives gave it.
bool about_peers(std::optional<FindingKind> kind) {
  static const std::set<FindingKind> kAboutPeers = {
      FindingKind::kCollectiveMismatch, FindingKind::kCollectiveOrder,
      FindingKind::kCollectiveMissing,  FindingKind::kUnevenInputs,
      FindingKind::kPeerExited,         FindingKind::kRendezvousTimeout,
      FindingKind::kKilledExternally};
  return kind && kAboutPeers.contains(*kind);
}

// The checker's account of ranks that ended unevenly (a rank failed soon after another exited
// normally), its ranks the one that left and the one that failed; not a call some never made.
bool ended_unevenly(const store::CollectiveIssue& issue) {
  return issue.kind == store::IssueKind::kUnevenInputs && issue.field == store::IssueField::kCalls;
}

// An uneven-inputs issue (a rank failed soon after another exited normally) whose failed rank
// raised an exception of its own, not one about its lost peer or collective (a checkpoint it
// could not write after its peer was done, an error in work only it does at the end): the ranks
// ended unevenly, which says nothing of their inputs; its own finding tells its failure.
bool failed_on_its_own(const RuleContext& context, const store::CollectiveIssue& issue) {
  if (!ended_unevenly(issue) || issue.ranks.size() < 2) return false;
  const ProcessSummary* left = context.process(issue.ranks[0].pid, issue.ranks[0].start_ticks);
  const ProcessSummary* failed = context.process(issue.ranks[1].pid, issue.ranks[1].start_ticks);
  if (left == nullptr || failed == nullptr) return false;
  // The same number of steps: neither ran out of batches first.
  if (store::same_step_counts(left->steps, failed->steps).value_or(false)) return true;
  // An error known to be its own; an unknown one may be a lost peer's in words no text knows.
  if (context.texts.final_exception(*failed) == nullptr) return false;
  std::optional<FindingKind> own = final_exception_kind(context, *failed);
  return own && !about_peers(own);
}

// The missing rank failed on a lost peer, and a rank that waited in the call had given up and
// ended before: its failure came of the hang, not before it. (One that crashed is held by its
// crash capture, so its end may come after a waiting rank's.)
bool lost_a_waiting_rank(const RuleContext& context, const store::CollectiveIssue& issue,
                         const ProcessSummary& process) {
  if (final_exception_kind(context, process) != FindingKind::kPeerExited) return false;
  return issue.op == store::kDdpGradientOp ||
         std::any_of(issue.ranks.begin(), issue.ranks.end(), [&](const auto& rank) {
           const ProcessSummary* waited = context.process(rank.pid, rank.start_ticks);
           return !missing(rank) && waited != nullptr && ended_in_failure(waited->record) &&
                  waited->record.end_ns < process.record.end_ns;
         });
}

// An issue about ranks that did not come: the checker files it as peer-exited where a missing
// rank's failed end was seen before any waiting rank gave up, as uneven-inputs where the call is
// DDP's gradient all-reduce and their training steps differ, else as collective-missing.
bool about_missing_ranks(const store::CollectiveIssue& issue) {
  return issue.kind == store::IssueKind::kMissing || issue.kind == store::IssueKind::kPeerExited ||
         (issue.kind == store::IssueKind::kUnevenInputs &&
          issue.field == store::IssueField::kMissing);
}

// A rank that made a call the others do not make (from there): it runs code they do not.
bool odd(const store::CollectiveIssueRank& rank) {
  return rank.odd;
}

// The process of a missing rank came late to the call: the same process, not a restarted
// attempt's. However it ended after, it did not die before the call.
bool made_the_late_call(const store::CollectiveIssue* late,
                        const store::CollectiveIssueRank& rank) {
  return late != nullptr && std::any_of(late->ranks.begin(), late->ranks.end(), [&](auto& r) {
           return r.group_rank == rank.group_rank && r.pid == rank.pid &&
                  r.start_ticks == rank.start_ticks && r.state == store::RankState::kCameLate;
         });
}

// A rank that waited for the straggler gave up before it came (its wait timed out, or it
// ended): the straggler failed the job. One that came in time only slowed it.
bool waited_in_vain(const RuleContext& context, const store::CollectiveIssue& late) {
  return std::any_of(late.ranks.begin(), late.ranks.end(), [&](auto& r) {
    const ProcessSummary* p = context.process(r.pid, r.start_ticks);
    return r.state != store::RankState::kCameLate && p != nullptr &&
           (gave_up_waiting(context, *p) ||
            (p->record.end_ns != 0 && p->record.end_ns <= late.t_ns));
  });
}

// Whether a group rank is one of the stragglers of a late arrival.
bool came_late(const store::CollectiveIssue& late, int group_rank) {
  return std::any_of(late.ranks.begin(), late.ranks.end(),
                     [&](const store::CollectiveIssueRank& r) {
                       return r.group_rank == group_rank && r.state == store::RankState::kCameLate;
                     });
}

std::string how_it_ended(const store::ProcessRecord& r) {
  return r.exit_signal ? "died of " + signal_name(*r.exit_signal)
                       : "exited with code " + std::to_string(r.exit_code.value_or(0));
}

// "rank 1 ran 3 backward, 4 ddp-forward; rank 0 ran 4 backward, 4 ddp-forward"
std::string step_counts(const RuleContext& context, const store::CollectiveIssue& issue) {
  std::string out;
  for (const store::CollectiveIssueRank& rank : issue.ranks) {
    const ProcessSummary* p = context.process(rank.pid, rank.start_ticks);
    if (p == nullptr || p->steps.empty()) continue;
    std::string counts;
    for (const auto& [kind, count] : p->steps) {
      counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " " + store::to_string(kind);
    }
    out += (out.empty() ? "" : "; ") + describe(p->role) + " ran " + counts;
  }
  return out;
}

// "rank 1 (pid 4242)", or the pid where the process is not in the evidence.
std::string who_of(const RuleContext& context, const store::CollectiveIssueRank& rank) {
  const ProcessSummary* process = context.process(rank.pid, rank.start_ticks);
  return process ? context.name(*process) : "pid " + std::to_string(rank.pid);
}

// The laggards' late arrival at the call a stall was reported for (CASES.md H14), if they came.
const store::CollectiveIssue* late_arrival(const RuleContext& context,
                                           const store::CollectiveIssue& stall) {
  if (stall.kind != store::IssueKind::kMissing || stall.field != store::IssueField::kMissing) {
    return nullptr;
  }
  for (const store::CollectiveIssue& issue : context.evidence.collective_issues) {
    if (issue.field == store::IssueField::kLate && issue.group == stall.group &&
        issue.number == stall.number) {
      return &issue;
    }
  }
  return nullptr;
}

// A straggler made the others wait: the failure when they gave up before it came, else a
// warning (the job finished, or failed of something else).
void as_straggler(const RuleContext& context, const store::CollectiveIssue& late, Finding& f) {
  f.severity = waited_in_vain(context, late) ? Severity::kError : Severity::kWarning;
  f.title = store::issue_title(late);
  f.fix =
      "Balance the work across ranks (shard evaluation and generation evenly, cap sequence "
      "lengths), or raise the process group timeout (init_process_group(timeout=...)) for "
      "phases that are uneven by nature; nothing is wrong with the order of the calls.";
  f.confidence = 0.8;
  for (const store::CollectiveIssueRank& rank : late.ranks) {
    f.evidence.push_back("group rank " + std::to_string(rank.group_rank) + ", " +
                         who_of(context, rank) + ": " + store::rank_state_text(late, rank) +
                         (rank.site.empty() ? "" : "; at " + rank.site));
  }
  f.evidence.push_back("the stacks below show where each rank was while the others waited");
}

// The share of a core the process used from `from_ns` to `to_ns`, from the samples nearest
// outside that time (older samples are thinned to one a minute); nullopt without two samples.
std::optional<double> cpu_share(const RuleContext& context, int pid, uint64_t start_ticks,
                                int64_t from_ns, int64_t to_ns) {
  const store::ProcSample* first = nullptr;
  const store::ProcSample* last = nullptr;
  for (const store::ProcSample& s : context.evidence.proc_samples) {
    if (s.pid != pid || s.start_ticks != start_ticks) continue;
    if (s.t_ns <= from_ns || first == nullptr) first = &s;
    if (last == nullptr || last->t_ns < to_ns) last = &s;
  }
  if (first == nullptr || last->t_ns <= first->t_ns) return std::nullopt;
  double cpu = last->cpu_user_s + last->cpu_sys_s - first->cpu_user_s - first->cpu_sys_s;
  return cpu * 1e9 / static_cast<double>(store::elapsed_ns(first->t_ns, last->t_ns));
}

// The native frames of a stack dump's main thread.
std::string_view main_native(const std::string& dump) {
  size_t at = dump.find("native (main thread):");
  if (at == std::string::npos) return {};
  size_t end = dump.find("native (", at + 1);
  return std::string_view(dump).substr(at, end == std::string::npos ? end : end - at);
}

bool has_any(std::string_view text, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return text.find(n) != std::string_view::npos; });
}

// The main thread waits to take a lock: a Python lock (threading.Lock, Condition, Queue, Event;
// a semaphore, or CPython 3.13's PyMutex) or a native mutex.
bool waits_on_lock(const std::string& dump) {
  return has_any(main_native(dump),
                 {"PyThread_acquire_lock", "_PyMutex_LockTimed", "_PyParkingLot_Park", "sem_wait",
                  "sem_timedwait", "pthread_mutex_lock", "__lll_lock_wait"});
}

// The main thread waits for the GPU, which CUDA's default schedule spins on: CPU, yet no work.
bool waits_on_gpu(const std::string& dump) {
  return has_any(main_native(dump),
                 {"libcuda", "libcudart", "cudaStreamSynchronize", "cudaDeviceSynchronize",
                  "_local_scalar_dense", "ProcessGroupNCCL"});
}

// Of a core: running, not waiting. A wait takes at most a few percent; a loop on a machine whose
// cores the job shares with other work may get well under half of one.
constexpr double kBusyShare = 0.2;

// The dump's main thread, its Python frames then its native ones: the other threads (a
// DataLoader's queue feeders, a logger) wait where they always wait. A dump without threads
// marked is taken whole.
std::string stack_excerpt(const std::string& stack) {
  bool marked = stack.find("Current thread ") != std::string::npos;
  std::istringstream lines(stack);
  std::string line;
  std::string out;
  bool main = !marked;
  for (size_t n = 0; n < kStackLines && std::getline(lines, line);) {
    if (line.starts_with("Current thread ") || line.starts_with("native")) main = true;
    if (line.starts_with("Thread ")) main = !marked;
    // The hook's wrapper around the collective: the user's call is the frame below it.
    if (!main || line.empty() || is_hook_file(line)) continue;
    out += (out.empty() ? "" : " | ") + line;
    ++n;
  }
  return out;
}

// The missing rank's DataLoader workers in the middle of a sample while it waits for a batch,
// from the stacks the stall watch asked of them when it found the issue (and read within the
// moment it waits for dumps).
Fetchers stalled_fetchers(const RuleContext& context, const store::CollectiveIssue& issue,
                          const store::CollectiveIssueRank& rank) {
  // The supervisor reads the dumps it asks for within 1.5 s (kMomentStacksWaitNs).
  constexpr int64_t kDumpsReadNs = 5'000'000'000;
  Fetchers out;
  for (const store::Event& e : context.evidence.events) {
    if (e.kind != store::EventKind::kStackAtStall || e.t_ns < issue.t_ns ||
        e.t_ns > store::shifted_ns(issue.t_ns, kDumpsReadNs)) {
      continue;
    }
    const ProcessSummary* worker = context.process(e.pid);
    const ProcessSummary* above = worker != nullptr ? rank_above(context, *worker) : nullptr;
    if (above == nullptr || above->record.pid != rank.pid ||
        !fetching_for_rank(*worker, e.text, rank.stack) ||
        std::any_of(out.begin(), out.end(), [&](const auto& f) { return f.first == worker; })) {
      continue;
    }
    out.emplace_back(worker, e.text);
  }
  return out;
}

// What a missing rank the others wait for does at `place`: waits for a batch from a DataLoader
// worker stuck in a sample (the worker's stack), waits on a lock (its stack: a wait of its own
// that does not end), or runs its own code (its CPU samples: a loop that does not end, work only
// it does). Adds it to the title (and the workers' stacks to `evidence`) and returns its fix;
// "" when they say none.
std::string what_it_does(const RuleContext& context, const store::CollectiveIssue& issue,
                         const store::CollectiveIssueRank& rank, const ProcessSummary& process,
                         const std::string& place, std::string& title,
                         std::vector<std::string>& evidence) {
  // Its data does not come: what the worker it waits for is doing is the cause.
  if (Fetchers fetchers = stalled_fetchers(context, issue, rank); !fetchers.empty()) {
    title += " " + batch_wait(context, fetchers);
    for (const auto& [worker, dump] : fetchers) {
      evidence.push_back(context.name(*worker) + " stack: " + stack_excerpt(dump));
    }
    return kWorkerStuckFix;
  }
  // A main thread blocked on a lock does no work, whatever another thread of it burns.
  if (waits_on_lock(rank.stack)) {
    title += " waits on a lock or a queue at " + place;
    return "The missing rank is blocked taking a lock, or waiting on a queue or an event, at " +
           place +
           ": a wait that does not end (a lock taken twice or held by a thread that died, a queue "
           "nothing fills, a thread it joins that does not finish, DataLoader workers that "
           "hang). Its stack in the report shows the wait; find what holds the lock or should "
           "fill the queue (py-spy dump --pid shows every thread live).";
  }
  std::optional<double> share =
      cpu_share(context, rank.pid, process.record.start_ticks, issue.first_ns, issue.t_ns);
  if (share && *share >= kBusyShare && !waits_on_gpu(rank.stack)) {
    title +=
        " is busy at " + place + " (" + std::to_string(std::lround(*share * 100)) + "% of a core)";
    return "The missing rank is running its own code while the others wait (at " + place +
           "): a loop that does not end, work that only it does or that takes it far longer "
           "(evaluation, saving or logging on one rank), or code past a collective it skipped "
           "(a rank-dependent branch). Make it reach the same collective: finish or share that "
           "work, guard the collective identically on every rank, or raise the process group "
           "timeout (init_process_group(timeout=...)) for work long by nature.";
  }
  return "";
}

// One issue's finding as its ranks are added to it.
struct IssueFinding {
  const RuleContext& context;
  const store::CollectiveIssue& issue;
  const store::CollectiveIssue* late;  // the laggards' late arrival, for a stall
  TimedFinding timed;
  bool any_missing = false;
  bool any_odd = false;
  bool fitted = false;  // a missing rank's doing gave the fix
};

IssueFinding start_finding(const RuleContext& context, const store::CollectiveIssue& issue,
                           FindingKind kind) {
  IssueFinding out{context, issue, late_arrival(context, issue), {}};
  Finding& f = out.timed.finding;
  f.kind = kind;
  // Calls from different places may have paired harmlessly: an error only if the job failed.
  f.severity = issue.field == store::IssueField::kSite && run_finished(context) ? Severity::kWarning
                                                                                : Severity::kError;
  f.title = store::issue_title(issue);
  f.fix = fix_for(kind, issue.field);
  f.confidence = kind == FindingKind::kUnevenInputs ? 0.7 : 0.9;
  out.timed.t_ns = issue.first_ns;
  // The text rules may see the same failure in the ranks' errors: one finding.
  out.timed.merge_key = to_string(issue.kind);
  out.timed.from_checker = true;
  if (out.late != nullptr) as_straggler(context, *out.late, f);
  out.any_missing = std::any_of(issue.ranks.begin(), issue.ranks.end(), missing);
  out.any_odd = std::any_of(issue.ranks.begin(), issue.ranks.end(), odd);
  return out;
}

// A rank that came late, did not come, made a call the others do not, or ran out of batches
// first (listed first) is the one to look at; the others are in the evidence.
bool named_rank(const IssueFinding& in, const store::CollectiveIssueRank& rank) {
  if (in.late != nullptr) return came_late(*in.late, rank.group_rank);
  if (in.any_odd) return odd(rank);
  if (ended_unevenly(in.issue)) return &rank == &in.issue.ranks.front();
  return !about_missing_ranks(in.issue) || !in.any_missing || missing(rank);
}

// A missing rank that ended while the others waited, or died of its own failure. One the
// launcher stopped (SIGTERM, SIGINT) after a waiting rank gave up is a consequence, and so are
// one a stop request ended (the user gave up on the hang), one that timed out waiting elsewhere,
// and one that lost a waiting rank that had given up and left. One whose program had finished
// (`finished`) skipped the call, however its teardown then ended.
bool ended_first(const IssueFinding& in, const store::CollectiveIssueRank& rank,
                 const ProcessSummary* process, bool finished) {
  const RuleContext& context = in.context;
  return about_missing_ranks(in.issue) && missing(rank) && process != nullptr &&
         !made_the_late_call(in.late, rank) && ended_in_failure(process->record) && !finished &&
         !stopped_on_request(context, process->record) && !gave_up_waiting(context, *process) &&
         !lost_a_waiting_rank(context, in.issue, *process) &&
         (rank.end.has_value() || !stopped_by_request_signal(process->record));
}

// It died first: its own finding is the cause, the others' wait its consequence.
void blame_ended_rank(IssueFinding& in, const ProcessSummary& process, const std::string& who) {
  const store::CollectiveIssue& issue = in.issue;
  Finding& f = in.timed.finding;
  f.kind = FindingKind::kPeerExited;
  f.title = who + " " + how_it_ended(process.record) + " before " + issue.op + " #" +
            std::to_string(issue.number) + ", which " +
            (issue.pair ? "its peer" : "the other ranks") + " waited in";
  f.fix = fix_for(FindingKind::kPeerExited, store::IssueField::kMissing);
  // After the end it tells, and after a waiting rank's own account of the same end
  // (rule_peer_exited's lost connection, timed at that end), which then leads the merge
  // whichever of the two was seen first.
  in.timed.t_ns = std::max(issue.t_ns, store::shifted_ns(process.record.end_ns, 2));
  in.timed.merge_key = to_string(f.kind);
}

// Where a missing rank the others wait for is: at a prompt (the prompt is why, and what to fix),
// often in another collective only it makes (a model wrapped in DDP on one rank only), or in
// work only it does.
void add_whereabouts(IssueFinding& in, const store::CollectiveIssueRank& rank,
                     const ProcessSummary* process, const std::string& who) {
  const RuleContext& context = in.context;
  Finding& f = in.timed.finding;
  if (f.kind != FindingKind::kCollectiveMissing || !missing(rank)) return;
  const store::Event* prompt = in.issue.kind == store::IssueKind::kMissing && rank.pid != 0
                                   ? stdin_wait(context, rank.pid, in.issue.first_ns)
                                   : nullptr;
  if (prompt != nullptr) {
    f.title += "; " + who + " " + prompt->text;
    f.evidence.push_back(who + " " + prompt->text + context.when(prompt->t_ns));
    f.fix = kPromptFix;
    return;
  }
  std::string place = user_place(rank.stack);
  if (in.late != nullptr || place.empty()) return;
  std::string doing = "; " + who;
  std::string fix = process != nullptr
                        ? what_it_does(context, in.issue, rank, *process, place, doing, f.evidence)
                        : "";
  f.title += fix.empty() ? doing + " is at " + place : doing;
  // The first missing rank's fix (the title names it first).
  if (!fix.empty() && !in.fitted) {
    f.fix = fix;
    in.fitted = true;
  }
}

// "group rank 1, rank 1 (pid 42): never called it; at train.py:30; last call ...; 3
// collective(s) completed"
std::string rank_line(const IssueFinding& in, const store::CollectiveIssueRank& rank,
                      const std::string& who) {
  // A straggler's stall lines tell the wait, which its arrival ended.
  std::string line = std::string(in.late ? "during the wait, " : "") + "group rank " +
                     std::to_string(rank.group_rank) + ", " + who + ": " +
                     store::rank_state_text(in.issue, rank);
  // A stall's value is the awaited call, which the title names and the site places.
  if (!rank.value.empty() && in.issue.field != store::IssueField::kMissing) {
    line += "; " + std::string(to_string(in.issue.field)) + " " + rank.value;
  }
  if (!rank.site.empty()) line += "; at " + rank.site;
  if (!rank.last_call.empty()) line += "; last call " + rank.last_call;
  return line + "; " + std::to_string(rank.calls) + " collective(s) completed";
}

void add_rank(IssueFinding& in, const store::CollectiveIssueRank& rank) {
  const RuleContext& context = in.context;
  Finding& f = in.timed.finding;
  const ProcessSummary* process = context.process(rank.pid, rank.start_ticks);
  std::string who = who_of(context, rank);
  bool named = named_rank(in, rank);
  // Not one that an exception ended, unless its peers gave it: torch.multiprocessing.spawn's
  // child leaves through sys.exit(1) after its own, which runs the exit handlers that mark a
  // program finished.
  bool finished = process != nullptr && process->script_finished_ns.has_value() &&
                  (context.texts.final_exception(*process) == nullptr ||
                   about_peers(final_exception_kind(context, *process)));
  if (ended_first(in, rank, process, finished)) blame_ended_rank(in, *process, who);
  add_whereabouts(in, rank, process, who);
  if (named && process) add_ranks(f.ranks, context.ranks_of(*process));
  if (named && rank.pid != 0) f.pids.push_back(rank.pid);
  if (named && in.timed.pid == 0) in.timed.pid = rank.pid;
  f.evidence.push_back(rank_line(in, rank, who));
  if (!rank.stack.empty()) f.evidence.push_back(who + " stack: " + stack_excerpt(rank.stack));
  if (named && finished && ended_in_failure(process->record)) {
    f.evidence.push_back(who + " finished its program" +
                         context.when(*process->script_finished_ns) + ", then " +
                         how_it_ended(process->record) + " in its teardown at exit");
  }
}

// Ranks' calls that differ where one of them is DDP's gradient all-reduce (in a backward).
bool met_a_backward(const store::CollectiveIssue& issue) {
  if (issue.kind != store::IssueKind::kMismatch && issue.kind != store::IssueKind::kOrder) {
    return false;
  }
  return issue.op == store::kDdpGradientOp || std::any_of(issue.ranks.begin(), issue.ranks.end(),
                                                          [](const store::CollectiveIssueRank& r) {
                                                            return r.op == store::kDdpGradientOp;
                                                          });
}

}  // namespace

bool odd_call_found(const RuleContext& context) {
  return std::any_of(context.evidence.collective_issues.begin(),
                     context.evidence.collective_issues.end(),
                     [](const store::CollectiveIssue& issue) {
                       return issue.op == store::kDdpGradientOp ||
                              std::any_of(issue.ranks.begin(), issue.ranks.end(), odd);
                     });
}

void rule_collectives(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const store::CollectiveIssue& issue : context.evidence.collective_issues) {
    if (issue.field == store::IssueField::kLate) continue;  // told with the stall it ends
    if (failed_on_its_own(context, issue)) continue;
    std::optional<FindingKind> kind = finding_kind_named(to_string(issue.kind));
    if (!kind) continue;
    IssueFinding in = start_finding(context, issue, *kind);
    for (const store::CollectiveIssueRank& rank : issue.ranks) add_rank(in, rank);
    Finding& f = in.timed.finding;
    // A forward through the DDP model only some ranks ran: the training steps agree.
    if (issue.op == store::kDdpBroadcastOp && f.kind == FindingKind::kCollectiveMissing &&
        !in.fitted) {
      f.fix = kDdpForwardOnlyFix;
      if (std::string steps = step_counts(context, issue); !steps.empty()) {
        f.evidence.push_back("steps: " + steps);
      }
    }
    if (met_a_backward(issue)) f.fix = kDdpBackwardMetOtherFix;
    if (issue.kind == store::IssueKind::kUnevenInputs) {
      std::string steps = step_counts(context, issue);
      f.evidence.push_back(steps.empty() ? "step counts are not recorded in this run: the counts "
                                           "above are the collectives each rank completed "
                                           "through torch.distributed"
                                         : "steps: " + steps);
    }
    if (issue.aborted) {
      f.evidence.push_back("traindoc ended the job at this finding (--on-mismatch abort)");
    }
    // A deadlock's ranks come in the order they wait for each other, which its title tells.
    if (issue.field == store::IssueField::kDeadlock) std::sort(f.ranks.begin(), f.ranks.end());
    out.push_back(std::move(in.timed));
  }
}

}  // namespace traindoc::analysis
