// The preflight table of run.db (schema 14: preflight_checks): its DDL, the writer and the
// reader. Internal to src/store: StoreWriter and read_evidence call it; docs/run-db.md documents
// the table.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <vector>

#include "store/preflight.h"

namespace traindoc::store::detail {

// What schema 14 adds; tests/fixtures/store/schema_v14.sql holds schema 13 plus this.
extern const char* const kPreflightDdl;

// The traps the checks found at the run's start, at `t_ns`, in their order.
void write_preflight(sqlite3* db, int64_t t_ns, const std::vector<PreflightResult>& results);

// Reads a file of schema 14 or newer; a row of a check or verdict this build does not know (a
// newer traindoc's) is left out.
// `t_ns`: when they were found (0 when none were).
void read_preflight(sqlite3* db, std::vector<PreflightResult>& out, int64_t& t_ns);

}  // namespace traindoc::store::detail
