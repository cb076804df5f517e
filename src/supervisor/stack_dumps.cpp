// Stack dumps on request. Supervisor process, main loop thread.
#include "supervisor/stack_dumps.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "common/layout.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

bool request_stack_dump(int pid) {
  // The default action of a real-time signal ends the process: only one that catches it (the
  // agent's handler, unless the program replaced it) is asked.
  if (!catches_signal(pid, common::stack_dump_signal())) return false;
  siginfo_t info{};
  info.si_signo = common::stack_dump_signal();
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value.sival_int = common::kStackDumpValue;
  // The main thread (tid = pid): the one that runs Python's main loop and usually waits.
  return syscall(SYS_rt_tgsigqueueinfo, pid, pid, info.si_signo, &info) == 0;
}

std::optional<std::string> read_stack_dump(const std::string& run_dir, int pid,
                                           Symbolizer& symbolizer) {
  std::string text = read_file(run_dir + "/agent/stack-" + std::to_string(pid) + ".txt");
  if (!text.ends_with("\nend\n")) return std::nullopt;
  size_t native = text.find("native:\n");
  if (native == std::string::npos) return std::nullopt;
  std::string out = text.substr(0, native);
  std::vector<uint64_t> addresses;
  std::istringstream lines(text.substr(native + 8));
  std::string line;
  while (std::getline(lines, line) && line != "end") {
    addresses.push_back(std::strtoull(line.c_str(), nullptr, 16));
  }
  std::string maps = read_file("/proc/" + std::to_string(pid) + "/maps");
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
