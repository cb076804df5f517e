// Crash completion. Supervisor process, main loop thread, while the crashed process waits.
// Reading another process's memory needs ptrace rights: the supervisor is the job's ancestor,
// which Yama's default scope allows.
#include "supervisor/crash_capture.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

#include "common/hex.h"
#include "store/memory_map.h"
#include "supervisor/file_text.h"
#include "supervisor/proc/process_identity.h"
#include "supervisor/stack_dump_text.h"

namespace traindoc::supervisor {
namespace {

// The code at `pc`, read only from an executable mapping: a record that names an address in
// data (a forged or corrupt one) gets none of the process's data in the report.
std::string code_at(int pid, uint64_t pc, const std::string& maps) {
  std::vector<store::MemoryMapping> mappings = store::parse_maps(maps);
  const store::MemoryMapping* code = store::find_mapping(mappings, pc);
  if (code == nullptr || code->perms.size() < 3 || code->perms[2] != 'x') return "";
  int fd = open(("/proc/" + std::to_string(pid) + "/mem").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  unsigned char bytes[16];
  size_t wanted = std::min<uint64_t>(sizeof(bytes), code->end - pc);
  ssize_t n = pread(fd, bytes, wanted, static_cast<off_t>(pc));
  close(fd);
  return n > 0 ? common::hex_bytes(bytes, static_cast<size_t>(n)) : "";
}

}  // namespace

void complete_crash(AgentCrash& raw, const std::string& run_dir, int ancestor) {
  store::Crash& crash = raw.crash;
  // The job's process, still there: it waits in its handler.
  if (!runs_below(crash.pid, crash.start_ticks, ancestor)) return;
  std::string proc = "/proc/" + std::to_string(crash.pid);
  crash.maps = read_file_text(proc + "/maps", kMapsMaxBytes);
  // Read again after: the maps may be of a process that took the pid while they were read.
  if (!same_process(crash.pid, crash.start_ticks)) {
    crash.maps.clear();
    return;
  }
  crash.code_bytes = code_at(crash.pid, crash.pc, crash.maps);
  if (raw.python_dumped) {
    // The job's own file, written by the same dumper as a stack dump's Python part.
    crash.python_traceback = read_file_text(
        run_dir + "/agent/python-" + std::to_string(crash.pid) + ".txt", kStackDumpMaxBytes);
  }
}

}  // namespace traindoc::supervisor
