// Samples the machine: /proc/meminfo, the memory cgroup the job runs in (v1 or v2) and /dev/shm.
// Supervisor process, sampler thread.
#include "supervisor/proc/host_sampler.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "supervisor/proc/cgroup_text.h"

#include "common/clock.h"

namespace traindoc::supervisor {
namespace {

std::string parent_dir(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return dir.substr(0, slash);
}

}  // namespace

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
  std::string tried;
  for (const CgroupLocation& location : candidates) {
    const char* usage_name = location.version == 2 ? "memory.current" : "memory.usage_in_bytes";
    std::string probe = location.dir + "/" + usage_name;
    if (access(probe.c_str(), R_OK) != 0) {
      // The v2 root cgroup has no memory.current, and a hybrid machine's unified tree has no
      // memory controller at all.
      if (!tried.empty()) tried += "; ";
      tried +=
          "v" + std::to_string(location.version) + " " + location.dir + " has no " + usage_name;
      continue;
    }
    m_version = location.version;
    m_dir = location.dir;
    const char* limit_name = m_version == 2 ? "memory.max" : "memory.limit_in_bytes";
    m_oom_path = m_dir + (m_version == 2 ? "/memory.events" : "/memory.oom_control");
    // A limit set on an ancestor (a Slurm job above its steps, a pod above its containers)
    // binds as hard as our own, and above the mount point we cannot see.
    std::string dir = m_dir;
    while (true) {
      m_levels.push_back({dir + "/" + usage_name, dir + "/" + limit_name});
      if (dir.size() <= location.mount_point.size() || dir == "/") break;
      dir = parent_dir(dir);
    }
    m_note = "cgroup v" + std::to_string(m_version) + " memory at " + m_dir;
    if (location.outside_mount_root) {
      m_note += " (our cgroup path is outside the mount's root; using the mount itself)";
    }
    if (!tried.empty()) m_note += " (" + tried + ")";
    return;
  }
  m_note = "no usable memory cgroup: " + tried;
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

  sample.cgroup_version = m_version;
  if (m_version != 0) {
    // The usage that matters is the one of the cgroup whose limit binds first, so that
    // current/max compare like with like.
    const Level* binding = nullptr;
    for (const Level& level : m_levels) {
      auto text = m_reader.read(level.limit_path.c_str(), ReadUntil::kShortRead);
      if (!text) continue;
      std::optional<MemoryLimit> limit =
          m_version == 2 ? parse_v2_memory_max(*text) : parse_v1_memory_limit(*text);
      if (!limit || limit->unlimited) continue;
      binding = &level;
      sample.cgroup_max = limit->bytes;
      break;
    }
    const std::string& usage_path = binding ? binding->usage_path : m_levels.front().usage_path;
    if (auto text = m_reader.read(usage_path.c_str(), ReadUntil::kShortRead)) {
      sample.cgroup_current = parse_cgroup_counter(*text);
    }
    if (auto text = m_reader.read(m_oom_path.c_str(), ReadUntil::kShortRead)) {
      sample.cgroup_oom_kills = m_version == 2 ? parse_v2_memory_events(*text).oom_kill
                                               : parse_v1_oom_control(*text).oom_kill;
    }
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
