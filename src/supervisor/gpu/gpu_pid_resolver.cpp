// Maps NVML's pids to traindoc's pid namespace. Supervisor process, main loop thread.
#include "supervisor/gpu/gpu_pid_resolver.h"

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

// A job process whose innermost pid is `nvml_pid`: the driver reported the pid of the job's own
// namespace (some drivers do, see docs/gpu.md).
std::optional<int> GpuPidResolver::from_namespaces(int nvml_pid, const std::vector<int>& job_pids) {
  ProcFileReader reader;
  for (int pid : job_pids) {
    std::optional<std::string_view> status = reader.read_pid_file(pid, "status");
    if (!status) continue;
    std::vector<int> pids = parse_nspid(*status);
    if (pids.size() > 1 && pids.back() == nvml_pid) return pid;
  }
  return std::nullopt;
}

store::GpuProcess GpuPidResolver::resolve(int nvml_pid, const std::vector<int>& job_pids,
                                          int64_t t_ns, bool& first_seen) {
  auto known = m_known.find(nvml_pid);
  first_seen = known == m_known.end();
  if (!first_seen) return known->second;
  store::GpuProcess process;
  process.nvml_pid = nvml_pid;
  process.first_seen_ns = t_ns;
  // A job process first: in the job's own namespace, /proc/<nvml_pid> may be another process.
  bool in_job = std::find(job_pids.begin(), job_pids.end(), nvml_pid) != job_pids.end();
  std::optional<int> here = in_job ? std::optional<int>(nvml_pid) : std::nullopt;
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
