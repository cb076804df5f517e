// The allocator tables of run.db (schema 15: allocator_states, allocation_sites): their DDL,
// the writer and the reader. Internal to src/store: StoreWriter and read_evidence call them;
// docs/run-db.md documents the tables.
#pragma once

#include <sqlite3.h>

#include <vector>

#include "store/allocator_state.h"

namespace traindoc::store::detail {

// What schema 15 adds; tests/fixtures/store/schema_v15.sql holds schema 14 plus this.
extern const char* const kAllocatorDdl;

void write_allocator_state(sqlite3* db, const AllocatorState& state);

// Reads a file of schema 15 or newer, in time order.
void read_allocator_states(sqlite3* db, std::vector<AllocatorState>& out);

}  // namespace traindoc::store::detail
