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

}  // namespace

void rule_killed(const RuleContext& context, std::vector<TimedFinding>& out) {
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.exit_signal || has_crash(context.evidence, r)) continue;
    int sig = *r.exit_signal;
    bool worker = p.role.role == Role::kWorker;
    Finding f;
    f.pids = {r.pid};
    f.ranks = context.ranks_of(p);
    std::string who = context.name(p);
    f.evidence.push_back(who + " ended by " + signal_name(sig) + " (seen by " +
                         store::to_string(r.end_source) + ")");
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
    } else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
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

}  // namespace traindoc::analysis
