// The evidence model: everything the supervisor saw during a run, as plain data.
// Written to run.db by StoreWriter (supervisor), read back by read_evidence (analyze, report).
// No OS calls, no sampling here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/layout.h"
#include "store/allocator_state.h"
#include "store/cgroup_evidence.h"
#include "store/collective_facts.h"
#include "store/event_kind.h"
#include "store/gpu_evidence.h"
#include "store/preflight.h"

namespace traindoc::store {

inline constexpr int kSchemaVersion = 15;

struct RunInfo {
  std::vector<std::string> command;
  std::string hostname;
  std::string version;  // traindoc's
  int supervisor_pid = 0;
  int root_pid = 0;  // the job's first process
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // 0 while running
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  std::string exec_error;  // why the command could not start, if it could not
  // The node folder's name where a job's node folders are read together (docs/multi-node.md),
  // so that the processes are named with their node; "" for a run read alone. Not stored.
  std::string node;

  bool operator==(const RunInfo&) const = default;
};

// How we learned that a process ended.
enum class EndSource {
  kNone,        // still running (or nothing seen)
  kSupervisor,  // waitpid in the supervisor (job root, orphans reparented to us)
  kParent,      // the agent in its parent saw the parent reap it
  kZombie,      // read from /proc/<pid>/stat of the zombie
  kAgentExit,   // the agent in the process itself saw exit()/_exit()
  kVanished,    // it disappeared with no trace of how
  kGuard,       // gone after the signals of the guard, once traindoc had ended (job_guard.h)
};

struct ProcessRecord {
  int pid = 0;
  int ppid = 0;
  uint64_t start_ticks = 0;  // with pid, the process's identity
  int64_t start_ns = 0;
  std::string argv0;
  std::string cmdline;
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::optional<int> node_rank;
  common::RankSource rank_source = common::RankSource::kNone;
  bool agent = false;   // registered by the agent
  bool forked = false;  // created by fork without exec
  EndSource end_source = EndSource::kNone;
  std::optional<int> exit_code;
  std::optional<int> exit_signal;
  bool core_dumped = false;
  int64_t end_ns = 0;
  // The rank and world size the job's code passed to its latest init_process_group call: -1
  // for each it left to the launcher's variables, unset where no call was seen.
  std::optional<int> init_rank;
  std::optional<int> init_world_size;
  // The number a DataLoader gave the process, its worker (Python hook).
  std::optional<int> worker_id;

  bool operator==(const ProcessRecord&) const = default;
};

struct ProcSample {
  int64_t t_ns = 0;
  int pid = 0;
  uint64_t start_ticks = 0;
  uint64_t rss = 0;  // bytes
  uint64_t swap = 0;
  std::optional<uint64_t> pss;  // from smaps_rollup, sampled at a lower rate
  std::optional<uint64_t> uss;  // Private_Clean + Private_Dirty
  int threads = 0;
  std::optional<int> fds;  // open descriptors, sampled at a lower rate
  std::optional<int> fd_limit;
  double cpu_user_s = 0;
  double cpu_sys_s = 0;
  // Of `rss`, the pages of mapped files (RssFile: libraries, np.memmap and Arrow datasets), which
  // the kernel can drop and read again: no leak when they grow.
  std::optional<uint64_t> rss_file;
  // The largest rss the process has had so far (VmHWM), which the kernel keeps between samples:
  // what a step's transient peak reached though no sample fell on it. Unset before schema 13.
  std::optional<uint64_t> rss_peak;

  bool operator==(const ProcSample&) const = default;
};

struct HostSample {
  int64_t t_ns = 0;
  uint64_t mem_total = 0;
  uint64_t mem_available = 0;
  uint64_t swap_total = 0;
  uint64_t swap_free = 0;
  int cgroup_version = 0;  // 0: none found, 1 or 2
  std::optional<uint64_t> cgroup_current;
  std::optional<uint64_t> cgroup_max;  // absent when unlimited
  std::optional<uint64_t> cgroup_oom_kills;
  std::optional<uint64_t> shm_total;
  std::optional<uint64_t> shm_used;

  bool operator==(const HostSample&) const = default;
};

// Something that happened once: a forwarded signal, a sampling failure, slots exhausted.
struct Event {
  int64_t t_ns = 0;
  EventKind kind = EventKind::kJobIdle;
  int pid = 0;
  std::string text;  // for people; what a rule reads is in a, b, c and name (event_kind.h)
  std::optional<int64_t> a = {};  // = {}: brace lists may leave them out, warning-free
  std::optional<int64_t> b = {};
  std::optional<int64_t> c = {};
  std::string name = {};  // a process's name the event tells of; empty: none (NULL in run.db)

  bool operator==(const Event&) const = default;
};

// A job process whose stdout (fd 1) or stderr (fd 2) was a file, as its agent found it at start,
// or that opened a log file (its descriptor, above 2).
struct LogWriter {
  int pid = 0;
  int fd = 0;
  int64_t t_ns = 0;  // when the process started with it

  bool operator==(const LogWriter&) const = default;
};

// The job's stdout or stderr, or a file that job processes wrote their output to (a shell's
// `2> err.log`, a launcher's redirect, a log file Python's logging opened): its name is then the
// file's path.
struct LogStream {
  std::string name;  // "stdout", "stderr", or a file's absolute path
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t bytes_not_kept = 0;     // beyond the run folder's bound
  std::vector<std::string> files;  // relative to the run folder, in order
  std::vector<LogWriter> writers;  // of a file (schema 7); none for the job's own streams

  bool operator==(const LogStream&) const = default;
};

// The job's own stdout or stderr, as opposed to a file its processes wrote to.
inline bool is_job_stream(std::string_view name) {
  return name == "stdout" || name == "stderr";
}

// One native frame of a crash, symbolized by the supervisor where the files allow it.
struct NativeFrame {
  uint64_t address = 0;
  std::string module;          // path of the mapped file, "" when the address is in no file mapping
  uint64_t module_offset = 0;  // address relative to the module's load base
  std::string function;        // demangled; "" when unknown
  uint64_t function_offset = 0;
  std::string file;  // source file where debug info exists
  int line = 0;
  std::vector<std::string> inlined;  // functions inlined at this address, innermost first

  bool operator==(const NativeFrame&) const = default;
};

// The first fatal signal of a process, as its agent recorded it (layout.h CrashRecord) plus what
// the supervisor added while the process waited: its memory map and the bytes at the pc.
struct Crash {
  int pid = 0;
  uint64_t start_ticks = 0;
  int tid = 0;
  std::string thread_name;
  int signo = 0;
  int code = 0;  // si_code
  uint64_t fault_addr = 0;
  int sender_pid = 0;
  int64_t time_ns = 0;
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t fp = 0;
  uint64_t stack_lo = 0;
  uint64_t stack_hi = 0;
  int other_crashes = 0;
  std::vector<NativeFrame> frames;  // innermost first
  std::string maps;        // /proc/<pid>/maps while the process waited; "" if it could not be read
  std::string code_bytes;  // hex of up to 16 bytes at the pc (for SIGILL), "" if unreadable
  std::string python_traceback;  // all threads, as CPython's dumper writes it; "" if none
  std::string python_note;       // why there is no Python traceback, where that is known

  bool operator==(const Crash&) const = default;
};

// A line of the job's output, kept with the time it was read (logs/ has every byte; these are
// the lines worth citing: the first and last ones and those that look like errors).
struct LogLine {
  int64_t t_ns = 0;
  std::string stream;   // LogStream::name
  uint64_t number = 0;  // 1-based line number within the stream
  std::string text;     // without the newline, cut at 4 KiB

  bool operator==(const LogLine&) const = default;
};

// What a step sample counts (python/traindoc_hook/steps.py).
enum class StepKind {
  kOptimizer,   // optimizer.step()
  kBackward,    // torch.autograd.backward (Tensor.backward)
  kDdpForward,  // DistributedDataParallel.forward
};

// A process's running total of one kind of training step at a time, counted by the Python hook.
struct StepSample {
  int64_t t_ns = 0;
  int pid = 0;
  uint64_t start_ticks = 0;
  StepKind kind = StepKind::kOptimizer;
  int64_t count = 0;  // steps of `kind` the process had run by t_ns

  bool operator==(const StepSample&) const = default;
};

// One collective or point-to-point call of a rank, as its agent recorded it (layout.h
// CollectiveCall), in words. run.db keeps a bounded sample of them (docs/run-db.md).
struct CollectiveCall {
  int64_t t_ns = 0;    // entered
  int64_t end_ns = 0;  // returned; 0 when it did not (yet), or when unknown (NCCL)
  int pid = 0;
  uint64_t start_ticks = 0;
  uint64_t group = 0;   // identity, equal on every rank
  uint64_t number = 0;  // the rank's call index in the group, from 1
  int group_rank = -1;
  int group_size = 0;
  std::string source;   // "python" or "nccl"
  std::string op;       // "all_reduce", "broadcast", ... (docs/collectives.md)
  std::string dtype;    // of the first tensor; "" when none
  uint64_t count = 0;   // elements
  std::string tensors;  // "[20, 10] float32; [3] int64", inputs first
  std::string redop;    // "sum", ...; "" when none
  int peer = -1;        // root or peer; -1 when none
  std::string site;     // "train.py:42"; "" when unknown
  uint64_t step = 0;
  bool async = false;
  bool raised = false;  // it raised: gave up waiting (a timeout, a closed connection)

  bool operator==(const CollectiveCall&) const = default;
};

// How a rank in a collective issue had ended: its exit code or signal (neither: gone, its status
// unknown).
struct RankEnd {
  std::optional<int> exit_code = {};  // = {}: brace lists may leave members out, warning-free
  std::optional<int> exit_signal = {};
  bool finished = false;  // its program had finished first: the end came in its teardown

  bool operator==(const RankEnd&) const = default;
};

// One rank's part in a collective issue: its state (collective_facts.h) and that state's
// operands. Words for people are made from these by collective_words.h.
struct CollectiveIssueRank {
  int group_rank = -1;
  int job_rank = -1;  // the rank as the job numbers it; -1 when unknown
  int pid = 0;
  uint64_t start_ticks = 0;
  RankState state = RankState::kNone;
  bool odd = false;     // the one to blame: it made a call the others do not make (from there)
  std::string op = {};  // kCalled, kWaitsIn: the op of its call ("broadcast")
  int peer = -1;        // kWaitsIn: the job rank it waits for
  int64_t late_ns = 0;  // kCameLate: how long after the first rank it made the call
  std::optional<RankEnd> end = {};  // how it had ended, where it had when the issue was found
  std::string value = {};      // what this rank passed, for the field that differs ("[10] float32")
  std::string site = {};       // where it called from (or waits), "" when unknown
  std::string last_call = {};  // its last call in the group: "all_reduce #12 at train.py:40"
  uint64_t calls = 0;          // calls it made in the group
  std::string stack = {};      // its Python and native stacks when dumped on request, else ""

  bool operator==(const CollectiveIssueRank&) const = default;
};

// What the supervisor's collective checker found, the moment it found it (docs/collectives.md).
struct CollectiveIssue {
  int64_t t_ns = 0;      // detected
  int64_t first_ns = 0;  // the first divergent call (or the wait's start)
  IssueKind kind = IssueKind::kMismatch;
  uint64_t group = 0;
  int group_size = 0;
  bool default_group = false;  // the job's world group, as the Python hook marks it
  bool pair = false;           // a point-to-point pair (send and recv)
  uint64_t number = 0;         // the call index where the ranks diverge
  std::string op;              // the op at that index (of the first rank that made it)
  IssueField field = IssueField::kOp;
  // kMissing: why the wait was over, and the group rank of the rank that ended it ("rank 1
  // ended", "rank 0 gave up waiting"; -1 for a stall).
  WaitEnd wait_end = WaitEnd::kNone;
  int wait_end_rank = -1;
  // kMissing: the ranks that made the call made it from a place no other rank calls from (code
  // that only they run), so they, not the others, are to blame (marked odd).
  bool alone = false;
  // How long the ranks had waited: in the call until it was found (kMissing), for the late
  // ranks (kLate), between the normal exit and the failure (kCalls); and how long no rank of the
  // group had moved (a stall, a deadlock).
  int64_t waited_ns = 0;
  int64_t quiet_ns = 0;
  uint64_t sites_differed_at = 0;  // the call where the ranks' call sites first differed, or 0
  bool aborted = false;            // traindoc ended the job for it (--on-mismatch abort)
  std::vector<CollectiveIssueRank> ranks;
  // A run.db of schema 9 or before held the issue's sentence, not the facts to make it from:
  // that sentence without its kind (issue_title tells it as it was). "" since schema 10.
  std::string words;

  bool operator==(const CollectiveIssue&) const = default;
};

struct Evidence {
  int schema_version = kSchemaVersion;
  std::vector<Crash> crashes;
  std::vector<LogLine> log_lines;
  RunInfo run;
  std::vector<ProcessRecord> processes;
  std::vector<ProcSample> proc_samples;
  std::vector<HostSample> host_samples;
  std::vector<Event> events;
  std::vector<LogStream> logs;
  // What run.db's bounds removed (docs/run-db.md, "Bounds"): samples before this time are
  // thinned to one row per bucket (0: none were), and events not kept, by kind.
  int64_t samples_thinned_until_ns = 0;
  std::map<std::string, uint64_t> events_dropped;
  // Schema 2: log lines not kept in run.db, by stream (logs/ still has them), and crashes not
  // kept beyond the cap.
  std::map<std::string, uint64_t> log_lines_dropped;
  uint64_t crashes_dropped = 0;
  // Schema 3: training steps by time (older runs have none).
  std::vector<StepSample> steps;
  // Also schema 3: devices, their samples, the processes on them, driver events, CUDA variables.
  GpuEvidence gpu;
  uint64_t gpu_events_dropped = 0;
  // Also schema 3: collective calls kept (a bounded sample, see docs/run-db.md) and those not kept,
  // and the checker's issues.
  std::vector<CollectiveCall> collectives;
  uint64_t collectives_dropped = 0;
  std::vector<CollectiveIssue> collective_issues;
  // Schema 12: each process's memory cgroup (when first seen and when it moved), samples of
  // each distinct one, and the kernel's account of the OOM kills of job processes (and those
  // not kept beyond the cap). Older runs have none.
  std::vector<ProcessCgroup> process_cgroups;
  std::vector<CgroupSample> cgroup_samples;
  std::vector<KernelOomKill> kernel_oom_kills;
  uint64_t kernel_oom_kills_dropped = 0;
  // Schema 14: the traps the preflight checks found as the run started (older runs: not
  // looked at), and when.
  std::vector<PreflightResult> preflight;
  int64_t preflight_ns = 0;
  // Schema 15: the caching allocator's state at each out-of-memory error the Python hook saw
  // (older runs: not looked at).
  std::vector<AllocatorState> allocator_states;

  bool operator==(const Evidence&) const = default;
};

const char* to_string(EndSource source);
EndSource end_source_from_string(const std::string& text);
const char* to_string(StepKind kind);
// nullopt for a name this build does not know (written by a newer traindoc).
std::optional<StepKind> step_kind_from_string(const std::string& text);

// Whether two processes ran the same number of training steps: by backward calls where both
// counted them (counted as each begins, so a rank stuck in one is ahead), else optimizer steps
// (counted as each ends), else DDP forwards (an evaluation forward counts too). nullopt when
// they counted no kind in common.
std::optional<bool> same_step_counts(const std::map<StepKind, int64_t>& a,
                                     const std::map<StepKind, int64_t>& b);

}  // namespace traindoc::store
