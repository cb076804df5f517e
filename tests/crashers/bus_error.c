// Crasher: touches a page of a file mapping after the file was truncated under it
// (SIGBUS, BUS_ADRERR), like a dataset rewritten while memory-mapped.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

__attribute__((noinline)) int traindoc_test_bus_error_here(volatile char* mapped) {
  return mapped[4096];
}

int main(void) {
  const char* dir = getenv("TMPDIR");
  char path[4096];
  char* end = path;
  for (const char* p = dir != NULL && *dir != '\0' ? dir : "/tmp"; *p != '\0' && end < path + 4000;)
    *end++ = *p++;
  const char name[] = "/traindoc-bus-XXXXXX";
  for (size_t i = 0; i < sizeof(name); ++i) end[i] = name[i];
  int fd = mkstemp(path);
  if (fd < 0) return 2;
  unlink(path);
  if (ftruncate(fd, 2 * 4096) != 0) return 2;
  char* mapped = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapped == MAP_FAILED) return 2;
  if (ftruncate(fd, 0) != 0) return 2;
  return traindoc_test_bus_error_here(mapped);
}
