// The job's memory cgroups that report.html's host-memory chart draws beside traindoc's own (a
// scheduler's step cgroup, a container, a cgroup the job moved itself into): each with the
// samples that the host samples do not already hold, named for people. Any process; pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::report {

// One cgroup as the chart measures it: the one whose limit binds (a sample's `current` is that
// cgroup's usage), else the job's cgroup itself.
struct CgroupLine {
  std::string usage_label;  // "cgroup /slurm/uid_0/job_7/step_0 usage, 2 OOM kills"
  std::string limit_label;  // "cgroup /slurm/uid_0/job_7/step_0 limit"
  std::string name;         // its path as shortened in the labels
  std::vector<const store::CgroupSample*> samples;
  uint64_t peak = 0;  // the largest usage sampled
  int oom_kills = 0;  // the kills its counters rose by
};

// The directory of traindoc's own memory cgroup among the job's samples; "" when the job's
// processes were never in it, it cannot be told (or the host samples read no cgroup).
std::string own_cgroup_dir(const store::Evidence& evidence);

// A cgroup path short enough for a legend: its last components after ".../", a component too
// long on its own cut in the middle.
std::string short_cgroup_path(const std::string& path);

// Every cgroup the job's samples measured other than the one the host samples read, in the order
// first sampled.
std::vector<CgroupLine> job_cgroup_lines(const analysis::Diagnosis& diagnosis,
                                         const store::Evidence& evidence);

}  // namespace traindoc::report
