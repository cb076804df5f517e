// Reads /dev/kmsg for the OOM killer's records. Supervisor process, main loop thread.
#include "supervisor/proc/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "common/clock.h"

namespace traindoc::supervisor {
namespace {

// A read returns one record and fails with EINVAL when the buffer is shorter than it: the
// kernel's records are at most about 1 KiB of message plus their dictionary.
constexpr size_t kRecordBuffer = 8192;
// At most this many records a poll, so that a flooded log cannot hold up the loop.
constexpr int kMaxRecordsPerPoll = 4096;

}  // namespace

KernelLog::KernelLog(const std::string& path) {
  // Before the seek: a record written after it is one that counts.
  m_read_to_end_ns = common::realtime_ns();
  m_fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (m_fd < 0) {
    m_note = "the kernel log (" + path + ") could not be read (" + std::strerror(errno) +
             "): OOM kills are told by their memory cgroups only";
    return;
  }
  lseek(m_fd, 0, SEEK_END);
}

KernelLog::~KernelLog() {
  if (m_fd >= 0) close(m_fd);
}

bool KernelLog::count_gap(uint64_t sequence) {
  uint64_t missing = 0;
  if (m_last_sequence && sequence > *m_last_sequence + 1) missing = sequence - *m_last_sequence - 1;
  // The kernel moved us past records we never read, but we know not from where.
  if (m_gap && missing == 0) missing = 1;
  m_gap = false;
  m_last_sequence = sequence;
  m_lost += missing;
  return missing > 0;
}

std::vector<store::KernelOomKill> KernelLog::poll() {
  std::vector<store::KernelOomKill> out;
  if (m_fd < 0) return out;
  // What this poll does not read was written after this moment: once it reads to the end, the
  // bound of a later loss.
  const int64_t started_ns = common::realtime_ns();
  bool lost = false;
  bool to_end = false;
  char buffer[kRecordBuffer];
  for (int records = 0; records < kMaxRecordsPerPoll; ++records) {
    ssize_t got = read(m_fd, buffer, sizeof buffer);
    if (got < 0 && errno == EPIPE) {
      // Overwritten before we read them; the next read returns the oldest record left, whose
      // sequence number tells how many.
      m_gap = true;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      to_end = true;  // EAGAIN: nothing more for now
      break;
    }
    std::optional<KmsgRecord> record =
        parse_kmsg_record(std::string_view(buffer, static_cast<size_t>(got)));
    if (!record) continue;
    lost = count_gap(record->sequence) || lost;
    if (std::optional<OomKillContext> context = parse_oom_kill_context(record->message)) {
      m_context = std::move(context);
      continue;
    }
    std::optional<OomKilledProcess> killed = parse_oom_killed_process(record->message);
    if (!killed) continue;
    store::KernelOomKill kill;
    // The record's time is on the monotonic clock: moved to the realtime one by the distance
    // between the two now.
    constexpr uint64_t kMaxUsec = INT64_MAX / 1000;
    int64_t ago_ns = record->usec > kMaxUsec ? 0
                                             : common::clock_ns(CLOCK_MONOTONIC) -
                                                   static_cast<int64_t>(record->usec) * 1000;
    kill.t_ns = common::realtime_ns() - (ago_ns > 0 ? ago_ns : 0);
    kill.pid = killed->pid;
    kill.comm = killed->comm;
    kill.memcg = killed->memcg;
    if (m_context && m_context->pid == killed->pid) {
      kill.memcg = kill.memcg || m_context->memcg;
      kill.oom_cgroup = m_context->oom_memcg;
      kill.task_cgroup = m_context->task_memcg;
    }
    m_context.reset();
    kill.total_vm = killed->total_vm;
    kill.anon_rss = killed->anon_rss;
    kill.file_rss = killed->file_rss;
    kill.shmem_rss = killed->shmem_rss;
    out.push_back(std::move(kill));
  }
  if (m_gap) {
    // No record after the gap yet: one at least, and the next record's number tells nothing.
    ++m_lost;
    m_gap = false;
    m_last_sequence.reset();
    lost = true;
  }
  if (lost) m_lost_after_ns = m_read_to_end_ns;
  if (to_end) m_read_to_end_ns = started_ns;
  return out;
}

}  // namespace traindoc::supervisor
