// The memory cgroups the job's processes are in, which need not be traindoc's own: a
// scheduler's per-step cgroup, a container, a systemd scope, a job that moves itself. Reads each
// process's /proc/<pid>/cgroup at each walk (one small read), and each distinct cgroup once per
// sample. Supervisor process, main loop thread. Never throws: what cannot be read stays empty.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/cgroup_evidence.h"
#include "supervisor/proc/memory_cgroup.h"
#include "supervisor/proc/proc_files.h"

namespace traindoc::supervisor {

class JobCgroups {
 public:
  // `proc`: where /proc is (tests point it at a recorded tree); its self/mountinfo says where
  // the hierarchies are mounted, as this process sees them.
  explicit JobCgroups(std::string proc = "/proc");

  // The process's memory cgroup when it is new or has moved since the last call for it; nullopt
  // when unchanged, or when its cgroup file cannot be read, or it has no memory left (it is
  // gone, or ending: its statm reads 0).
  std::optional<store::ProcessCgroup> observe(int pid, uint64_t start_ticks, int64_t t_ns);
  // Forgets the processes not in `alive`.
  void retain(const std::set<int>& alive);

  // One read of each distinct cgroup the processes observed are in. `known` is a reading of the
  // cgroup in `known_dir` already taken this moment (traindoc's own, by the host sampler): used
  // as it is rather than read again.
  std::vector<store::CgroupSample> sample(int64_t t_ns, const std::string& known_dir = {},
                                          const CgroupReading* known = nullptr);

 private:
  struct Member {
    uint64_t start_ticks = 0;
    std::string text;  // its /proc/<pid>/cgroup as last read
    std::string dir;   // the memory cgroup that text names; "" when none
  };
  // A cgroup file's text, resolved to the memory cgroup it names (once per distinct text).
  struct Resolved {
    int version = 0;
    std::string path;
    std::string dir;
  };

  const Resolved& resolve(const std::string& text);

  ProcFileReader m_reader;
  std::string m_proc;
  std::optional<std::string> m_mountinfo;  // read at the first resolve
  std::map<int, Member> m_members;
  std::map<std::string, Resolved> m_resolved;
  std::map<std::string, MemoryCgroup> m_cgroups;  // by dir
};

}  // namespace traindoc::supervisor
