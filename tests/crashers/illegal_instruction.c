// Crasher: executes an undefined instruction, ud2 on x86-64 (SIGILL, ILL_ILLOPN).

__attribute__((noinline)) void traindoc_test_illegal_here(void) {
  __builtin_trap();
}

int main(void) {
  traindoc_test_illegal_here();
  return 0;
}
