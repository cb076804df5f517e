// The rules that turn evidence into findings, one per file, and what they share.
// Pure: each reads the evidence and the process summaries and appends findings.
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::analysis {

struct RuleContext {
  const store::Evidence& evidence;
  const std::vector<ProcessSummary>& processes;

  // The process a pid referred to at `t_ns` (pids are reused); nullptr when unknown.
  const ProcessSummary* process(int pid, uint64_t start_ticks = 0) const;
  // "rank 1 (pid 4242)", "worker 0 of rank 1 (pid 4250)"
  std::string name(const ProcessSummary& process) const;
  // The rank a process belongs to, for Finding::ranks.
  std::vector<int> ranks_of(const ProcessSummary& process) const;
};

// A finding with the time of the failure it reports, for ordering by causality.
struct TimedFinding {
  Finding finding;
  int64_t t_ns = 0;
  int pid = 0;  // the process that failed
};

// Crash records of the agent: native-crash, stack-overflow, abort, fpe, illegal-instruction,
// bus-error, shm-exhausted, and worker-crash when the process was a DataLoader worker.
void rule_native_crash(const RuleContext& context, std::vector<TimedFinding>& out);

// Processes ended by a signal without a crash record: SIGKILL from the OOM killer or from
// outside (host-oom-killed, worker-crash), other signals.
void rule_killed(const RuleContext& context, std::vector<TimedFinding>& out);

// Ranks, workers and launchers that exited non-zero with nothing more specific found: the
// Python exception they printed, or their exit code.
void rule_failed_exit(const RuleContext& context, std::vector<TimedFinding>& out);

// What the supervisor's collective checker found while the job ran: collective-mismatch,
// collective-order, collective-missing, uneven-inputs, peer-exited, timed at the first
// divergent call.
void rule_collectives(const RuleContext& context, std::vector<TimedFinding>& out);

}  // namespace traindoc::analysis
