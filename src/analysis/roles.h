// Gives every process of a job its role: launcher, rank N, worker K of rank N, or other.
// Pure: works on the evidence model, used by analysis and the report in any process.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "store/evidence.h"

namespace traindoc::analysis {

enum class Role { kLauncher, kRank, kWorker, kOther };

struct ProcessRole {
  Role role = Role::kOther;
  std::optional<int> rank;  // for ranks, and for workers and programs below one: that rank
  std::optional<int> local_rank;
  std::optional<int> node_rank;
  std::optional<int> worker;  // K: the order in which the rank started its workers
};

const char* to_string(Role role);

// The program itself is a Python interpreter (python, python3, python3.11), whatever its
// arguments say: `sh -c "python3 train.py"` is a shell.
bool is_python(const store::ProcessRecord& proc);

// "launcher", "rank 1", "worker 0 of rank 1", "program of rank 1", "other"
std::string describe(const ProcessRole& role);

// One entry per process, in the same order as `processes`.
std::vector<ProcessRole> assign_roles(const std::vector<store::ProcessRecord>& processes,
                                      int root_pid);

}  // namespace traindoc::analysis
