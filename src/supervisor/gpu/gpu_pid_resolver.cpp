// Maps NVML's pids to traindoc's pid namespace. Supervisor process, main loop thread.
#include "supervisor/gpu/gpu_pid_resolver.h"

#include <unistd.h>

#include <algorithm>

#include "supervisor/proc/environ_text.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {

std::vector<int> parse_nspid(std::string_view status) {
  std::string_view line;
  while (text::next_line(status, line)) {
    std::string_view key;
    std::string_view value;
    if (!text::split_key(line, key, value) || key != "NSpid") continue;
    std::vector<int> pids;
    std::string_view word;
    while (text::next_word(value, word)) {
      std::optional<uint64_t> pid = text::parse_u64(word);
      if (!pid || *pid == 0 || *pid > INT32_MAX) return {};
      pids.push_back(static_cast<int>(*pid));
    }
    return pids;
  }
  return {};
}

GpuPidResolver::GpuPidResolver(std::string host_proc) : m_host_proc(std::move(host_proc)) {
  if (m_host_proc.empty()) return;
  ProcFileReader reader;
  std::optional<std::string_view> status = reader.read((m_host_proc + "/self/status").c_str());
  std::vector<int> levels = status ? parse_nspid(*status) : std::vector<int>{};
  // Only a /proc where traindoc itself appears, with its own pid as the innermost one.
  if (levels.size() > 1 && levels.back() == getpid()) m_level = levels.size() - 1;
}

// A job process with `nvml_pid` among its pids of inner namespaces: the job runs in a pid
// namespace below traindoc's, and the driver reported the pid of the job's own namespace (some
// drivers do, see docs/gpu.md).
std::optional<int> GpuPidResolver::from_namespaces(int nvml_pid, const std::vector<int>& job_pids) {
  ProcFileReader reader;
  for (int pid : job_pids) {
    std::optional<std::string_view> status = reader.read_pid_file(pid, "status");
    if (!status) continue;
    std::vector<int> pids = parse_nspid(*status);
    if (std::find(pids.begin() + std::min<size_t>(pids.size(), 1), pids.end(), nvml_pid) !=
        pids.end()) {
      return pid;
    }
  }
  return std::nullopt;
}

// The process that the host's /proc calls `nvml_pid`, as traindoc's namespace numbers it: its
// NSpid at traindoc's level, taken only when both /procs agree on when it started (a pid reused
// in between is not taken for it).
std::optional<int> GpuPidResolver::from_host_proc(int nvml_pid) {
  if (m_level == 0) return std::nullopt;
  ProcFileReader reader;
  const std::string dir = m_host_proc + "/" + std::to_string(nvml_pid);
  std::optional<std::string_view> status = reader.read((dir + "/status").c_str());
  std::vector<int> pids = status ? parse_nspid(*status) : std::vector<int>{};
  if (pids.size() <= m_level || pids.front() != nvml_pid) return std::nullopt;
  const int here = pids[m_level];
  std::optional<std::string_view> stat_text = reader.read((dir + "/stat").c_str());
  std::optional<ProcStat> outer = stat_text ? parse_proc_stat(*stat_text) : std::nullopt;
  std::optional<ProcStat> inner = read_proc_stat(here);
  if (!outer || !inner || outer->starttime != inner->starttime) return std::nullopt;
  return here;
}

store::GpuProcess GpuPidResolver::resolve(int nvml_pid, const std::vector<int>& job_pids,
                                          int64_t t_ns, bool& first_seen) {
  auto known = m_known.find(nvml_pid);
  first_seen = known == m_known.end();
  if (!first_seen) return known->second;
  store::GpuProcess process;
  process.nvml_pid = nvml_pid;
  process.first_seen_ns = t_ns;
  // The host's /proc maps a host pid for sure (pid and start time); then a job process: in the
  // job's own namespace, /proc/<nvml_pid> may be another process.
  std::optional<int> here = from_host_proc(nvml_pid);
  bool in_job = std::find(job_pids.begin(), job_pids.end(), nvml_pid) != job_pids.end();
  if (!here && in_job) here = nvml_pid;
  if (!here) here = from_namespaces(nvml_pid, job_pids);
  if (!here) here = nvml_pid;  // outside the job, in our namespace when /proc has it
  if (std::optional<ProcStat> stat = read_proc_stat(*here)) {
    process.pid = *here;
    process.start_ticks = stat->starttime;
    process.cmdline =
        join_cmdline(read_proc_cmdline(*here).value_or(std::vector<std::string>{stat->comm}));
  }
  m_known[nvml_pid] = process;
  return process;
}

void GpuPidResolver::keep_only(const std::vector<int>& nvml_pids) {
  std::erase_if(m_known, [&nvml_pids](const auto& entry) {
    return std::find(nvml_pids.begin(), nvml_pids.end(), entry.first) == nvml_pids.end();
  });
}

}  // namespace traindoc::supervisor
