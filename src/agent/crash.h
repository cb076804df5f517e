// Crash capture inside every job process (LD_PRELOAD): the interface between the fatal-signal
// handler (crash_handler.cpp), the record it fills (crash_record.cpp), the sigaction family
// interposers that keep it first (signal_hooks.cpp) and the per-thread alternate stacks
// (thread_hooks.cpp). Functions marked async-signal-safe may run inside the handler.
#pragma once

#include <signal.h>

#include <cstddef>
#include <cstdint>

#include "common/layout.h"

namespace traindoc::agent {

// SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP. Async-signal-safe.
bool is_crash_signal(int sig);

// --- crash_handler.cpp -------------------------------------------------------------------------

// Whether our handler was installed for `sig` at start-up. Async-signal-safe.
bool crash_handler_installed(int sig);

// The address of our handler, so that the interposers can recognise it. Async-signal-safe.
void* crash_handler_address();

// Puts our handler back in the kernel for `sig` (someone removed it behind the interposers).
// Async-signal-safe.
void reinstall_crash_handler(int sig);

// Whether a crash signal is being handed to the kernel's default action: from then on our
// handler must stay out of the kernel. Async-signal-safe.
bool crash_capture_dying();

// Whether a stop signal (SIGTERM, SIGINT, ...) that another process sent interrupted the
// program's crash handler that ours called; if so it is put back, blocked until that handler
// returns. Without our capture the handler would have run, and the process died, before others
// reacted to the crash: a DataLoader worker's parent sends SIGTERM once it sees another worker
// die, and the worker's handler of it exits 0, hiding this crash. Async-signal-safe.
bool hold_during_crash_handler(int sig, const siginfo_t* info, void* context);

// --- crash_record.cpp --------------------------------------------------------------------------

// Start-up: warms up native_backtrace(), resolves the CPython dump entry points, prepares the path
// prefix of <run>/agent/python-<pid>.txt. Outside any handler.
void prepare_crash_record();

// Fills siginfo, thread, registers and stack bounds, and frames[0] = the pc: nothing that reads
// memory the crash may have damaged. Async-signal-safe.
void fill_crash_record(common::CrashRecord& record, const siginfo_t* info, const void* ucontext);

// The native stack of the faulting thread from the signal frame up (unwind tables, frame
// pointers where they fail). May fault on a damaged stack: run it guarded. Async-signal-safe.
void fill_native_stack(common::CrashRecord& record);

// Frame pointers only, reading nothing outside the thread's known stack. Async-signal-safe.
void fill_native_stack_by_frame_pointers(common::CrashRecord& record);

// Writes the Python traceback of every thread to <run>/agent/python-<pid>.txt when the process
// runs an initialised CPython: with its own dumper (_Py_DumpTracebackThreads) where it exports
// one, else read from its structures (python_frames.cpp). Async-signal-safe as far as CPython's
// faulthandler is. Sets `dumped` to 1 where it wrote, and as soon as it starts writing, so that a
// dump cut short by a fault (run it guarded) keeps what it wrote.
void dump_python_traceback(uint32_t& dumped);

// The same dump of every thread's Python stack into `fd` (stack dumps on request).
// Async-signal-safe as above; false when the process runs no initialised CPython.
bool write_python_traceback(int fd);

// The calling thread's return addresses, innermost (this function's caller) first, at most
// `size`; returns how many. Numbers, as records and dumps store them: nothing dereferences them.
// Async-signal-safe after prepare_crash_record().
int native_backtrace(uint64_t* frames, int size);

// Writes `value` in decimal, without a NUL; returns the length. Async-signal-safe.
size_t format_decimal(char* out, uint64_t value);

// --- python_frames.cpp -------------------------------------------------------------------------

// Start-up: finds the layout of the interpreter's threads, frames and code objects, for CPython
// 3.9 and 3.10 (known per version) and 3.13+ (_PyRuntime.debug_offsets). Outside any handler.
void prepare_python_frames();

// Whether write_python_frames() can read this process's interpreter. Async-signal-safe.
bool python_frames_readable();

// Every thread's Python traceback, in the text of CPython's dumper, read through
// process_vm_readv: a torn or freed structure ends a thread's frames early, never faults.
// Returns whether any thread was written. Async-signal-safe.
bool write_python_frames(int fd);

// --- signal_hooks.cpp --------------------------------------------------------------------------

// libc's sigaction, not ours: installs in the kernel. Async-signal-safe.
int real_sigaction(int sig, const struct sigaction* act, struct sigaction* oldact);

// The program's own action for a crash signal, chained after ours ("next"). Async-signal-safe.
void load_next_action(int sig, struct sigaction* out);
void store_next_action(int sig, const struct sigaction& action);

// --- thread_hooks.cpp --------------------------------------------------------------------------

// Start-up, on the main thread: computes the alternate-stack size and gives the main thread one
// (unless it has an adequate one). Its stack bounds are found when a crash needs them.
void prepare_thread_stacks();

struct StackBounds {
  uint64_t lo = 0;
  uint64_t hi = 0;
};

// The calling thread's stack [lo, hi); zero when unknown (threads not made by pthread_create
// after start-up). The main thread's are read from /proc/self/maps at the first call.
// Async-signal-safe.
StackBounds current_thread_stack();

}  // namespace traindoc::agent
