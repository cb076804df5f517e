// What the agent's collective recorders share, in every job process (LD_PRELOAD): the Python
// hook's entry points (collective_abi.cpp) and the NCCL interposers (nccl_hooks.cpp). Called
// from the job's own threads inside a collective call; lock-free, no allocation.
#pragma once

#include <cstdint>

#include "common/layout.h"

namespace traindoc::agent {

// This rank's next call index in `group` (1, 2, ...), counted per group across threads; 0 when
// the fixed table of groups is full.
uint64_t next_collective_number(uint64_t group);

// Stamps the time and appends `record` to this process's collective ring; does nothing without
// a slot.
void write_collective(common::CollectiveCall& call);

// Appends the exit record of call `number` in `group`.
void write_collective_exit(uint64_t group, uint64_t number, common::CollectiveSource source);

// The 64-bit FNV-1a hash, for group identities built from bytes (NCCL unique ids, splits).
uint64_t identity_hash(const void* data, uint64_t size, uint64_t seed = 0);

}  // namespace traindoc::agent
