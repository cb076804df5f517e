// Crasher: probes an unmapped address under its own SIGSEGV handler, which escapes with a plain
// longjmp (as memory probes and some runtimes do), prints which signals are then blocked, and
// finally crashes with the default action back in place.
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static jmp_buf g_probe;

static void escape(int sig) {
  (void)sig;
  longjmp(g_probe, 1);
}

__attribute__((noinline)) int traindoc_test_probe_crash_here(volatile int* pointer) {
  return *pointer;
}

int main(void) {
  struct sigaction act;
  memset(&act, 0, sizeof(act));
  act.sa_handler = escape;
  sigemptyset(&act.sa_mask);
  if (sigaction(SIGSEGV, &act, NULL) != 0) return 3;
  if (setjmp(g_probe) == 0) {
    traindoc_test_probe_crash_here((volatile int*)16);
    return 4;  // the probe did not fault
  }
  sigset_t blocked;
  sigprocmask(SIG_BLOCK, NULL, &blocked);
  printf("probe recovered; blocked: SEGV=%d TERM=%d INT=%d\n", sigismember(&blocked, SIGSEGV),
         sigismember(&blocked, SIGTERM), sigismember(&blocked, SIGINT));
  fflush(stdout);
  sigprocmask(SIG_UNBLOCK, &blocked, NULL);
  signal(SIGSEGV, SIG_DFL);
  return traindoc_test_probe_crash_here((volatile int*)0);
}
