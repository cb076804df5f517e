// Crasher: unbounded recursion in a thread with a 64 KiB stack (SIGSEGV on its guard page).
#include <pthread.h>
#include <stdint.h>

static volatile int g_forever = 1;

__attribute__((noinline)) int traindoc_test_recurse_thread_here(int depth) {
  volatile char frame[256];
  frame[0] = (char)depth;
  if (!g_forever) return frame[0];
  return traindoc_test_recurse_thread_here(depth + 1) + frame[0];
}

static void* run(void* arg) {
  (void)arg;
  return (void*)(intptr_t)traindoc_test_recurse_thread_here(0);
}

int main(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  if (pthread_create(&thread, &attr, run, NULL) != 0) return 2;
  pthread_join(thread, NULL);
  return 0;
}
