// Rule: a process ended by a signal that left no crash record. SIGKILL is the OOM killer's
// signal, or someone else's; no handler runs for it, so the evidence is the memory around it.
// Pure.
#include <signal.h>

#include <algorithm>

#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

constexpr double kNearLimit = 0.95;
constexpr int64_t kAroundNs = 5'000'000'000;
// A forwarded signal is logged just after it is sent: the process may be seen ending first.
constexpr int64_t kForwardSlackNs = 1'000'000'000;

bool has_crash(const store::Evidence& evidence, const store::ProcessRecord& p) {
  return std::any_of(evidence.crashes.begin(), evidence.crashes.end(), [&](const auto& c) {
    return c.pid == p.pid && (c.start_ticks == p.start_ticks || c.start_ticks == 0);
  });
}

// Memory evidence of an OOM kill around `t_ns`: the cgroup's oom_kill count rose across that
// moment (not merely since the run began: an earlier kill of another process is no evidence),
// or memory was at its limit. Empty when there is none.
std::vector<std::string> oom_evidence(const store::Evidence& evidence, int64_t t_ns) {
  std::vector<std::string> out;
  std::optional<uint64_t> baseline;  // the last count well before the death, else the first
  std::optional<uint64_t> after;     // the first count at or after it, else the last before
  for (const store::HostSample& s : evidence.host_samples) {
    if (s.cgroup_oom_kills) {
      if (s.t_ns <= t_ns - kAroundNs || !baseline) baseline = s.cgroup_oom_kills;
      if (s.t_ns >= t_ns && !after) after = s.cgroup_oom_kills;
    }
  }
  if (!after) {
    for (const store::HostSample& s : evidence.host_samples) {
      if (s.cgroup_oom_kills && s.t_ns <= t_ns) after = s.cgroup_oom_kills;
    }
  }
  if (baseline && after && *after > *baseline) {
    out.push_back("the memory cgroup's oom_kill count rose from " + std::to_string(*baseline) +
                  " to " + std::to_string(*after));
  }
  for (const store::HostSample& s : evidence.host_samples) {
    if (std::llabs(s.t_ns - t_ns) > kAroundNs) continue;
    if (s.cgroup_current && s.cgroup_max && *s.cgroup_max > 0 &&
        static_cast<double>(*s.cgroup_current) >= kNearLimit * static_cast<double>(*s.cgroup_max)) {
      out.push_back("memory cgroup at " + format_bytes(*s.cgroup_current) + " of its " +
                    format_bytes(*s.cgroup_max) + " limit");
      break;
    }
    if (s.mem_total > 0 && s.mem_available < s.mem_total / 33) {
      out.push_back("the machine had " + format_bytes(s.mem_available) + " available of " +
                    format_bytes(s.mem_total));
      break;
    }
  }
  return out;
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

// The signals that ask a process to stop, from a terminal, a scheduler or a launcher.
bool is_stop_signal(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT;
}

// The request without its count of receivers: "SIGTERM from pid 4242 (slurmstepd)".
std::string request_text(const store::Event& e) {
  return e.text.substr(0, e.text.rfind(", "));
}

// A process that a stop signal ended after the first request (`request_ns`, 0 when none): the
// request ended it, or the launcher's teardown that the request set off.
bool ended_by_request(const store::ProcessRecord& r, int64_t request_ns) {
  if (request_ns == 0 || !r.exit_signal || r.end_ns + kForwardSlackNs < request_ns) return false;
  return is_stop_signal(*r.exit_signal) || *r.exit_signal == SIGKILL;
}

int64_t first_request_ns(const store::Evidence& evidence) {
  std::vector<const store::Event*> requests = stop_requests(evidence);
  return requests.empty() ? 0 : requests.front()->t_ns;
}

}  // namespace

std::vector<const store::Event*> stop_requests(const store::Evidence& evidence) {
  std::vector<const store::Event*> out;
  for (const store::Event& e : evidence.events) {
    if (e.kind == "signal-forwarded") out.push_back(&e);
  }
  return out;
}

bool stopped_on_request(const RuleContext& context, const store::ProcessRecord& r) {
  return ended_by_request(r, first_request_ns(context.evidence));
}

void rule_killed(const RuleContext& context, std::vector<TimedFinding>& out) {
  int64_t request_ns = first_request_ns(context.evidence);
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.exit_signal || has_crash(context.evidence, r) || ended_by_request(r, request_ns)) {
      continue;
    }
    int sig = *r.exit_signal;
    bool worker = p.role.role == Role::kWorker;
    Finding f;
    f.pids = {r.pid};
    f.ranks = context.ranks_of(p);
    std::string who = context.name(p);
    f.evidence.push_back(who + " ended by " + signal_name(sig) + " (seen by " +
                         store::to_string(r.end_source) + ")" + context.when(r.end_ns));
    if (p.peak_rss) f.evidence.push_back("its peak RSS: " + format_bytes(*p.peak_rss));
    if (sig == SIGKILL) {
      std::vector<std::string> oom = oom_evidence(context.evidence, r.end_ns);
      if (!oom.empty()) {
        f.kind = "host-oom-killed";
        f.title = who + " was killed by the out-of-memory killer";
        f.evidence.insert(f.evidence.end(), oom.begin(), oom.end());
        f.fix =
            "Lower the memory this job needs (batch size, num_workers, prefetch_factor; keep "
            "datasets in numpy/torch arrays rather than Python lists in workers) or raise the "
            "memory limit. `dmesg` shows the kernel's \"Out of memory: Killed process\" line.";
        f.confidence = 0.9;
      } else {
        f.kind = worker ? "worker-crash" : "killed-externally";
        f.title = who + " was killed by SIGKILL from outside";
        f.evidence.push_back(
            "no OOM kill was counted in the memory cgroup and memory was not near its limit");
        f.fix =
            "SIGKILL cannot be caught, so the process left no trace. The usual senders: the "
            "kernel's OOM killer outside this cgroup (check `dmesg` / `journalctl -k` for "
            "\"Out of memory: Killed process " +
            std::to_string(r.pid) +
            "\"), the job scheduler (time or memory limit), or a launcher tearing down after "
            "another failure.";
        f.confidence = 0.6;
      }
    } else if (stopped_by_launcher(context, p)) {
      f.kind = "killed-externally";
      f.severity = Severity::kInfo;
      f.title = who + " was stopped by " + signal_name(sig) + " from its launcher";
      f.fix = "The launcher stops the other processes once one fails: see the root cause.";
      f.confidence = 0.9;
    } else if (is_stop_signal(sig)) {
      f.kind = "killed-externally";
      f.severity = Severity::kWarning;
      f.title = who + " was stopped by " + signal_name(sig);
      f.fix =
          "A request to stop: from the launcher after another process failed, from the "
          "scheduler (time limit, preemption) or from a user. If nothing else failed, look at "
          "the scheduler's log.";
      f.confidence = 0.6;
    } else {
      f.kind = worker ? "worker-crash" : "native-crash";
      f.title = who + " died of " + signal_name(sig) + " with no crash record";
      f.evidence.push_back(
          "its crash handler did not run: the agent was not loaded (static or set-uid program) "
          "or the signal came from outside");
      f.fix = "Run it again under traindoc with the agent, or with PYTHONFAULTHANDLER=1 / gdb.";
      f.confidence = 0.5;
    }
    out.push_back({std::move(f), r.end_ns, r.pid});
  }
}

void rule_stop_request(const RuleContext& context, std::vector<TimedFinding>& out) {
  std::vector<const store::Event*> requests = stop_requests(context.evidence);
  const store::RunInfo& run = context.evidence.run;
  // A job that went on and ended well (it ignored the signal, or finished its epoch) was not
  // stopped by it.
  bool ended = run.exit_code || run.exit_signal;
  if (requests.empty() || !ended || run_finished(context)) return;
  const store::Event& first = *requests.front();
  Finding f;
  f.kind = "stop-requested";
  f.severity = Severity::kInfo;
  f.confidence = 0.95;
  f.title = "the job was stopped by " + request_text(first);
  bool killed = false;
  for (const store::Event* e : requests) {
    f.evidence.push_back(e->text + context.when(e->t_ns));
    if (e != &first && e->text.starts_with("SIGKILL")) {
      f.title += ", then killed at the second interrupt";
      killed = true;
    }
  }
  for (const ProcessSummary& p : context.processes) {
    if (!ended_by_request(p.record, first.t_ns) || has_crash(context.evidence, p.record)) continue;
    f.pids.push_back(p.record.pid);
    add_ranks(f.ranks, context.ranks_of(p));
    f.evidence.push_back(context.name(p) + " ended by " + signal_name(*p.record.exit_signal) +
                         context.when(p.record.end_ns));
  }
  // A job stopped while idle: its user gave up waiting (rule_idle tells the spell).
  const store::Event* idle = nullptr;
  for (const store::Event& e : context.evidence.events) {
    if (&e == &first) break;  // in the order they were recorded
    if (e.kind == "job-idle") idle = &e;
    if (e.kind == "job-resumed") idle = nullptr;
  }
  if (idle != nullptr) {
    f.evidence.push_back("the job went idle" + context.when(idle->t_ns) +
                         " and was still idle then: no process used CPU or printed anything");
  }
  // Where each rank was when the stop came (the supervisor asked for stacks then): what a hung
  // job was doing when its user gave up on it.
  for (const store::Event& e : context.evidence.events) {
    const ProcessSummary* p = e.kind == "stack-at-stop" ? context.process(e.pid) : nullptr;
    if (p == nullptr || p->role.role != Role::kRank) continue;
    std::string where = where_it_was(context, *p, e.text);
    if (!where.empty()) f.evidence.push_back(where);
  }
  std::sort(f.ranks.begin(), f.ranks.end());
  f.fix = killed ? "Killed at a second interrupt, as asked: the first one did not stop it (a "
                   "handler that catches SIGINT or KeyboardInterrupt and goes on). Not a failure "
                   "of the job."
                 : "A stop that was asked for, not a failure of the job. If it was not yours, the "
                   "sender named here asked for it (a scheduler's time limit or preemption).";
  out.push_back({std::move(f), first.t_ns, 0});
}

}  // namespace traindoc::analysis
