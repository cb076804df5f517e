// Not a crasher: a program with its own handlers of stop signals (SIGTERM through sigaction,
// SIGHUP through signal(), SIGINT one-shot with SA_RESETHAND). It checks that it is handed back
// its own actions, gets each signal once, keeps its handler when a vfork child (as CPython's
// subprocess makes) sets the default before its exec, and ends by the default action of the
// last SIGINT, as without the agent. Exits 3 when anything differs.
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t g_got[32];

static void on_signal(int sig) {
  g_got[sig] += 1;
}

static void on_signal_info(int sig, siginfo_t* info, void* context) {
  (void)context;
  if (info->si_pid == getpid()) g_got[sig] += 1;
}

int main(void) {
  struct sigaction act;
  struct sigaction now;
  memset(&act, 0, sizeof(act));
  act.sa_sigaction = on_signal_info;
  act.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&act.sa_mask);
  if (sigaction(SIGTERM, &act, NULL) != 0) return 3;
  if (sigaction(SIGTERM, NULL, &now) != 0 || now.sa_sigaction != on_signal_info) return 3;
  if ((now.sa_flags & SA_RESTART) == 0) return 3;
  if (signal(SIGHUP, on_signal) != SIG_DFL || signal(SIGHUP, on_signal) != on_signal) return 3;
  memset(&act, 0, sizeof(act));
  act.sa_handler = on_signal;
  act.sa_flags = SA_RESETHAND;
  sigemptyset(&act.sa_mask);
  if (sigaction(SIGINT, &act, NULL) != 0) return 3;
  kill(getpid(), SIGTERM);
  kill(getpid(), SIGHUP);
  kill(getpid(), SIGINT);
  if (g_got[SIGTERM] != 1 || g_got[SIGHUP] != 1 || g_got[SIGINT] != 1) return 3;
  pid_t child = vfork();
  if (child == 0) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTERM, &dfl, NULL);
    _exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return 3;
  kill(getpid(), SIGTERM);
  if (g_got[SIGTERM] != 2) return 3;
  // One-shot: the default action now, as the program is told.
  if (sigaction(SIGINT, NULL, &now) != 0 || now.sa_handler != SIG_DFL) return 3;
  // Set back to the default: the program is handed its handler as the previous action.
  memset(&act, 0, sizeof(act));
  act.sa_handler = SIG_DFL;
  if (sigaction(SIGTERM, &act, &now) != 0 || now.sa_sigaction != on_signal_info) return 3;
  kill(getpid(), SIGINT);
  return 4;
}
