// Samples the machine: /proc/meminfo, the memory cgroup the job runs in (v1 or v2) and /dev/shm.
// Supervisor process, sampler thread. The cgroup is found once, at construction; every sample
// after that is a handful of small reads. Never throws: what cannot be read stays empty.
#pragma once

#include <optional>
#include <string>

#include "store/evidence.h"
#include "supervisor/proc/memory_cgroup.h"
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

  int cgroup_version() const { return m_cgroup ? m_cgroup->version() : 0; }  // 0: none usable
  const std::string& cgroup_dir() const { return m_cgroup ? m_cgroup->dir() : m_no_dir; }
  // The cgroup's part of the latest sample, with where its limit was set.
  const CgroupReading& last_cgroup_reading() const { return m_last; }
  // Which cgroup was chosen and how, or why none was: for the run's events and the report.
  const std::string& cgroup_note() const { return m_note; }

 private:
  void find_cgroup();

  ProcFileReader m_reader;
  HostPaths m_paths;
  std::string m_meminfo_path;
  std::optional<MemoryCgroup> m_cgroup;
  std::string m_note;
  std::string m_no_dir;
  CgroupReading m_last;
};

}  // namespace traindoc::supervisor
