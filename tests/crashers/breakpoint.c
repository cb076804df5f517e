// Crasher: a breakpoint instruction left in the code (SIGTRAP).

__attribute__((noinline)) void traindoc_test_breakpoint_here(void) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("int3");
#elif defined(__aarch64__)
  __asm__ volatile("brk #0");
#else
  __builtin_trap();
#endif
}

int main(void) {
  traindoc_test_breakpoint_here();
  return 0;
}
