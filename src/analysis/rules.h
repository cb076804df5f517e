// The rules that turn evidence into findings, one per file (rule_*.cpp), and the table that runs
// them in order (rule_table.cpp, read by diagnosis.cpp). What they share is in rule_context.h.
// Pure: each reads the evidence, the process summaries and the findings of the rules before it,
// and appends findings.
#pragma once

#include <span>
#include <vector>

#include "analysis/rule_context.h"

namespace traindoc::analysis {

// When a rule runs, in causal order: a rule may leave alone what a rule of an earlier phase
// explained, or build on its findings.
enum class RulePhase {
  kProcessEnds,  // crash records, signals, stop requests: how the processes ended
  kGpuFailures,  // GPU memory and CUDA kernel errors, which a process's exit would hide
  kExceptions,   // the exceptions and warnings that processes printed
  kCauses,       // causes found behind the failures above: a peer that left, memory that grew
  kJob,          // the job as a whole: GPU placement, hardware, collectives, idleness
};

using RuleFunction = void (*)(const RuleContext& context, std::vector<TimedFinding>& out);

struct Rule {
  const char* name;
  RulePhase phase;
  RuleFunction run;
};

// Every rule, in the order it runs: phase by phase, and within a phase as listed.
std::span<const Rule> rule_table();

// Crash records of the agent: native-crash, stack-overflow, abort, fpe, illegal-instruction,
// bus-error, shm-exhausted, and worker-crash when the process was a DataLoader worker.
void rule_native_crash(const RuleContext& context, std::vector<TimedFinding>& out);

// Processes ended by a signal without a crash record: SIGKILL from the OOM killer or from
// outside (host-oom-killed, worker-crash), other signals.
void rule_killed(const RuleContext& context, std::vector<TimedFinding>& out);

// A stop traindoc passed on to the job (Ctrl-C, a scheduler's SIGTERM, a second interrupt):
// stop-requested, with the processes a signal ended after it, which rule_killed leaves alone.
// Timed at the request: what fails after it is its consequence.
void rule_stop_request(const RuleContext& context, std::vector<TimedFinding>& out);

// The job sat idle, no process using CPU or printing, for --stall-seconds (the supervisor's
// idle watch): job-idle, a warning while it never moved again, info for a pause it came out of,
// with each process's innermost frames then. Left to rule_collectives where the stall watch saw
// a collective hang in that time.
void rule_idle(const RuleContext& context, std::vector<TimedFinding>& out);

// Ranks, workers and launchers that exited non-zero: the exception they ended with, as the kind
// of failure its known text names (label-out-of-range, collective-mismatch, ...) or as a
// python-exception with its last frame; else the exit code. Exceptions that say a peer is gone
// are left to rule_peer_exited.
void rule_failed_exit(const RuleContext& context, std::vector<TimedFinding>& out);

// Ranks that failed because a peer had gone ("Connection closed by peer"): peer-exited, and when
// that peer had exited normally while they still waited, the peer's early exit as the cause
// (collective-missing, or uneven-inputs when the ranks' step counts differ).
void rule_peer_exited(const RuleContext& context, std::vector<TimedFinding>& out);

// Rule: an exception that ended a thread ("Exception in thread NAME:"), not its process: an
// error when the job then hung (the process waited for what the thread would have done), else a
// warning.
void rule_thread_exception(const RuleContext& context, std::vector<TimedFinding>& out);

// Rule: a framework warning that points at silently wrong results (a loss broadcasting its
// targets, softmax without dim, CUDA that did not start), or a hint about speed alone (info):
// framework-warning.
void rule_framework_warning(const RuleContext& context, std::vector<TimedFinding>& out);

// Memory growing steadily with the steps (or time) in a process: memory-leak, a warning; an
// error when the process (or its parent, or a child) then ran out of memory (host-oom-killed,
// host-alloc-failed found by the rules above, so it runs after them): its time is when the
// growth began, so the ordering by cause makes it the root cause and the failure its consequence.
// Also DataLoader workers whose private memory grows while their RSS stays flat (copy-on-access of
// Python objects).
void rule_memory_leak(const RuleContext& context, std::vector<TimedFinding>& out);

// A process ran out of GPU memory (PyTorch, TensorFlow/Keras, JAX): gpu-oom or
// gpu-fragmentation, with the device, the numbers and who held the GPU at that moment (NVML).
void rule_gpu_oom(const RuleContext& context, std::vector<TimedFinding>& out);

// A CUDA kernel failed: device-side-assert (label-out-of-range, index-out-of-range where the
// assertion says so) and cuda-illegal-access.
void rule_cuda_error(const RuleContext& context, std::vector<TimedFinding>& out);

// Where the job's GPU memory went: foreign-gpu-context and gpu-imbalance (NVML samples).
void rule_gpu_placement(const RuleContext& context, std::vector<TimedFinding>& out);

// Xid and ECC events and lost GPUs (NVML): hardware-fault.
void rule_hardware_fault(const RuleContext& context, std::vector<TimedFinding>& out);

// What the supervisor's collective checker found while the job ran: collective-mismatch,
// collective-order, collective-missing, uneven-inputs, peer-exited, timed at the first
// divergent call.
void rule_collectives(const RuleContext& context, std::vector<TimedFinding>& out);

// The traps the preflight checks found as the run started: preflight-<check> warnings, and the
// trap cited as the cause by a failure it leads to (rules before it found), so it runs last.
void rule_preflight(const RuleContext& context, std::vector<TimedFinding>& out);

}  // namespace traindoc::analysis
