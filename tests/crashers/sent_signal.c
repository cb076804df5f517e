// Crasher: sends itself SIGSEGV with kill() (si_code SI_USER, si_pid = its own pid), a signal
// that does not fault again by itself and so must be raised again by the handler.
#include <signal.h>
#include <unistd.h>

__attribute__((noinline)) int traindoc_test_send_signal_here(void) {
  return kill(getpid(), SIGSEGV);
}

int main(void) {
  traindoc_test_send_signal_here();
  return 0;
}
