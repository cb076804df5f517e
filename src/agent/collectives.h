// What the agent's collective recorders share, in every job process (LD_PRELOAD): the Python
// hook's entry points (collective_abi.cpp) and the NCCL interposers (nccl_hooks.cpp). Called
// from the job's own threads inside a collective call; lock-free, no allocation.
#pragma once

#include <cstdint>

#include "common/layout.h"

namespace traindoc::agent {

// Appends the enter record of `call` from `source`, numbered in its group (unless `numbered` is
// false: lifetime events) and stamped with the time, straight into this process's collective
// ring (one copy); returns the number (0: unnumbered). Without a slot it only numbers it.
uint64_t write_collective_enter(const common::CollectiveCall& call, common::CollectiveSource source,
                                bool numbered = true);

// Appends the exit record of call `number` of `call`'s group: only the fields the reader uses
// for an exit (group, rank, number, time, event, source) are written.
void write_collective_exit(const common::CollectiveCall& call, uint64_t number);

// The 64-bit FNV-1a hash, for group identities built from bytes (NCCL unique ids, splits).
uint64_t identity_hash(const void* data, uint64_t size, uint64_t seed = 0);

}  // namespace traindoc::agent
