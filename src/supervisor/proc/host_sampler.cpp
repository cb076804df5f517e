// Samples the machine: /proc/meminfo, the memory cgroup the job runs in (v1 or v2) and /dev/shm.
// Supervisor process, sampler thread.
#include "supervisor/proc/host_sampler.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <ctime>

#include "supervisor/proc/cgroup_text.h"

#include "common/clock.h"

namespace traindoc::supervisor {

HostSampler::HostSampler(HostPaths paths)
    : m_paths(std::move(paths)), m_meminfo_path(m_paths.proc + "/meminfo") {
  find_cgroup();
}

void HostSampler::find_cgroup() {
  std::string cgroup_text;
  std::string mountinfo_text;
  // Copies: the reader's buffer holds only the latest file.
  if (auto text = m_reader.read((m_paths.proc + "/self/cgroup").c_str())) cgroup_text = *text;
  if (auto text = m_reader.read((m_paths.proc + "/self/mountinfo").c_str())) mountinfo_text = *text;
  if (cgroup_text.empty()) {
    m_note = "no cgroup: " + m_paths.proc + "/self/cgroup is missing or empty";
    return;
  }
  std::vector<CgroupLocation> candidates = memory_cgroup_candidates(cgroup_text, mountinfo_text);
  if (candidates.empty()) {
    m_note = "no memory cgroup: neither a v1 memory hierarchy nor cgroup2 is both listed in " +
             m_paths.proc + "/self/cgroup and mounted";
    return;
  }
  m_cgroup = MemoryCgroup::open(candidates, m_note);
}

store::HostSample HostSampler::sample() {
  store::HostSample sample;
  sample.t_ns = common::realtime_ns();

  if (auto text = m_reader.read(m_meminfo_path.c_str(), ReadUntil::kShortRead)) {
    MemInfo info = parse_meminfo(*text);
    sample.mem_total = info.mem_total.value_or(0);
    // Kernels before 3.14 have no MemAvailable; 0 says "unknown" there.
    sample.mem_available = info.mem_available.value_or(0);
    sample.swap_total = info.swap_total.value_or(0);
    sample.swap_free = info.swap_free.value_or(0);
  }

  sample.cgroup_version = cgroup_version();
  if (m_cgroup) {
    m_last = m_cgroup->read(m_reader);
    sample.cgroup_current = m_last.current;
    sample.cgroup_max = m_last.max;
    sample.cgroup_oom_kills = m_last.oom_kills;
  }

  struct statvfs fs {};
  if (statvfs(m_paths.shm.c_str(), &fs) == 0) {
    uint64_t block = fs.f_frsize != 0 ? fs.f_frsize : fs.f_bsize;
    sample.shm_total = static_cast<uint64_t>(fs.f_blocks) * block;
    sample.shm_used = static_cast<uint64_t>(fs.f_blocks - fs.f_bfree) * block;
  }
  return sample;
}

bool short_of_memory(const store::HostSample& host) {
  if (host.mem_total > 0 && host.mem_available < host.mem_total / 5) return true;
  if (!host.cgroup_max || !host.cgroup_current) return false;
  uint64_t limit = *host.cgroup_max;
  return limit - std::min(*host.cgroup_current, limit) < limit / 5;
}

}  // namespace traindoc::supervisor
