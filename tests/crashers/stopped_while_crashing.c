// Crasher: a DataLoader worker's signal handling (PyTorch's DataLoader.cpp): its SIGSEGV handler
// says so and re-raises with the default action; its SIGTERM handler exits 0, as a worker does
// when its parent stops it. A helper child sends SIGTERM as the parent does once it sees another
// worker die: by default 200 ms after the crash (without a crash capture in between, the process
// is long dead by then); with the argument "in-handler", once the SIGSEGV handler has started,
// which then takes 300 ms before re-raising (the parent's signal comes while it runs, late
// because the capture held the process). Either way it must die by SIGSEGV.
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int g_started[2] = {-1, -1};  // the SIGSEGV handler tells the helper through this pipe

static void say(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

static void on_segv(int sig, siginfo_t* info, void* context) {
  (void)info;
  (void)context;
  say("segv handler ran\n");
  if (g_started[1] >= 0) {
    ssize_t ignored = write(g_started[1], "s", 1);
    (void)ignored;
    struct timespec left = {0, 300 * 1000 * 1000};
    while (nanosleep(&left, &left) != 0) {
    }
  }
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

static void on_term(int sig) {
  (void)sig;
  _exit(0);
}

__attribute__((noinline)) int traindoc_test_stopped_while_crashing_here(volatile int* pointer) {
  return *pointer;
}

int main(int argc, char** argv) {
  int in_handler = argc > 1 && strcmp(argv[1], "in-handler") == 0;
  if (in_handler && pipe(g_started) != 0) return 3;
  struct sigaction act;
  memset(&act, 0, sizeof(act));
  act.sa_sigaction = on_segv;
  act.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sigaction(SIGSEGV, &act, NULL) != 0) return 3;
  if (signal(SIGTERM, on_term) == SIG_ERR) return 3;
  pid_t crashing = getpid();
  pid_t helper = fork();
  if (helper < 0) return 3;
  if (helper == 0) {
    if (in_handler) {
      char byte;
      close(g_started[1]);
      if (read(g_started[0], &byte, 1) != 1) _exit(0);
    } else {
      usleep(200 * 1000);
    }
    // Only while the crashing process is still this one's parent: never a reused pid.
    if (getppid() == crashing) kill(crashing, SIGTERM);
    _exit(0);
  }
  if (in_handler) close(g_started[0]);
  return traindoc_test_stopped_while_crashing_here(NULL);
}
