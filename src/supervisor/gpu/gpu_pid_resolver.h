// Names the processes NVML reports in traindoc's own pid namespace. NVML gives host pids; in a
// container, or with the job in a pid namespace of its own, those differ from the pids of the
// /proc that traindoc reads. Where the host's /proc is mounted in the container, it maps them
// back. Supervisor process, main loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/gpu_evidence.h"

namespace traindoc::supervisor {

// The "NSpid:" line of /proc/<pid>/status: the pid in each pid namespace the process belongs
// to, from the namespace of that /proc to the innermost. Empty when the line is absent
// (Linux < 4.1) or malformed.
std::vector<int> parse_nspid(std::string_view status);

class GpuPidResolver {
 public:
  // `host_proc`: a /proc of an outer pid namespace (the host's, mounted into the container), ""
  // for none. It is used only if traindoc finds itself there (its "self" entry's innermost pid
  // is traindoc's own pid).
  explicit GpuPidResolver(std::string host_proc = "");

  // Whether `host_proc` was usable, and the level of traindoc's pid namespace in it (0: the same
  // namespace, nothing to map).
  bool maps_host_pids() const { return m_level > 0; }
  const std::string& host_proc() const { return m_host_proc; }

  // The process NVML calls `nvml_pid`, with its command line the first time it is seen, given
  // the job's live processes (for the pid-namespace mapping). pid 0 when it is not visible here.
  // `first_seen` is true on the first call for this process.
  store::GpuProcess resolve(int nvml_pid, const std::vector<int>& job_pids, int64_t t_ns,
                            bool& first_seen);

  // Forgets processes NVML no longer lists, so that a reused pid is looked up afresh.
  void keep_only(const std::vector<int>& nvml_pids);

 private:
  std::optional<int> from_namespaces(int nvml_pid, const std::vector<int>& job_pids);
  std::optional<int> from_host_proc(int nvml_pid);

  std::map<int, store::GpuProcess> m_known;  // by NVML pid
  std::string m_host_proc;
  size_t m_level = 0;  // traindoc's namespace's index in the NSpid lines of m_host_proc
};

}  // namespace traindoc::supervisor
