// Stack dumps on request. Supervisor process, main loop thread.
#include "supervisor/stack_dumps.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/layout.h"
#include "supervisor/file_text.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/stack_dump_text.h"

namespace traindoc::supervisor {

DumpRequest request_stack_dump(int pid, bool stopping) {
  // The default action of a real-time signal ends the process: only one that catches it (the
  // agent's handler, unless the program replaced it) is asked.
  if (!catches_signal(pid, common::stack_dump_signal())) return {};
  DumpRequest request;
  // The main thread runs Python's main loop and usually is the one that waits.
  std::optional<int> tid = pid;
  if (!stopping) tid = thread_to_interrupt(pid, request.spared);
  if (!tid) return request;
  siginfo_t info{};
  info.si_signo = common::stack_dump_signal();
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_int = common::kStackDumpValue;
  request.asked = syscall(SYS_rt_tgsigqueueinfo, pid, *tid, info.si_signo, &info) == 0;
  return request;
}

std::string spared_stack(const std::string& call, bool in_init) {
  return std::string(common::kStackSpared) +
         "every thread waits in a system call that a signal would cut short, the main thread in " +
         call + (in_init ? std::string(common::kStackSparedInInit) : "");
}

std::optional<std::string> read_stack_dump(const std::string& run_dir, int pid,
                                           Symbolizer& symbolizer) {
  std::optional<StackDumpText> dump = parse_stack_dump(
      read_file_text(run_dir + "/agent/stack-" + std::to_string(pid) + ".txt", kStackDumpMaxBytes),
      pid);
  if (!dump) return std::nullopt;
  std::string out = std::move(dump->python);
  if (dump->other_thread) {
    return out +
           "native (main thread): not taken, another thread took the request so as not to cut "
           "short the call the main thread waited in\n";
  }
  std::vector<uint64_t>& addresses = dump->native;
  std::string maps = read_file_text("/proc/" + std::to_string(pid) + "/maps", kMapsMaxBytes);
  out += "native (main thread):\n";
  std::vector<store::NativeFrame> frames = symbolizer.symbolize(maps, addresses, false);
  // The dump's own frames (the agent's handler) and the signal trampoline come first: the stack
  // the process was in starts after them.
  size_t first = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].module.ends_with("/libtraindoc_agent.so")) first = i + 2;
  }
  if (first > frames.size()) first = 0;
  frames.erase(frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(first));
  for (size_t i = 0; i < frames.size(); ++i) {
    const store::NativeFrame& f = frames[i];
    char offset[32];
    snprintf(offset, sizeof(offset), "+0x%llx", static_cast<unsigned long long>(f.module_offset));
    std::string module = f.module.empty() ? "?" : f.module.substr(f.module.rfind('/') + 1);
    out += "  #" + std::to_string(i) + " " + (f.function.empty() ? "??" : f.function) + " (" +
           module + offset + ")\n";
  }
  return out;
}

}  // namespace traindoc::supervisor
