// Rank, local rank, world size and node from the environment variables launchers set.
// Used by the agent at start-up (getenv) and by the supervisor on /proc/<pid>/environ.
// Header-only, no allocation: the caller supplies the lookup.
#pragma once

#include <cstdint>
#include <cstdlib>

#include "common/layout.h"

namespace traindoc::common {

struct RankEnv {
  RankSource source = RankSource::kNone;
  int32_t rank = -1;
  int32_t local_rank = -1;
  int32_t world_size = -1;
  int32_t node_rank = -1;
  int32_t local_world_size = -1;  // the ranks on this machine
  int32_t nodes = -1;             // the machines of the launch (Slurm says it, not the ranks)

  // Some of the world's ranks run on other machines.
  bool spans_machines() const {
    return (local_world_size > 0 && world_size > local_world_size) || nodes > 1;
  }
};

struct RankVars {
  RankSource source;
  const char* rank;
  const char* local_rank;
  const char* world_size;
  const char* node_rank;
  const char* local_world_size;
  const char* nodes;
};

// In order of precedence: torchrun under srun or mpirun sets RANK below the launcher's own
// variables, and the innermost launcher is the one that names the training rank.
inline constexpr RankVars kRankVars[] = {
    {RankSource::kTorch, "RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE",
     nullptr},
    {RankSource::kOpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_NODE_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", nullptr},
    {RankSource::kPmi, "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", nullptr, "MPI_LOCALNRANKS",
     nullptr},
    {RankSource::kSlurm, "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_NODEID", nullptr,
     "SLURM_STEP_NUM_NODES"},
};

inline const char* rank_source_name(RankSource source) {
  switch (source) {
    case RankSource::kTorch:
      return "torch";
    case RankSource::kOpenMpi:
      return "openmpi";
    case RankSource::kPmi:
      return "pmi";
    case RankSource::kSlurm:
      return "slurm";
    case RankSource::kProcessGroup:
      return "process-group";
    case RankSource::kSpawn:
      return "spawn";
    case RankSource::kNone:
      break;
  }
  return "";
}

// The source of that name (rank_source_name's), kNone for a name of none.
inline RankSource rank_source_named(std::string_view name) {
  for (RankSource source : {RankSource::kTorch, RankSource::kOpenMpi, RankSource::kPmi,
                            RankSource::kSlurm, RankSource::kProcessGroup, RankSource::kSpawn}) {
    if (name == rank_source_name(source)) return source;
  }
  return RankSource::kNone;
}

// A non-negative decimal, or -1. Async-signal-safe.
inline int32_t parse_rank_number(const char* text) {
  if (text == nullptr || *text == '\0') return -1;
  int64_t value = 0;
  for (const char* p = text; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return -1;
    value = value * 10 + (*p - '0');
    if (value > INT32_MAX) return -1;
  }
  return static_cast<int32_t>(value);
}

// Lookup: const char* (const char* name), returning nullptr when unset.
template <typename Lookup>
RankEnv read_rank_env(Lookup&& lookup) {
  RankEnv env;
  for (const RankVars& vars : kRankVars) {
    int32_t rank = parse_rank_number(lookup(vars.rank));
    if (rank < 0) continue;
    env.source = vars.source;
    env.rank = rank;
    env.local_rank = parse_rank_number(lookup(vars.local_rank));
    env.world_size = parse_rank_number(lookup(vars.world_size));
    env.node_rank = vars.node_rank ? parse_rank_number(lookup(vars.node_rank)) : -1;
    if (vars.local_world_size)
      env.local_world_size = parse_rank_number(lookup(vars.local_world_size));
    if (vars.nodes) env.nodes = parse_rank_number(lookup(vars.nodes));
    break;
  }
  return env;
}

}  // namespace traindoc::common
