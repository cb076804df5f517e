// One memory cgroup to read, v1 or v2: usage, binding limit, OOM kills.
// Supervisor process, sampler thread.
#include "supervisor/proc/memory_cgroup.h"

#include <unistd.h>

namespace traindoc::supervisor {
namespace {

std::string parent_dir(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return dir.substr(0, slash);
}

}  // namespace

std::optional<MemoryCgroup> MemoryCgroup::open(const std::vector<CgroupLocation>& candidates,
                                               std::string& note) {
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
    MemoryCgroup cgroup;
    cgroup.m_version = location.version;
    cgroup.m_dir = location.dir;
    const char* limit_name = location.version == 2 ? "memory.max" : "memory.limit_in_bytes";
    cgroup.m_oom_path =
        cgroup.m_dir + (location.version == 2 ? "/memory.events" : "/memory.oom_control");
    // A limit set on an ancestor (a Slurm job above its steps, a pod above its containers)
    // binds as hard as our own, and above the mount point we cannot see.
    std::string dir = cgroup.m_dir;
    while (true) {
      cgroup.m_levels.push_back({dir, dir + "/" + usage_name, dir + "/" + limit_name});
      if (dir.size() <= location.mount_point.size() || dir == "/") break;
      dir = parent_dir(dir);
    }
    note = "cgroup v" + std::to_string(location.version) + " memory at " + cgroup.m_dir;
    if (location.outside_mount_root) {
      note += " (the cgroup path is outside the mount's root; using the mount itself)";
    }
    if (!tried.empty()) note += " (" + tried + ")";
    return cgroup;
  }
  note = "no usable memory cgroup: " + tried;
  return std::nullopt;
}

CgroupReading MemoryCgroup::read(ProcFileReader& reader) const {
  CgroupReading reading;
  // The usage that matters is the one of the cgroup whose limit binds first, so that
  // current/max compare like with like.
  const Level* binding = nullptr;
  for (const Level& level : m_levels) {
    auto text = reader.read(level.limit_path.c_str(), ReadUntil::kShortRead);
    if (!text) continue;
    std::optional<MemoryLimit> limit =
        m_version == 2 ? parse_v2_memory_max(*text) : parse_v1_memory_limit(*text);
    if (!limit || limit->unlimited) continue;
    binding = &level;
    reading.max = limit->bytes;
    reading.limit_dir = level.dir;
    break;
  }
  const std::string& usage_path = binding ? binding->usage_path : m_levels.front().usage_path;
  if (auto text = reader.read(usage_path.c_str(), ReadUntil::kShortRead)) {
    reading.current = parse_cgroup_counter(*text);
  }
  if (auto text = reader.read(m_oom_path.c_str(), ReadUntil::kShortRead)) {
    reading.oom_kills = m_version == 2 ? parse_v2_memory_events(*text).oom_kill
                                       : parse_v1_oom_control(*text).oom_kill;
  }
  return reading;
}

}  // namespace traindoc::supervisor
