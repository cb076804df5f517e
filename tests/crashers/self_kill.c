// Kills itself with SIGKILL, which no handler sees: the agent notes the call before it is made.
#include <signal.h>
#include <unistd.h>

int main(void) {
  kill(getpid(), SIGKILL);
  return 3;
}
