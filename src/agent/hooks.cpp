// Interposed libc wait, _exit and kill functions, in every job process (LD_PRELOAD), called from
// any thread and from signal handlers (SIGCHLD). When the job reaps one of its own children, the
// child's exact exit status is recorded, so the supervisor learns how ranks and workers ended;
// a process that leaves with _exit (a forked worker, os._exit) records its own status too, and
// one that sends SIGKILL (to itself, a launcher to its ranks) records the target.
#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "agent/agent.h"

namespace traindoc::agent {
namespace {

struct Hooks {
  pid_t (*waitpid)(pid_t, int*, int);
  pid_t (*wait)(int*);
  pid_t (*wait3)(int*, int, rusage*);
  pid_t (*wait4)(pid_t, int*, int, rusage*);
  int (*waitid)(idtype_t, id_t, siginfo_t*, int);
  void (*exit_now)(int);      // _exit
  void (*exit_now_c99)(int);  // _Exit
  int (*kill)(pid_t, int);
  int (*killpg)(pid_t, int);
};

Hooks g_next{};

// Async-signal-safe.
void note_reaped(pid_t pid, int status) {
  if (pid <= 0 || !active()) return;
  if (!WIFEXITED(status) && !WIFSIGNALED(status)) return;  // stopped or continued
  append_record(common::RecordType::kChildReaped, pid, status);
}

// Before start-up has resolved the table (a wait in another library's constructor), the
// kernel's wait4 does the same work as libc's wrappers.
pid_t raw_wait4(pid_t pid, int* status, int options, rusage* usage) {
  return static_cast<pid_t>(syscall(SYS_wait4, pid, status, options, usage));
}

// Calls the next wait4-shaped function and records a reaped child; errno is the callee's.
template <typename Call>
pid_t wait_and_note(int* status, Call&& call) {
  int local = 0;
  int* target = status != nullptr ? status : &local;
  pid_t pid = call(target);
  if (pid > 0) {
    int saved_errno = errno;
    note_reaped(pid, *target);
    errno = saved_errno;
  }
  return pid;
}

// The status is noted before the next _exit ends the process. Async-signal-safe.
[[noreturn]] void leave_now(void (*next)(int), int status) {
  note_exit(status);
  if (next != nullptr) next(status);
  for (;;) syscall(SYS_exit_group, status);
}

// A SIGKILL about to be sent to `target` (as kill() takes it). Async-signal-safe.
void note_kill(pid_t target) {
  if (!active() || in_vfork_child()) return;
  int saved_errno = errno;
  append_record(common::RecordType::kKillSent, target, 0);
  errno = saved_errno;
}

}  // namespace

void resolve_hooks() {
  g_next.waitpid = reinterpret_cast<decltype(g_next.waitpid)>(dlsym(RTLD_NEXT, "waitpid"));
  g_next.wait = reinterpret_cast<decltype(g_next.wait)>(dlsym(RTLD_NEXT, "wait"));
  g_next.wait3 = reinterpret_cast<decltype(g_next.wait3)>(dlsym(RTLD_NEXT, "wait3"));
  g_next.wait4 = reinterpret_cast<decltype(g_next.wait4)>(dlsym(RTLD_NEXT, "wait4"));
  g_next.waitid = reinterpret_cast<decltype(g_next.waitid)>(dlsym(RTLD_NEXT, "waitid"));
  g_next.exit_now = reinterpret_cast<decltype(g_next.exit_now)>(dlsym(RTLD_NEXT, "_exit"));
  g_next.exit_now_c99 = reinterpret_cast<decltype(g_next.exit_now_c99)>(dlsym(RTLD_NEXT, "_Exit"));
  g_next.kill = reinterpret_cast<decltype(g_next.kill)>(dlsym(RTLD_NEXT, "kill"));
  g_next.killpg = reinterpret_cast<decltype(g_next.killpg)>(dlsym(RTLD_NEXT, "killpg"));
}

}  // namespace traindoc::agent

using traindoc::agent::g_next;
using traindoc::agent::leave_now;
using traindoc::agent::note_kill;
using traindoc::agent::note_reaped;
using traindoc::agent::raw_wait4;
using traindoc::agent::wait_and_note;

extern "C" {

__attribute__((visibility("default"))) pid_t waitpid(pid_t pid, int* status, int options) {
  return wait_and_note(status, [&](int* target) {
    return g_next.waitpid ? g_next.waitpid(pid, target, options)
                          : raw_wait4(pid, target, options, nullptr);
  });
}

__attribute__((visibility("default"))) pid_t wait(int* status) {
  return wait_and_note(status, [&](int* target) {
    return g_next.wait ? g_next.wait(target) : raw_wait4(-1, target, 0, nullptr);
  });
}

__attribute__((visibility("default"))) pid_t wait3(int* status, int options, rusage* usage) {
  return wait_and_note(status, [&](int* target) {
    return g_next.wait3 ? g_next.wait3(target, options, usage)
                        : raw_wait4(-1, target, options, usage);
  });
}

__attribute__((visibility("default"))) pid_t wait4(pid_t pid, int* status, int options,
                                                   rusage* usage) {
  return wait_and_note(status, [&](int* target) {
    return g_next.wait4 ? g_next.wait4(pid, target, options, usage)
                        : raw_wait4(pid, target, options, usage);
  });
}

__attribute__((visibility("default"))) int waitid(idtype_t type, id_t id, siginfo_t* info,
                                                  int options) {
  int result = g_next.waitid
                   ? g_next.waitid(type, id, info, options)
                   : static_cast<int>(syscall(SYS_waitid, type, id, info, options, nullptr));
  if (result == 0 && info != nullptr && info->si_pid > 0) {
    int saved_errno = errno;
    // Rebuild the wait status that waitpid would have given.
    int status = info->si_code == CLD_EXITED   ? (info->si_status & 0xff) << 8
                 : info->si_code == CLD_KILLED ? info->si_status
                 : info->si_code == CLD_DUMPED ? info->si_status | 0x80
                                               : -1;
    if (status >= 0) note_reaped(info->si_pid, status);
    errno = saved_errno;
  }
  return result;
}

// Noted before it is sent: a process that kills itself has no after. Async-signal-safe.
__attribute__((visibility("default"))) int kill(pid_t pid, int sig) noexcept {
  if (sig == SIGKILL) note_kill(pid);
  return g_next.kill ? g_next.kill(pid, sig) : static_cast<int>(syscall(SYS_kill, pid, sig));
}

// glibc's killpg does not go through kill(); torchrun ends a rank's process group with it.
// Async-signal-safe.
__attribute__((visibility("default"))) int killpg(pid_t group, int sig) noexcept {
  if (sig == SIGKILL && group > 0) note_kill(-group);
  return g_next.killpg ? g_next.killpg(group, sig)
                       : static_cast<int>(syscall(SYS_kill, -group, sig));
}

__attribute__((visibility("default"))) void _exit(int status) {
  leave_now(g_next.exit_now, status);
}

__attribute__((visibility("default"))) void _Exit(int status) {
  leave_now(g_next.exit_now_c99, status);
}

}  // extern "C"
