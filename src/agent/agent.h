// The agent's internal interface, in every job process (LD_PRELOAD): the record writer and
// the table of interposed libc functions. Everything callable from hooks is async-signal-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "common/layout.h"

namespace traindoc::agent {

// Appends one record to this process's ring; does nothing without a slot. Async-signal-safe.
void append_record(common::RecordType type, int64_t a, int64_t b, int64_t c = common::kNoValue);

// This process is ending with exit() or _exit() and `status`: written to its slot, once.
// Async-signal-safe.
void note_exit(int status);

// Whether this process has a slot, so that hooks can skip their bookkeeping otherwise.
bool active();

// Whether this is the child of a vfork (CPython's subprocess uses one), running in its parent's
// memory until it execs: whatever it writes there, the parent would find as its own.
// Async-signal-safe.
bool in_vfork_child();

// Finds the next definition of every hooked function; called once at start-up.
void resolve_hooks();

// This process's slot; nullptr without one. Async-signal-safe.
common::Slot* current_slot();

// Room for "<run>/<name>" and "<pid>.txt" after it: the run folder's path is at most
// kMaxRunDir bytes (longer, the agent stays inactive) and every name under 32.
constexpr size_t kMaxRunDir = 4095;
constexpr size_t kRunPathSize = kMaxRunDir + 64;

// Writes "<run>/<name>" into `out`, followed by "<pid>.txt" where `pid` > 0. Async-signal-safe.
void run_file_path(char (&out)[kRunPathSize], const char* name, pid_t pid = 0);

// Tells the supervisor which of this process's stdout and stderr are files (a shell's
// `2> err.log`, a launcher's redirect), so that it reads what the process writes there: at
// start-up (the supervisor's socket named, AgentHeader::outputs_socket) and in a fork child
// (nullptr: the one named at start-up). Async-signal-safe.
void note_output_files(const char* socket_name);

// Tells the supervisor that this process writes its output to the regular file open as `fd`
// (nothing for another kind of file, or before note_output_files knew the socket).
// Async-signal-safe.
void note_output_file(int fd);

// This process's collective ring; nullptr without a slot. Async-signal-safe.
common::CollectiveRing* current_collective_ring();

// Crash capture (crash_handler.cpp): installs the fatal-signal handlers, the alternate stacks
// and what the handler needs, at start-up once the slots file is mapped.
void start_crash_capture();

// In the child of a fork without exec: the child's crashes are its own. Async-signal-safe.
void reset_crash_capture_after_fork();

// Stack dumps on request (stack_dump.cpp): installs the handler of kStackDumpSignal at start-up.
void start_stack_dumps();

// In the child of a fork without exec: its main thread is the one that forked.
// Async-signal-safe.
void reset_stack_dumps_after_fork();

// NCCL resolved by name (nccl_hooks.cpp): looks up the agent's entry point for the audit library
// (src/agent/audit), which learns so where the agent is, at start-up once the slot is claimed.
void start_nccl_audit();

// At a normal exit: a process that loaded NCCL, where no communicator was made through the agent
// and the audit library was not active, tells that its collectives were not visible.
void note_nccl_unseen();

// The process's training step as the Python hook counts it (step_abi.cpp): its optimizer steps
// so far, else its backward calls; 0 before any.
uint64_t current_step();

}  // namespace traindoc::agent
