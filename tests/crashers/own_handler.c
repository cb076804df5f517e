// Crasher: installs its own SIGSEGV handler with sigaction after start-up, as PyTorch's
// DataLoader workers do; the handler says so, checks that it got the original siginfo, restores
// the default action and re-raises. Exits 3 if it ever sees a handler that is not its own.
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static void say(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

static void own_handler(int sig, siginfo_t* info, void* context) {
  (void)context;
  say("own handler ran\n");
  if (info->si_code != SEGV_MAPERR || info->si_addr != NULL) say("own handler: wrong siginfo\n");
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

__attribute__((noinline)) int traindoc_test_own_handler_crash_here(volatile int* pointer) {
  return *pointer;
}

int main(void) {
  struct sigaction act;
  struct sigaction old;
  memset(&act, 0, sizeof(act));
  act.sa_sigaction = own_handler;
  act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sigaction(SIGSEGV, &act, &old) != 0) return 3;
  if (old.sa_handler != SIG_DFL) return 3;
  struct sigaction now;
  if (sigaction(SIGSEGV, NULL, &now) != 0 || now.sa_sigaction != own_handler) return 3;
  return traindoc_test_own_handler_crash_here(NULL);
}
