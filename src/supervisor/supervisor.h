// Supervises one job from start to end: launches it, passes its output and signals through,
// walks and samples its processes, reads the agents, and stores everything in run.db.
// Supervisor process, main thread (the log tap has a thread of its own).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "store/evidence.h"
#include "store/preflight.h"

namespace traindoc::supervisor {

// The history entries `traindoc run --memory-history` keeps per process: about the last 100000
// allocations and frees, what PyTorch's guide to memory snapshots records (tens of MB of snapshot).
inline constexpr int64_t kMemoryHistoryEntries = 100000;

struct SupervisorOptions {
  std::vector<std::string> command;
  std::string run_dir;      // absolute, exists, holds logs/
  std::string agent_path;   // empty: run without the agent
  std::string audit_path;   // the agent's audit library (LD_AUDIT); empty: none
  std::string python_path;  // the Python hook (python/ of the install); empty: none
  int interval_ms = 1000;   // process and host samples
  int slow_every = 5;       // descriptor counts and smaps_rollup every this many samples,
                            // smaps_rollup less often where it costs too much (SmapsPacer)
  // Says a line on the terminal when a signal is forwarded, and each live finding, whose text
  // holds the job's (call sites, program names): the caller makes it safe. Empty: silent.
  std::function<void(const std::string&)> announce;
  double stall_seconds = 30;    // --stall-seconds: a collective wait with no progress this long
  bool abort_on_issue = false;  // --on-mismatch abort: end the job at the first collective issue
  // --memory-history: the PyTorch allocator's history entries each process keeps from its first
  // CUDA allocation (0: no history recorded).
  int64_t memory_history_entries = 0;
  // `traindoc fit`: end the job once every process that trains has run this many optimizer
  // steps (0: never), its peaks sampled first; in a job none of whose processes counts steps,
  // once its memory has stayed flat this long while it worked (0: never).
  int64_t trial_steps = 0;
  double trial_flat_s = 0;
  // NVML to load: a path or soname; "" means TRAINDOC_NVML_LIBRARY, else libnvidia-ml.so.1.
  std::string nvml_library;
  // The preflight checks, as the command wires them (analysis's, which tell what they found
  // through `announce`): run on the facts probed once NVML is loaded, before the job starts; what
  // they return is stored. Empty: none. A probe or check that fails is recorded, never fatal.
  std::function<std::vector<store::PreflightResult>(const store::PreflightFacts&)> preflight;
  // The job's guard (job_guard.h): never one of the job's processes, though traindoc's child
  // where traindoc is the first process of a pid namespace.
  int guard_pid = -1;
  // TORCHELASTIC_ERROR_FILE written for torchrun's ranks that fail without one (error_files.h);
  // false: --no-error-file. `crash_words` tells a crash record ("died of SIGSEGV: ...").
  bool error_files = true;
  std::function<std::string(const store::Crash&)> crash_words;
};

// Runs the job to its end and returns how it ended. Throws LaunchError (launcher.h) when the
// command cannot start, after recording that in run.db.
store::RunInfo supervise(const SupervisorOptions& options);

}  // namespace traindoc::supervisor
