// Crasher: frees a block twice; glibc's tcache check aborts
// ("free(): double free detected in tcache 2", SIGABRT).
#include <stdlib.h>

// Called through a volatile pointer: the compiler must not see (and warn about) the bug.
static void (*volatile g_release)(void*) = free;

__attribute__((noinline)) void traindoc_test_double_free_here(void* block) {
  g_release(block);
  g_release(block);
}

int main(void) {
  void* volatile block = malloc(64);
  traindoc_test_double_free_here(block);
  return 0;
}
