// Crasher: integer division by zero (SIGFPE, FPE_INTDIV).

__attribute__((noinline)) int traindoc_test_divide_here(volatile int numerator,
                                                        volatile int denominator) {
  return numerator / denominator;
}

int main(void) {
  return traindoc_test_divide_here(7, 0);
}
