// Crash completion. Supervisor process, main loop thread, while the crashed process waits.
// Reading another process's memory needs ptrace rights: the supervisor is the job's ancestor,
// which Yama's default scope allows.
#include "supervisor/crash_capture.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace traindoc::supervisor {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string code_at(int pid, uint64_t pc) {
  int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  unsigned char bytes[16];
  ssize_t n = pread(fd, bytes, sizeof(bytes), static_cast<off_t>(pc));
  close(fd);
  std::string hex;
  static constexpr char kDigits[] = "0123456789abcdef";
  for (ssize_t i = 0; i < n; ++i) {
    hex += kDigits[bytes[i] >> 4];
    hex += kDigits[bytes[i] & 15];
  }
  return hex;
}

}  // namespace

store::Crash capture_crash(const AgentCrash& c, const std::string& run_dir) {
  store::Crash out;
  out.pid = c.pid;
  out.start_ticks = c.start_ticks;
  out.tid = c.tid;
  out.thread_name = c.thread_name;
  out.signo = c.signo;
  out.code = c.code;
  out.fault_addr = c.fault_addr;
  out.sender_pid = c.sender_pid;
  out.time_ns = c.time_ns;
  out.pc = c.pc;
  out.sp = c.sp;
  out.fp = c.fp;
  out.stack_lo = c.stack_lo;
  out.stack_hi = c.stack_hi;
  out.other_crashes = c.other_crashes;
  for (uint64_t address : c.frames) out.frames.push_back({.address = address});
  out.maps = read_text("/proc/" + std::to_string(c.pid) + "/maps");
  out.code_bytes = code_at(c.pid, c.pc);
  if (c.python_dumped) {
    out.python_traceback = read_text(run_dir + "/agent/python-" + std::to_string(c.pid) + ".txt");
  }
  return out;
}

}  // namespace traindoc::supervisor
