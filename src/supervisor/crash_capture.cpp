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

void complete_crash(AgentCrash& raw, const std::string& run_dir) {
  store::Crash& crash = raw.crash;
  std::string proc = "/proc/" + std::to_string(crash.pid);
  crash.maps = read_text(proc + "/maps");
  crash.code_bytes = code_at(crash.pid, crash.pc);
  if (raw.python_dumped) {
    crash.python_traceback =
        read_text(run_dir + "/agent/python-" + std::to_string(crash.pid) + ".txt");
  }
}

}  // namespace traindoc::supervisor
