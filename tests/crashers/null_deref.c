// Crasher: reads through a null pointer (SIGSEGV, SEGV_MAPERR, si_addr 0).
#include <stddef.h>

__attribute__((noinline)) int traindoc_test_null_deref_here(volatile int* pointer) {
  return *pointer;
}

int main(void) {
  return traindoc_test_null_deref_here(NULL);
}
