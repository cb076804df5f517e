// Crasher: unbounded recursion on the main thread (SIGSEGV on the stack guard).

static volatile int g_forever = 1;

__attribute__((noinline)) int traindoc_test_recurse_main_here(int depth) {
  volatile char frame[256];
  frame[0] = (char)depth;
  if (!g_forever) return frame[0];
  return traindoc_test_recurse_main_here(depth + 1) + frame[0];
}

int main(void) {
  return traindoc_test_recurse_main_here(0);
}
