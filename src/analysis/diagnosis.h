// What the analysis concludes from the evidence: each process with its role and peaks, and the
// findings, root cause first. Pure data, built by diagnose(); read by the report writers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/finding_kind.h"
#include "analysis/roles.h"
#include "store/evidence.h"

namespace traindoc::analysis {

enum class Severity { kError, kWarning, kInfo };

const char* to_string(Severity severity);

// Findings alike but for the processes they name and the times they cite (a thousand forked
// children exiting alike) are told as one: the earliest, standing for them all (report.json's
// `repeated`).
struct Repeats {
  struct Example {
    std::string title;  // the finding's own, naming its process
    std::vector<int> pids;
    int64_t t_ns = 0;  // when it failed; 0 when unknown
  };
  size_t count = 0;  // alike findings, this one included
  int64_t first_ns = 0;
  int64_t last_ns = 0;
  std::vector<Example> examples;  // the first few and the last, in time order
};

struct Finding {
  FindingKind kind = FindingKind::kPythonException;
  Severity severity = Severity::kError;
  bool root_cause = false;
  std::string title;
  std::vector<int> ranks;
  std::vector<int> pids;
  std::vector<std::string> evidence;
  std::string fix;
  double confidence = 0;
  std::vector<size_t> consequences;  // indexes of the findings this one caused
  std::optional<Repeats> repeats;    // set where it stands for alike findings
  // Its moment, as the rule timed it to order findings by cause: the failure (a crash record, an
  // exit, an error line), where memory began to grow for a leak, the first divergent call for a
  // collective; the earliest of a group of alike ones. 0 when unknown.
  int64_t t_ns = 0;
};

struct ProcessSummary {
  store::ProcessRecord record;
  ProcessRole role;
  std::string node;  // its node folder's name in a job of several nodes (RunInfo::node); else ""
  std::optional<uint64_t> peak_rss;
  std::optional<uint64_t> peak_pss;
  std::optional<uint64_t> peak_uss;
  std::optional<uint64_t> peak_swap;
  std::optional<int> peak_fds;
  std::optional<int> fd_limit;
  std::optional<int> peak_threads;
  double cpu_s = 0;
  // The last count of each kind of training step the Python hook saw (none: not counted).
  std::map<store::StepKind, int64_t> steps;
  // When its Python program (atexit handlers included) finished, as the hook saw it; what ends
  // the process after that is teardown.
  std::optional<int64_t> script_finished_ns;
  // A moment after which it still ran training steps (the sample before its count's last rise):
  // an exception it printed before then, it caught and went on from.
  std::optional<int64_t> trained_after_ns;

  // The kind its step count comes from: optimizer steps, else backward calls, else DDP
  // forwards; and that count.
  std::optional<store::StepKind> step_kind() const;
  std::optional<int64_t> step_count() const;
};

// A GPU of the run, from NVML: its peak, and each process's peak on it, largest first.
struct GpuSummary {
  struct Holder {
    int pid = 0;      // NVML's pid where it is not visible from traindoc's namespace
    std::string who;  // "rank 1", "worker 0 of rank 1", "outside the job"
    uint64_t peak = 0;
    bool in_job = false;
  };
  store::GpuDevice device;
  std::string node;  // its node folder's name in a job of several nodes; else ""
  std::optional<uint64_t> peak_used;
  std::vector<Holder> holders;
};

// How far a node's clock is from the first node's, measured on the blocking collective calls
// that ranks of both left (all ranks leave one together, give or take the network).
struct NodeClock {
  int64_t offset_ns = 0;    // the node's times less this read on the first node's clock
  int64_t residual_ns = 0;  // the largest distance of one shared call's difference from it
  size_t calls = 0;         // shared calls measured; 0: not aligned (offset 0, as the clocks say)
};

// A node of a job of several: one traindoc's node folder (docs/multi-node.md).
struct NodeSummary {
  std::string name;  // the node folder's name
  std::string hostname;
  NodeClock clock;
  bool ended = true;       // its traindoc saw its part of the job end
  std::vector<int> ranks;  // the job ranks it ran
};

struct Diagnosis {
  store::RunInfo run;
  std::vector<NodeSummary> nodes;         // a job of several nodes; none for a run of one
  std::vector<ProcessSummary> processes;  // in start order
  std::vector<GpuSummary> gpus;           // NVML's devices, in NVML order
  std::vector<Finding> findings;          // root cause first
  std::vector<std::string> missing_evidence;
};

Diagnosis diagnose(const store::Evidence& evidence);

// "rank 1 (pid 4242)", "worker 0 of rank 1 (pid 4250)"; in a job of several nodes
// "rank 1 (pid 4242 on node1)"
std::string process_name(const ProcessSummary& process);
// "3.2 GiB", "512 MiB", "17 KiB"
std::string format_bytes(uint64_t bytes);
// "12.3 s"
std::string format_seconds(int64_t ns);
// "1 rank", "4 ranks"
std::string counted(int n, const std::string& one, const std::string& many);

// "SIGSEGV", or "signal 77" for numbers without a name.
std::string signal_name(int signal);
// The process ended in failure: a non-zero exit code, or a signal.
bool ended_in_failure(const store::ProcessRecord& record);
// Ended by a signal that asks a process to stop (SIGTERM, SIGINT, SIGHUP: a launcher's teardown,
// a parent's, a user), not by a failure of its own.
bool stopped_by_request_signal(const store::ProcessRecord& record);
// Whether a failure after a root cause can be its consequence: an error, or the launcher's
// teardown (an info), a process stopped by a signal, the job hanging; not a warning about a
// condition (a leak, a straggler, memory on the wrong GPU).
bool may_be_caused(const Finding& finding);
// Ended in failure of its own: not by a signal that asked it to stop.
bool failed_itself(const store::ProcessRecord& record);

}  // namespace traindoc::analysis
