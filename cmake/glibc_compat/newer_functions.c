// What glibc 2.31 lacks of what the static libraries built against a newer one call (libstdc++),
// and sigabbrev_np (glibc 2.32), which the store's and the analysis's signal names use. In
// traindoc's executable; any thread.
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

// std::random_device's source since glibc 2.36; getrandom is glibc 2.25's.
uint32_t __wrap_arc4random(void) {
  uint32_t value;
  for (;;) {
    ssize_t got = getrandom(&value, sizeof value, 0);
    if (got == (ssize_t)sizeof value) return value;
    if (got < 0 && errno != EINTR) abort();  // as glibc's, which has no way to fail
  }
}

// libstdc++ skips atomic reference counts where glibc 2.32 says the process has one thread;
// 0 keeps them atomic, as with an older glibc.
char __wrap___libc_single_threaded = 0;

// As glibc names them: Linux's standard signals, NULL for any other number.
const char* __wrap_sigabbrev_np(int sig) {
  static const char* const kNames[] = {
      NULL,   "HUP",  "INT",  "QUIT", "ILL",    "TRAP",   "ABRT",  "BUS",  "FPE",  "KILL", "USR1",
      "SEGV", "USR2", "PIPE", "ALRM", "TERM",   "STKFLT", "CHLD",  "CONT", "STOP", "TSTP", "TTIN",
      "TTOU", "URG",  "XCPU", "XFSZ", "VTALRM", "PROF",   "WINCH", "POLL", "PWR",  "SYS"};
  return sig >= 0 && sig < (int)(sizeof kNames / sizeof *kNames) ? kNames[sig] : NULL;
}
