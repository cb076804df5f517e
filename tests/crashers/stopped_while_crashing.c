// Crasher: a DataLoader worker's signal handling (PyTorch's DataLoader.cpp): its SIGSEGV handler
// says so and re-raises with the default action; its SIGTERM handler exits 0, as a worker does
// when its parent stops it. A helper child sends SIGTERM 200 ms after the crash, as the parent
// does once it sees another worker die: without a crash capture in between, the process is long
// dead by then, so it must die by SIGSEGV however long the capture takes.
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static void say(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

static void on_segv(int sig, siginfo_t* info, void* context) {
  (void)info;
  (void)context;
  say("segv handler ran\n");
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

int main(void) {
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
    usleep(200 * 1000);
    // Only while the crashing process is still this one's parent: never a reused pid.
    if (getppid() == crashing) kill(crashing, SIGTERM);
    _exit(0);
  }
  return traindoc_test_stopped_while_crashing_here(NULL);
}
