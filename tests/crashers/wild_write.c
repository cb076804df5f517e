// Crasher: writes to a high address known to be unmapped (SIGSEGV, SEGV_MAPERR, exact si_addr).
#include <stdint.h>
#include <sys/mman.h>

__attribute__((noinline)) void traindoc_test_wild_write_here(volatile int* pointer) {
  *pointer = 42;
}

int main(void) {
  // Map and unmap a page so that the address is surely unmapped, yet canonical.
  void* page = mmap((void*)(uintptr_t)0x600000000000, 4096, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return 2;
  munmap(page, 4096);
  traindoc_test_wild_write_here((volatile int*)((char*)page + 0x123));
  return 0;
}
