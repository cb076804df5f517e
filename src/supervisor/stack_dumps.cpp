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

// The Python stacks with the main thread's marked "Current thread", as when it takes the request
// itself, where CPython marked another thread (or none: the thread that took it runs no Python).
std::string mark_main_thread(std::string_view python, uint64_t main_thread) {
  static constexpr std::string_view kCurrent = "Current thread 0x";
  static constexpr std::string_view kOther = "Thread 0x";
  std::string out;
  while (!python.empty()) {
    std::string_view line = python.substr(0, python.find('\n') + 1);
    if (line.empty()) line = python;
    python.remove_prefix(line.size());
    bool current = line.starts_with(kCurrent);
    if (current || line.starts_with(kOther)) {
      line.remove_prefix((current ? kCurrent : kOther).size());
      out += std::strtoull(line.data(), nullptr, 16) == main_thread ? kCurrent : kOther;
    }
    out += line;
  }
  return out;
}

}  // namespace

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
  std::string text = read_file(run_dir + "/agent/stack-" + std::to_string(pid) + ".txt");
  if (!text.ends_with("\nend\n")) return std::nullopt;
  size_t python = text.find("python:\n");
  size_t native = text.find("native:\n");
  if (python == std::string::npos || native == std::string::npos || native < python) {
    return std::nullopt;
  }
  std::string out = text.substr(python, native - python);
  // "thread: <tid>\nmain thread: 0x<id>\n" come before "python:".
  unsigned long long tid = 0;
  unsigned long long main_thread = 0;
  if (std::sscanf(text.c_str(), "thread: %llu main thread: %llx", &tid, &main_thread) == 2 &&
      tid != static_cast<unsigned long long>(pid)) {
    return mark_main_thread(out, main_thread) +
           "native (main thread): not taken, another thread took the request so as not to cut "
           "short the call the main thread waited in\n";
  }
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
