// One memory cgroup to read, v1 or v2: its usage, the limit that binds it (its own or an
// ancestor's) and its OOM kill count. Supervisor process, sampler thread. Made once per
// distinct cgroup (the files it reads are found then); each read is a handful of small reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "supervisor/proc/cgroup_text.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {

// One look at a memory cgroup.
struct CgroupReading {
  // Usage of the cgroup whose limit binds first (so that it compares with `max`), else its own.
  std::optional<uint64_t> current;
  std::optional<uint64_t> max;  // absent when neither it nor an ancestor has a limit
  std::string limit_dir;        // where `max` was set: the cgroup itself or an ancestor
  std::optional<uint64_t> oom_kills;
};

class MemoryCgroup {
 public:
  // The first candidate whose usage file is readable (cgroup_text.h, memory_cgroup_candidates);
  // nullopt when none is, with `note` saying why.
  static std::optional<MemoryCgroup> open(const std::vector<CgroupLocation>& candidates,
                                          std::string& note);

  CgroupReading read(ProcFileReader& reader) const;

  int version() const { return m_version; }
  const std::string& dir() const { return m_dir; }

 private:
  // A cgroup whose limit may bind: this one, then each ancestor up to the mount.
  struct Level {
    std::string dir;
    std::string usage_path;
    std::string limit_path;
  };

  int m_version = 0;
  std::string m_dir;
  std::vector<Level> m_levels;
  std::string m_oom_path;  // v2 memory.events, v1 memory.oom_control
};

}  // namespace traindoc::supervisor
