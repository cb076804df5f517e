// Crasher: two threads dereference null at the same moment (SIGSEGV twice, one process death).
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

static pthread_barrier_t g_barrier;

__attribute__((noinline)) int traindoc_test_thread_crash_here(volatile int* pointer) {
  return *pointer;
}

static void* run(void* arg) {
  (void)arg;
  pthread_barrier_wait(&g_barrier);
  return (void*)(intptr_t)traindoc_test_thread_crash_here(NULL);
}

int main(void) {
  pthread_barrier_init(&g_barrier, NULL, 2);
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) {
    if (pthread_create(&threads[i], NULL, run, NULL) != 0) return 2;
  }
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  return 0;
}
