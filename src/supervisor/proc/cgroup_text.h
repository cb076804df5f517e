// Parsers for finding and reading the memory cgroup, v1 and v2: /proc/self/cgroup,
// /proc/self/mountinfo and the memory.* files of either version.
// Supervisor process, sampler thread. Pure and total: text in, structs out, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace traindoc::supervisor {

// What /proc/<pid>/cgroup says about memory.
struct ProcCgroups {
  std::optional<std::string> v1_memory;  // path in the v1 hierarchy whose controllers hold memory
  std::optional<std::string> v2;         // path in the unified hierarchy ("0::<path>")
};

// One line of /proc/<pid>/mountinfo, the fields this needs; octal escapes undone.
struct MountEntry {
  std::string root;  // field 4: the path of the mounted filesystem's root inside it
  std::string mount_point;
  std::string fs_type;
  std::string super_options;
};

// A memory cgroup directory to read.
struct CgroupLocation {
  int version = 0;  // 1 or 2
  std::string dir;  // where memory.* files are
  std::string mount_point;
  // The process's cgroup path is not below the mount's root (a container that mounts only its
  // own cgroup but has no cgroup namespace): `dir` is then the mount point itself.
  bool outside_mount_root = false;
};

// A limit as written in memory.max (v2) or memory.limit_in_bytes (v1).
struct MemoryLimit {
  bool unlimited = false;
  uint64_t bytes = 0;
};

// memory.events (v2); counters since the cgroup was made, including its descendants.
struct CgroupV2Events {
  std::optional<uint64_t> low;
  std::optional<uint64_t> high;
  std::optional<uint64_t> max;
  std::optional<uint64_t> oom;
  std::optional<uint64_t> oom_kill;  // Linux >= 4.13
};

// memory.oom_control (v1).
struct CgroupV1OomControl {
  std::optional<bool> oom_kill_disable;
  std::optional<bool> under_oom;
  std::optional<uint64_t> oom_kill;  // Linux >= 4.13
};

ProcCgroups parse_proc_cgroup(std::string_view text);
// Malformed lines are skipped.
std::vector<MountEntry> parse_mountinfo(std::string_view text);

// Where the memory cgroup's files are, best first: the v1 memory hierarchy when one holds the
// memory controller (on a hybrid machine the v2 "0::/" line then names a tree without it), then
// the unified hierarchy. Empty when neither is both listed and mounted.
std::vector<CgroupLocation> memory_cgroup_candidates(std::string_view proc_cgroup,
                                                     std::string_view mountinfo);

// The directory of `cgroup_path` under a mount of its hierarchy whose root is `mount_root`.
// nullopt when the path is not below that root.
std::optional<std::string> join_cgroup_path(std::string_view mount_point,
                                            std::string_view mount_root,
                                            std::string_view cgroup_path);

// memory.current, memory.swap.current, memory.usage_in_bytes, memory.max_usage_in_bytes.
std::optional<uint64_t> parse_cgroup_counter(std::string_view text);
// "max" or bytes.
std::optional<MemoryLimit> parse_v2_memory_max(std::string_view text);
// Bytes; v1 writes "no limit" as the largest page-aligned counter (9223372036854771712 with
// 4 KiB pages), and some tools echo -1.
std::optional<MemoryLimit> parse_v1_memory_limit(std::string_view text);
CgroupV2Events parse_v2_memory_events(std::string_view text);
CgroupV1OomControl parse_v1_oom_control(std::string_view text);

}  // namespace traindoc::supervisor
