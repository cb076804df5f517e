// Reads the kernel log (/dev/kmsg) for the OOM killer's account of the processes it ends: the
// kernel names the pid, the cgroup whose limit was hit and the killed process's memory.
// Supervisor process, main loop thread. Never throws: where the log cannot be read (no
// permission, kernel.dmesg_restrict, a container without it), readable() is false and note()
// says why, for the report's missing evidence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/cgroup_evidence.h"
#include "supervisor/proc/kmsg_text.h"

namespace traindoc::supervisor {

class KernelLog {
 public:
  // Opens the log and skips what it holds: only what the kernel writes from now on counts.
  explicit KernelLog(const std::string& path = "/dev/kmsg");
  ~KernelLog();
  KernelLog(const KernelLog&) = delete;
  KernelLog& operator=(const KernelLog&) = delete;

  bool readable() const { return m_fd >= 0; }
  const std::string& note() const { return m_note; }

  // The OOM kills told since the last call, without waiting.
  std::vector<store::KernelOomKill> poll();
  // Records the kernel overwrote before they were read (a flood of messages).
  uint64_t records_lost() const { return m_lost; }

 private:
  int m_fd = -1;
  std::string m_note;
  std::optional<OomKillContext> m_context;  // the "oom-kill:" record, until its kill is told
  uint64_t m_lost = 0;
};

}  // namespace traindoc::supervisor
