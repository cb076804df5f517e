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
  // Records the kernel overwrote before they were read (a flood of messages), at least: told by
  // the gaps in the records' sequence numbers, one for a gap whose size cannot be told (read()
  // failing with EPIPE before any record was read).
  uint64_t records_lost() const { return m_lost; }
  // When a poll last read the log to its end before the latest loss (else the open): the records
  // lost were written after it and before the poll that found them lost. 0 while none was lost.
  int64_t lost_after_ns() const { return m_lost_after_ns; }

 private:
  // Counts the records missing before one numbered `sequence`; returns whether any were.
  bool count_gap(uint64_t sequence);

  int m_fd = -1;
  std::string m_note;
  std::optional<OomKillContext> m_context;  // the "oom-kill:" record, until its kill is told
  uint64_t m_lost = 0;
  std::optional<uint64_t> m_last_sequence;  // of the last record read; none before the first
  bool m_gap = false;                       // EPIPE: records were overwritten since it
  int64_t m_read_to_end_ns = 0;  // the start of the last poll that read to the end, else the open
  int64_t m_lost_after_ns = 0;
};

}  // namespace traindoc::supervisor
