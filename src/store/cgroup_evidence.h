// The memory cgroups of the job's processes (schema 12): which cgroup each process was in and
// when it moved, samples of each distinct one, and the kernel's own account of OOM kills.
// Written by the supervisor through StoreWriter, read back by read_evidence. Plain data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace traindoc::store {

// A process's memory cgroup from t_ns on: when it was first seen, and each time it moved.
struct ProcessCgroup {
  int64_t t_ns = 0;
  int pid = 0;
  uint64_t start_ticks = 0;
  int version = 0;   // 1 or 2; 0 when no memory cgroup of it could be found or read
  std::string path;  // as /proc/<pid>/cgroup names it ("/slurm/uid_0/job_7/step_0")
  std::string dir;   // the directory whose memory.* files were read; "" when none

  bool operator==(const ProcessCgroup&) const = default;
};

// One read of a memory cgroup the job's processes were in.
struct CgroupSample {
  int64_t t_ns = 0;
  std::string dir;  // ProcessCgroup::dir
  int version = 0;
  // The usage of the cgroup whose limit binds (itself or the ancestor in limit_dir), so that the
  // two compare; its own where no limit binds.
  std::optional<uint64_t> current;
  std::optional<uint64_t> max;  // absent when unlimited
  std::string limit_dir;        // where `max` was set; "" when unlimited
  std::optional<uint64_t> oom_kills;

  bool operator==(const CgroupSample&) const = default;
};

// A process the kernel's OOM killer ended, as the kernel log tells it ("Memory cgroup out of
// memory: Killed process N (comm) ..." with the "oom-kill:" record before it).
struct KernelOomKill {
  int64_t t_ns = 0;
  int pid = 0;
  std::string comm;
  bool memcg = false;       // a memory cgroup's limit (CONSTRAINT_MEMCG), not the machine
  std::string oom_cgroup;   // oom_memcg: the cgroup whose limit was hit; "" when not told
  std::string task_cgroup;  // task_memcg: the killed process's cgroup path; "" when not told
  // Bytes; = {}: brace lists may leave them out, warning-free.
  std::optional<uint64_t> total_vm = {};
  std::optional<uint64_t> anon_rss = {};
  std::optional<uint64_t> file_rss = {};
  std::optional<uint64_t> shmem_rss = {};

  bool operator==(const KernelOomKill&) const = default;
};

}  // namespace traindoc::store
