// Rule: a process ended by a signal that left no crash record. SIGKILL is the OOM killer's
// signal, or someone else's; no handler runs for it, so the evidence is the memory around it.
// Pure.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "analysis/batch_advice.h"
#include "analysis/oom_facts.h"
#include "analysis/rules.h"
#include "store/forwarded_signal.h"
#include "store/time_limit.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr int64_t kAroundNs = 5'000'000'000;
// A forwarded signal is logged just after it is sent: the process may be seen ending first.
constexpr int64_t kForwardSlackNs = 1'000'000'000;
// A process's start is when its agent started, after its exec: a kill() can reach it before,
// between its fork and then (a parent that kills the child it just started).
constexpr int64_t kStartSlackNs = 100'000'000;

bool has_crash(const store::Evidence& evidence, const store::ProcessRecord& p) {
  return std::any_of(evidence.crashes.begin(), evidence.crashes.end(), [&](const auto& c) {
    return c.pid == p.pid && (c.start_ticks == p.start_ticks || c.start_ticks == 0);
  });
}

// The launcher said it sent this process its closing signal (torchrun: "Sending process N
// closing signal SIGTERM").
bool stopped_by_launcher(const RuleContext& context, const ProcessSummary& p) {
  for (const TextMatch& text : context.texts.all_matches()) {
    auto pid = text.match.fields.find("pid");
    if (text.match.id == "torchrun.closing-signal" && pid != text.match.fields.end() &&
        pid->second == std::to_string(p.record.pid)) {
      return true;
    }
  }
  return false;
}

// Whether `text` holds `number` as a whole number ("pid(s) 4217, 42" holds 42; "4217" does not).
bool holds_number(const std::string& text, int number) {
  std::string digits = std::to_string(number);
  auto digit = [&](size_t i) { return i < text.size() && std::isdigit(text[i]) != 0; };
  for (size_t at = text.find(digits); at != std::string::npos; at = text.find(digits, at + 1)) {
    if ((at == 0 || !digit(at - 1)) && !digit(at + digits.size())) return true;
  }
  return false;
}

// The rank of worker `p`, when its last exception names p's pid as a worker's (a DataLoader's
// "worker (pid(s) N) exited unexpectedly"), or came of p's end while it fetched a batch: it
// failed for p's end.
const ProcessSummary* failed_for(const RuleContext& context, const ProcessSummary& p) {
  const ProcessSummary* rank = rank_above(context, p);
  const PythonTraceback* tb = rank ? context.texts.final_exception(*rank) : nullptr;
  if (tb == nullptr) return nullptr;
  bool named =
      tb->message.find("worker") != std::string::npos && holds_number(tb->message, p.record.pid);
  return named || worker_gone_mid_batch(context, *rank, *tb) == &p ? rank : nullptr;
}

// A worker stopped as its rank ended (a multiprocessing Pool's terminate() as its `with` block
// exits, a DataLoader's shutdown; through a forkserver too, whose workers the rank stops): that
// rank's end, not a failure of its own; unless the rank failed for it. nullptr when not.
const ProcessSummary* stopping_rank(const RuleContext& context, const ProcessSummary& p) {
  if (p.role.role != Role::kWorker) return nullptr;
  const ProcessSummary* rank = rank_above(context, p);
  if (rank == nullptr || rank->record.end_ns == 0) return nullptr;
  int64_t after_ns = store::elapsed_ns(p.record.end_ns, rank->record.end_ns);
  if (after_ns < -kForwardSlackNs || after_ns > kAroundNs) return nullptr;
  return failed_for(context, p) == nullptr ? rank : nullptr;
}

// Whether `from` or a process above it is one that `is` accepts.
template <typename Is>
bool from_or_above(const RuleContext& context, const ProcessSummary* from, Is&& is) {
  const ProcessSummary* up = from;
  for (int depth = 0; up != nullptr && depth < 64; ++depth) {
    if (is(*up)) return true;
    up = up->record.ppid == up->record.pid ? nullptr : context.process(up->record.ppid);
  }
  return false;
}

// Whether `p` is the process `ancestor` or below it.
bool at_or_below(const RuleContext& context, const ProcessSummary& p, int ancestor) {
  return from_or_above(context, &p,
                       [&](const ProcessSummary& up) { return up.record.pid == ancestor; });
}

// Whether a kill() target (the event's a: kill()'s pid argument) took in `p`: its pid, or a
// process group that a process above it leads (processes stay in the group of the one that made
// it, mostly), or the sender's own group.
bool targets(const RuleContext& context, const store::Event& e, const ProcessSummary& p) {
  if (!e.a) return false;
  if (*e.a > 0) return *e.a == p.record.pid;
  if (*e.a < -1) return at_or_below(context, p, static_cast<int>(-*e.a));
  return *e.a == 0 && at_or_below(context, p, e.pid);
}

// The process of the job that sent `p` its SIGKILL, as its agent noted the call; nullptr when
// none did (the OOM killer, a scheduler, anything outside the job).
const ProcessSummary* kill_sender(const RuleContext& context, const ProcessSummary& p) {
  const store::ProcessRecord& r = p.record;
  const ProcessSummary* sender = nullptr;
  for (const store::Event& e : context.evidence.events) {
    if (e.kind != store::EventKind::kKillSent ||
        store::shifted_ns(e.t_ns, kStartSlackNs) < r.start_ns ||
        e.t_ns > store::shifted_ns(r.end_ns, kForwardSlackNs) || !targets(context, e, p)) {
      continue;
    }
    if (const ProcessSummary* q = context.process(e.pid)) sender = q;
  }
  return sender;
}

// The signals that ask a process to stop, from a terminal, a scheduler or a launcher.
bool is_stop_signal(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

// A process that a stop signal ended after the first request (`request_ns`, 0 when none): the
// request ended it, or the launcher's teardown that the request set off.
bool ended_by_request(const store::ProcessRecord& r, int64_t request_ns) {
  if (request_ns == 0 || !r.exit_signal ||
      store::shifted_ns(r.end_ns, kForwardSlackNs) < request_ns)
    return false;
  return is_stop_signal(*r.exit_signal) || *r.exit_signal == SIGKILL;
}

int64_t first_request_ns(const RuleContext& context) {
  std::vector<StopRequest> requests = stop_requests(context);
  return requests.empty() ? 0 : requests.front().t_ns;
}

// Whether `p` runs the job: the run's root, or an ancestor of its launcher or a rank (not a
// `timeout` a rank runs around one of its own commands).
bool runs_the_job(const RuleContext& context, const ProcessSummary& p) {
  if (p.record.pid == context.evidence.run.root_pid) return true;
  for (const ProcessSummary& q : context.processes) {
    if ((q.role.role == Role::kRank || q.role.role == Role::kLauncher) &&
        from_or_above(context, context.process(q.record.ppid),
                      [&](const ProcessSummary& up) { return &up == &p; })) {
      return true;
    }
  }
  return false;
}

// A `timeout` around the job whose limit ran out: it failed (124 once it sent its signal, 137
// under --foreground when it had to kill, killed by the signal it sent its own process group
// with -s KILL or -k, as its command did under --preserve-status) once its limit had passed.
std::optional<StopRequest> time_limit(const RuleContext& context) {
  constexpr int64_t kTickSlackNs = 500'000'000;  // start times are known to a clock tick
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    std::optional<store::TimeLimit> limit = store::time_limit_of(r.cmdline);
    if (!limit || !ended_in_failure(r) || r.end_ns == 0 || !runs_the_job(context, p) ||
        store::shifted_ns(store::elapsed_ns(r.start_ns, r.end_ns), kTickSlackNs) <
            limit->limit_ns) {
      continue;
    }
    StopRequest request;
    request.t_ns = std::min(store::shifted_ns(r.start_ns, limit->limit_ns), r.end_ns);
    request.what =
        "its time limit: `" + limit->words + "` ran out after " + format_seconds(limit->limit_ns);
    request.evidence = "timeout (pid " + std::to_string(r.pid) + ") " +
                       (r.exit_signal ? "was killed by " + signal_name(*r.exit_signal)
                                      : "exited with code " + std::to_string(*r.exit_code)) +
                       ": its limit ran out";
    request.timeout = &p;
    return request;
  }
  return std::nullopt;
}

}  // namespace

std::vector<StopRequest> stop_requests(const RuleContext& context) {
  std::vector<StopRequest> out;
  for (const store::Event& e : context.evidence.events) {
    // The request without its count of receivers: "SIGTERM from pid 4242 (slurmstepd)".
    if (e.kind == store::EventKind::kSignalForwarded) {
      out.push_back(
          {e.t_ns, store::forwarded_request(e), e.text, nullptr, store::second_interrupt(e)});
    } else if (e.kind == store::EventKind::kTrialEnded) {
      out.push_back({e.t_ns,
                     e.b ? fmt::format("traindoc fit, once the trial's memory had stayed flat for "
                                       "{:.1f} s (no process counted steps)",
                                       static_cast<double>(*e.b) / 1000)
                         : "traindoc fit, once the trial had run its " +
                               std::to_string(e.a.value_or(0)) + " optimizer steps",
                     e.text});
    }
  }
  if (std::optional<StopRequest> limit = time_limit(context)) {
    auto later = std::find_if(out.begin(), out.end(),
                              [&](const StopRequest& r) { return r.t_ns > limit->t_ns; });
    out.insert(later, std::move(*limit));
  }
  return out;
}

bool stopped_on_request(const RuleContext& context, const store::ProcessRecord& r) {
  return ended_by_request(r, first_request_ns(context));
}

namespace {

// What a SIGKILL without a crash record says: the process itself, another of the job (its agent
// noted the kill() call), the OOM killer (memory evidence around its end), or someone outside.
void describe_sigkill(const RuleContext& context, const ProcessSummary& p, Finding& f) {
  const store::ProcessRecord& r = p.record;
  bool worker = p.role.role == Role::kWorker;
  std::string who = context.name(p);
  const ProcessSummary* sender = kill_sender(context, p);
  // The OOM killer's SIGKILL may meet a parent's own to a child that is already gone.
  OomFacts oom = sender != &p ? oom_facts(context.evidence, r) : OomFacts{};
  if (!oom.evidence.empty()) sender = nullptr;
  if (sender == &p) {
    f.kind = worker ? FindingKind::kWorkerCrash : FindingKind::kNonzeroExit;
    f.title = who + " killed itself with SIGKILL";
    f.evidence.push_back("it called kill() on its own pid with SIGKILL");
    f.fix =
        "Its own code, or a library in it, sent the signal (os.kill(os.getpid(), "
        "signal.SIGKILL), a watchdog that ends the process): find the call; its last output "
        "is in logs/.";
    f.confidence = 0.9;
  } else if (sender != nullptr) {
    f.kind = FindingKind::kKilledExternally;
    f.severity = Severity::kInfo;
    f.title = who + " was killed by SIGKILL from " + context.name(*sender);
    f.evidence.push_back(context.name(*sender) + " called kill() on it with SIGKILL");
    f.fix =
        "Another process of the job ended it: a launcher kills what did not stop in time at "
        "its SIGTERM, a parent its workers. See the root cause, or that process's finding.";
    f.confidence = 0.9;
  } else if (!oom.evidence.empty()) {
    f.kind = FindingKind::kHostOomKilled;
    f.title = who + " was killed by the out-of-memory killer";
    if (oom.machine) {
      f.title += ": the machine ran out of memory";
    } else if (oom.limit) {
      f.title += " at its memory cgroup's " + format_bytes(*oom.limit) + " limit";
    }
    f.evidence.insert(f.evidence.end(), oom.evidence.begin(), oom.evidence.end());
    std::string where = oom.limit_dir.empty()
                            ? std::string("the memory limit (")
                            : "the limit of memory cgroup " + oom.limit_dir + " (";
    f.fix =
        "Lower the memory this job needs (batch size, num_workers, prefetch_factor; keep "
        "datasets in numpy/torch arrays rather than Python lists in workers) or raise " +
        where +
        "memory.max or memory.limit_in_bytes: the scheduler's --mem, the container's "
        "--memory). `dmesg` shows the kernel's \"Out of memory: Killed process " +
        std::to_string(r.pid) + "\" line.";
    f.fix = with_batch_advice(context, p, {BatchMemory::kMachine, r.end_ns}, std::move(f.fix));
    f.confidence = 0.9;
  } else {
    f.kind = worker ? FindingKind::kWorkerCrash : FindingKind::kKilledExternally;
    f.title = who + " was killed by SIGKILL from outside";
    f.evidence.insert(f.evidence.end(), oom.checked.begin(), oom.checked.end());
    f.fix =
        "SIGKILL cannot be caught, so the process left no trace. The usual senders: the "
        "kernel's OOM killer (check `dmesg` / `journalctl -k` for \"Out of memory: Killed "
        "process " +
        std::to_string(r.pid) +
        "\"), the job scheduler (time or memory limit), or a launcher tearing down after "
        "another failure.";
    f.confidence = 0.6;
  }
}

// What another signal without a crash record says: a stop from the launcher, from its rank on
// the way out, one its rank failed for, from elsewhere; or a crash whose handler did not run.
void describe_signal(const RuleContext& context, const ProcessSummary& p, int sig, Finding& f) {
  bool worker = p.role.role == Role::kWorker;
  bool stop = is_stop_signal(sig);
  std::string who = context.name(p);
  if (stopped_by_launcher(context, p) ||
      (stop && p.role.role == Role::kRank && spawn_reported_sibling(context, p) != nullptr)) {
    f.kind = FindingKind::kKilledExternally;
    f.severity = Severity::kInfo;
    f.title = who + " was stopped by " + signal_name(sig) + " from its launcher";
    f.fix = "The launcher stops the other processes once one fails: see the root cause.";
    f.confidence = 0.9;
  } else if (const ProcessSummary* rank = stop ? stopping_rank(context, p) : nullptr) {
    f.kind = FindingKind::kKilledExternally;
    f.severity = Severity::kInfo;
    f.title = who + " was stopped by " + signal_name(sig) + " as " + context.name(*rank) + " ended";
    f.fix =
        "Its rank stopped it on the way out (a multiprocessing Pool's terminate(), a "
        "DataLoader's shutdown): see that process's own finding.";
    f.confidence = 0.8;
  } else if (const ProcessSummary* victim = stop && worker ? failed_for(context, p) : nullptr) {
    // A worker alone was stopped, and its process failed for it: the stop is the failure.
    f.kind = FindingKind::kKilledExternally;
    f.title = who + " was stopped by " + signal_name(sig) + ", and " + context.name(*victim) +
              " failed for it";
    f.fix =
        "Something outside the job stopped this DataLoader worker alone (a watchdog, a memory "
        "or time-limit enforcer, a cleanup script, `kill`): its own code does not send it. "
        "Find the sender (the scheduler's or the node's logs) and keep it from the job.";
    f.confidence = 0.7;
  } else if (stop) {
    f.kind = FindingKind::kKilledExternally;
    f.severity = Severity::kWarning;
    f.title = who + " was stopped by " + signal_name(sig);
    f.fix =
        "A request to stop: from the launcher after another process failed, from the "
        "scheduler (time limit, preemption) or from a user. If nothing else failed, look at "
        "the scheduler's log.";
    f.confidence = 0.6;
  } else {
    f.kind = worker ? FindingKind::kWorkerCrash : FindingKind::kNativeCrash;
    f.title = who + " died of " + signal_name(sig) + " with no crash record";
    f.evidence.push_back(
        "its crash handler did not run: the agent was not loaded (static or set-uid program) "
        "or the signal came from outside");
    f.fix = "Run it again under traindoc with the agent, or with PYTHONFAULTHANDLER=1 / gdb.";
    f.confidence = 0.5;
  }
}

}  // namespace

void rule_killed(const RuleContext& context, std::vector<TimedFinding>& out) {
  int64_t request_ns = first_request_ns(context);
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.exit_signal || has_crash(context.evidence, r) || ended_by_request(r, request_ns)) {
      continue;
    }
    int sig = *r.exit_signal;
    Finding f;
    f.pids = {r.pid};
    f.ranks = context.ranks_of(p);
    f.evidence.push_back(context.name(p) + " ended by " + signal_name(sig) + " (seen by " +
                         store::to_string(r.end_source) + ")" + context.when(r.end_ns));
    if (p.peak_rss) f.evidence.push_back("its peak RSS: " + format_bytes(*p.peak_rss));
    if (sig == SIGKILL) {
      describe_sigkill(context, p, f);
    } else {
      describe_signal(context, p, sig, f);
    }
    out.push_back({std::move(f), r.end_ns, r.pid});
  }
}

void rule_stop_request(const RuleContext& context, std::vector<TimedFinding>& out) {
  std::vector<StopRequest> requests = stop_requests(context);
  const store::RunInfo& run = context.evidence.run;
  bool ended = run.exit_code || run.exit_signal;
  if (requests.empty() || !ended) return;
  const StopRequest& first = requests.front();
  Finding f;
  f.kind = FindingKind::kStopRequested;
  f.severity = Severity::kInfo;
  f.confidence = 0.95;
  // A job that ended well after it may have left early on it (a handler that saves and exits 0,
  // as on a preemption) or ignored it and finished: what it did is the job's to say.
  bool finished = run_finished(context);
  std::optional<int64_t> after_ns = store::duration_ns(first.t_ns, run.end_ns);
  f.title = finished ? "the job exited with code 0 " +
                           (after_ns ? format_seconds(*after_ns) + " " : std::string()) + "after " +
                           first.what
                     : "the job was stopped by " + first.what;
  bool killed = false;
  for (const StopRequest& request : requests) {
    f.evidence.push_back(request.evidence + context.when(request.t_ns));
    if (&request != &first && request.second_interrupt) {
      f.title += ", then killed at the second interrupt";
      killed = true;
    }
  }
  for (const ProcessSummary& p : context.processes) {
    if (!ended_by_request(p.record, first.t_ns) || has_crash(context.evidence, p.record) ||
        &p == first.timeout) {
      continue;
    }
    f.pids.push_back(p.record.pid);
    add_ranks(f.ranks, context.ranks_of(p));
    f.evidence.push_back(context.name(p) + " ended by " + signal_name(*p.record.exit_signal) +
                         context.when(p.record.end_ns));
  }
  // A job stopped while idle: its user gave up waiting (rule_idle tells the spell).
  const store::Event* idle = nullptr;
  for (const store::Event& e : context.evidence.events) {
    if (e.t_ns > first.t_ns ||
        (e.kind == store::EventKind::kSignalForwarded && e.t_ns == first.t_ns))
      break;
    if (e.kind == store::EventKind::kJobIdle) idle = &e;
    if (e.kind == store::EventKind::kJobResumed) idle = nullptr;
  }
  if (idle != nullptr) {
    f.evidence.push_back("the job went idle" + context.when(idle->t_ns) +
                         " and was still idle then: no process used CPU or printed anything");
  }
  // Where each rank was when the stop came (the supervisor asked for stacks then, or a moment
  // before a time limit ran out): what a hung job was doing when it was given up on.
  store::EventKind stacks =
      first.timeout != nullptr ? store::EventKind::kStackAtLimit : store::EventKind::kStackAtStop;
  for (const store::Event& e : context.evidence.events) {
    const ProcessSummary* p = e.kind == stacks ? context.process(e.pid) : nullptr;
    if (p == nullptr || p->role.role != Role::kRank) continue;
    std::string where = where_it_was(context, *p, e.text);
    if (!where.empty()) f.evidence.push_back(where);
  }
  std::sort(f.ranks.begin(), f.ranks.end());
  f.fix =
      finished ? "Not a failure, but maybe not the end of its training: a handler may have saved "
                 "and left early on this request. Check that its last steps are its final ones, "
                 "and resume from its last checkpoint if not."
      : first.timeout != nullptr
          ? "The job's own time limit ran out, not a failure of its code: give it more time, "
            "or save checkpoints as it goes and resume from the last one. If it should have "
            "finished in time, compare its speed with earlier runs and look for a hang in its last "
            "output."
      : killed ? "Killed at a second interrupt, as asked: the first one did not stop it (a "
                 "handler that catches SIGINT or KeyboardInterrupt and goes on). Not a failure "
                 "of the job."
               : "A stop that was asked for, not a failure of the job. If it was not yours, the "
                 "sender named here asked for it (a scheduler's time limit or preemption).";
  out.push_back({std::move(f), first.t_ns, 0});
}

}  // namespace traindoc::analysis
