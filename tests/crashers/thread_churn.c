// Not a crasher: creates and joins many threads, then prints "altstack=<0|1> maps=<n>": whether
// a new thread had an alternate signal stack, and how many mappings the process has at the end
// (alternate stacks must be unmapped when their thread exits).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

static void* run(void* arg) {
  stack_t current;
  if (sigaltstack(NULL, &current) == 0 && (current.ss_flags & SS_DISABLE) == 0) *(int*)arg = 1;
  return NULL;
}

static int count_maps(void) {
  FILE* maps = fopen("/proc/self/maps", "r");
  if (maps == NULL) return -1;
  int lines = 0;
  for (int c = fgetc(maps); c != EOF; c = fgetc(maps)) lines += c == '\n';
  fclose(maps);
  return lines;
}

int main(void) {
  int had_altstack = 0;
  for (int i = 0; i < 500; ++i) {
    pthread_t thread;
    if (pthread_create(&thread, NULL, run, &had_altstack) != 0) return 2;
    pthread_join(thread, NULL);
  }
  printf("altstack=%d maps=%d\n", had_altstack, count_maps());
  return 0;
}
