// Crasher: overwrites the caller's saved frame pointer, then reads through a null pointer. The
// unwinder, following the damaged frame chain, faults itself: the capture must survive that.

__attribute__((noinline)) int traindoc_test_corrupt_frame_here(volatile int* pointer) {
  void** frame = (void**)__builtin_frame_address(0);
  frame[0] = (void*)0x10;  // the caller's saved frame pointer
  return *pointer;
}

int main(void) {
  return traindoc_test_corrupt_frame_here((volatile int*)0);
}
