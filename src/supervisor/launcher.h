// Starts the job: its output channels (pipes, or pseudo-terminals where ours are terminals),
// the agent injected through LD_PRELOAD (and its audit library through LD_AUDIT), and the run
// folder in the environment.
// Supervisor process, main thread, before the main loop starts.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace traindoc::supervisor {

struct LaunchSpec {
  std::vector<std::string> argv;
  std::string run_dir;      // absolute
  std::string agent_path;   // absolute path of libtraindoc_agent.so; empty: no agent
  std::string python_path;  // folder of the Python hook's sitecustomize; empty: no hook
  std::string audit_path;   // absolute path of the agent's audit library (LD_AUDIT); empty: none
  bool error_files = true;  // false: --no-error-file, told to the Python hook
  int64_t memory_history_entries = 0;  // the allocator history the hook records; 0: none
};

// One of the job's output streams as the supervisor reads it.
struct OutputChannel {
  int read_fd = -1;  // master side of a pty, or the read end of a pipe
  bool tty = false;
};

struct LaunchedJob {
  pid_t pid = -1;
  OutputChannel out;
  OutputChannel err;
};

// Thrown when the command cannot be started; `exit_status` is what a shell would return.
struct LaunchError {
  int exit_status;  // 127 not found, 126 found but not executable
  std::string message;
};

// traindoc's own files are its user's alone (umask 077: files 0600, folders 0700); the job
// still starts with the user's umask.
void keep_own_files_private();

// The signals the supervisor takes through its signalfd: blocked here, restored in the child.
void block_supervisor_signals();

// A stop signal that came while traindoc started, before the job exists: it ends traindoc now, as
// it would have unblocked (nothing to forward it to). Returns when none is pending.
void end_if_stopped_before_launch();

// A stop signal that came while no job ran (between two trials of traindoc fit, the stop signals
// still blocked): taken, and its number returned; 0 when none is pending.
int take_pending_stop();

// Forks and execs the job. Throws LaunchError when exec fails (the child is reaped).
LaunchedJob launch(const LaunchSpec& spec);

// Gives the job's pseudo-terminals our terminal's size (after SIGWINCH).
void copy_window_size(const LaunchedJob& job);

}  // namespace traindoc::supervisor
