// Gives every process of a job its role: launcher, rank N, worker K of rank N, or other.
// Pure: works on the evidence model, used by analysis and the report in any process.
#pragma once

#include <optional>
#include <string>
#include <string_view>
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

// What a Python interpreter runs, read past its own options (-u, -X dev, -W ignore): code given
// by -c, a module by -m, or a script. `from` is the command line from the module or script on
// ("torch.distributed.run --nproc_per_node 2 x.py", "train.py --lr 0.1"); empty for -c.
struct PythonMain {
  enum class Kind { kNone, kCode, kModule, kScript };
  Kind kind = Kind::kNone;
  std::string_view from;
};

// kNone for a process that is not Python, or one that runs nothing (`python3 -u`: a REPL).
PythonMain python_main(const store::ProcessRecord& proc);

// "launcher", "rank 1", "worker 0 of rank 1", "program of rank 1", "other"
std::string describe(const ProcessRole& role);

// One entry per process, in the same order as `processes`.
std::vector<ProcessRole> assign_roles(const std::vector<store::ProcessRecord>& processes,
                                      int root_pid);

}  // namespace traindoc::analysis
