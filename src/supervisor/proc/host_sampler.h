// Samples the machine: /proc/meminfo, the memory cgroup the job runs in (v1 or v2) and /dev/shm.
// Supervisor process, sampler thread. The cgroup is found once, at construction; every sample
// after that is a handful of small reads. Never throws: what cannot be read stays empty.
#pragma once

#include <string>
#include <vector>

#include "store/evidence.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {

// Where to look; tests point these at recorded trees.
struct HostPaths {
  std::string proc = "/proc";  // meminfo, self/cgroup, self/mountinfo
  std::string shm = "/dev/shm";
};

// Less than a fifth of the host's memory left, or of the limit of the job's memory cgroup
// (whose usage counts page cache too: a job reading its dataset may look short of memory).
bool short_of_memory(const store::HostSample& host);

class HostSampler {
 public:
  explicit HostSampler(HostPaths paths = {});

  store::HostSample sample();

  int cgroup_version() const { return m_version; }  // 0: none usable found
  const std::string& cgroup_dir() const { return m_dir; }
  // Which cgroup was chosen and how, or why none was: for the run's events and the report.
  const std::string& cgroup_note() const { return m_note; }

 private:
  // A cgroup whose limit may bind the job: its own, then each ancestor up to the mount.
  struct Level {
    std::string usage_path;
    std::string limit_path;
  };

  void find_cgroup();

  ProcFileReader m_reader;
  HostPaths m_paths;
  std::string m_meminfo_path;
  int m_version = 0;
  std::string m_dir;
  std::string m_note;
  std::vector<Level> m_levels;
  std::string m_oom_path;  // v2 memory.events, v1 memory.oom_control
};

}  // namespace traindoc::supervisor
