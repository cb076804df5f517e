// Samples one process from /proc and finds a process's children.
// Supervisor process, sampler thread.
#include "supervisor/proc/proc_sampler.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <ctime>

#include "supervisor/proc/text_scan.h"

#include "common/clock.h"

namespace traindoc::supervisor {
namespace {

// "123 456 " as written by task/<tid>/children.
void append_pids(std::string_view text, std::vector<int>& out) {
  std::string_view word;
  while (text::next_word(text, word)) {
    if (std::optional<int> pid = parse_pid_name(word)) out.push_back(*pid);
  }
}

}  // namespace

ProcSampler::ProcSampler() {
  long ticks = sysconf(_SC_CLK_TCK);
  if (ticks > 0) m_seconds_per_tick = 1.0 / static_cast<double>(ticks);
  long page = sysconf(_SC_PAGESIZE);
  if (page > 0) m_page_size = static_cast<uint64_t>(page);
  char path[96];
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", getpid(), getpid());
  m_children_files = access(path, R_OK) == 0;
}

std::optional<ProcSnapshot> ProcSampler::sample(int pid, bool slow) {
  ProcSnapshot snapshot;
  store::ProcSample& sample = snapshot.sample;
  sample.t_ns = common::realtime_ns();
  sample.pid = pid;

  std::optional<std::string_view> text = m_reader.read_pid_file(pid, "stat");
  if (!text) return std::nullopt;
  std::optional<ProcStat> stat = parse_proc_stat(*text);
  if (!stat) return std::nullopt;
  snapshot.stat = std::move(*stat);
  const ProcStat& st = snapshot.stat;
  sample.start_ticks = st.starttime;
  sample.cpu_user_s = static_cast<double>(st.utime) * m_seconds_per_tick;
  sample.cpu_sys_s = static_cast<double>(st.stime) * m_seconds_per_tick;
  sample.rss = st.rss_pages * m_page_size;
  sample.threads = st.num_threads;

  // status adds swap and an rss that agrees with smaps; if the process ended in between, the
  // stat alone still says what it was.
  if ((text = m_reader.read_pid_file(pid, "status"))) {
    ProcStatus status = parse_proc_status(*text);
    if (status.vm_rss) sample.rss = *status.vm_rss;
    if (status.vm_swap) sample.swap = *status.vm_swap;
    if (status.threads) sample.threads = *status.threads;
    sample.rss_file = status.rss_file;
    sample.rss_peak = status.vm_hwm;
  }

  if (slow && !st.dead()) {
    add_smaps(pid, sample);
    add_descriptors(pid, sample);
  }
  return snapshot;
}

void ProcSampler::add_smaps(int pid, store::ProcSample& sample) {
  // Walks every page table entry under the mm lock, and looks up how many processes map each
  // page (for PSS): the reason this is only read at the slow rate.
  if (std::optional<std::string_view> text = m_reader.read_pid_file(pid, "smaps_rollup")) {
    SmapsRollup rollup = parse_smaps_rollup(*text);
    sample.pss = rollup.pss;
    sample.uss = rollup.uss();
  }
}

void ProcSampler::add_descriptors(int pid, store::ProcSample& sample) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/fd", pid);
  sample.fds = m_reader.count_dir_entries(path);
  if (std::optional<std::string_view> text = m_reader.read_pid_file(pid, "limits")) {
    ProcLimits limits = parse_proc_limits(*text);
    // Left empty when unlimited: there is no ceiling to run into.
    if (limits.open_files_soft && *limits.open_files_soft <= INT_MAX) {
      sample.fd_limit = static_cast<int>(*limits.open_files_soft);
    }
  }
}

void ProcSampler::children_of(int pid, std::vector<int>& out) {
  out.clear();
  if (!m_children_files) {
    std::vector<PidParent> all;
    scan_parents(all);
    for (const PidParent& entry : all) {
      if (entry.ppid == pid) out.push_back(entry.pid);
    }
    return;
  }
  m_tids.clear();
  char path[96];
  std::snprintf(path, sizeof path, "/proc/%d/task", pid);
  m_reader.list_dir(path, [&](std::string_view name) {
    if (std::optional<int> tid = parse_pid_name(name)) m_tids.push_back(*tid);
  });
  for (int tid : m_tids) {
    std::snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, tid);
    // A thread that exited since the listing has no file any more; its children moved on.
    // One record per child: a multi-record file, read to the end.
    if (auto text = m_reader.read(path)) append_pids(*text, out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

int64_t ProcSampler::start_realtime_ns(uint64_t start_ticks) const {
  timespec boot{};
  clock_gettime(CLOCK_BOOTTIME, &boot);
  int64_t since_boot_ns = int64_t{boot.tv_sec} * 1'000'000'000 + boot.tv_nsec;
  auto started_ns =
      static_cast<int64_t>(static_cast<double>(start_ticks) * m_seconds_per_tick * 1e9);
  return common::realtime_ns() - (since_boot_ns - started_ns);
}

std::vector<int> ProcSampler::children_of(int pid) {
  std::vector<int> out;
  children_of(pid, out);
  return out;
}

void ProcSampler::scan_parents(std::vector<PidParent>& out) {
  out.clear();
  m_reader.list_dir("/proc", [&](std::string_view name) {
    std::optional<int> pid = parse_pid_name(name);
    if (!pid) return;
    std::optional<std::string_view> text = m_reader.read_pid_file(*pid, "stat");
    if (!text) return;
    if (std::optional<ProcStat> stat = parse_proc_stat(*text)) out.push_back({*pid, stat->ppid});
  });
}

}  // namespace traindoc::supervisor
