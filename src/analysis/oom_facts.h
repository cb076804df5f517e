// What the memory evidence says of a process that SIGKILL ended: the kernel log's account of an
// OOM kill of its pid, and the memory cgroup it was in (its own, read by pid, not traindoc's),
// whose OOM kill count, usage and limit around its end tell the OOM killer's work. Used by
// rule_killed. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/evidence.h"

namespace traindoc::analysis {

struct OomFacts {
  // Evidence lines of an OOM kill; empty when there is none.
  std::vector<std::string> evidence;
  // The memory cgroup the process was in at its end, in words ("memory cgroup
  // /sys/fs/cgroup/memory/job/x", or "traindoc's own memory cgroup" for a run that did not
  // record the process's own); "" when none was read.
  std::string cgroup;
  std::string cgroup_dir;  // its directory; "" for traindoc's own or none
  std::optional<uint64_t> limit;
  std::string limit_dir;  // where the limit was set (the cgroup or an ancestor)
  bool machine = false;   // the kernel said the machine, not a cgroup, ran out of memory
  // What was looked at and told nothing, for the finding when there is no OOM evidence.
  std::vector<std::string> checked;
};

OomFacts oom_facts(const store::Evidence& evidence, const store::ProcessRecord& process);

// The kernel log's records lost before they were read, as the report's missing evidence says it:
// from a kernel-log-records-lost event, the latest of which holds the running total.
std::string kernel_log_loss_words(const store::Event& loss);

// The memory cgroup `process` was in at `t_ns`: its last membership row from before then, else
// its parent's at its start (a process starts in its parent's cgroup), with `whose` set to
// "its" or "its parent's". nullptr when neither was recorded.
const store::ProcessCgroup* memory_cgroup_at(const store::Evidence& evidence,
                                             const store::ProcessRecord& process, int64_t t_ns,
                                             std::string& whose);

}  // namespace traindoc::analysis
