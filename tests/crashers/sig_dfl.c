// Crasher: sets SIGSEGV to SIG_DFL with signal() (as Python's signal.signal does), then reads
// through a null pointer. Exits 3 if signal() hands back anything but the default.
#include <signal.h>
#include <stddef.h>

__attribute__((noinline)) int traindoc_test_sig_dfl_crash_here(volatile int* pointer) {
  return *pointer;
}

int main(void) {
  if (signal(SIGSEGV, SIG_DFL) != SIG_DFL) return 3;
  if (signal(SIGSEGV, SIG_DFL) != SIG_DFL) return 3;
  return traindoc_test_sig_dfl_crash_here(NULL);
}
