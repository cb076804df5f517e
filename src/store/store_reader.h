// read_evidence: loads a whole run.db into the evidence model.
// Used by `traindoc analyze` and the report, after the run or while a supervisor still writes it
// (WAL: the reader sees the last flush), and after a crash of the supervisor.
#pragma once

#include <string>

#include "store/evidence.h"
#include "store/store_error.h"

namespace traindoc::store {

// Throws StoreError naming the file when it is missing, not a SQLite database, corrupt, not a
// traindoc run.db, or of a newer schema. Never changes the evidence it reads: at most SQLite
// rebuilds the WAL index (-shm) left by a killed writer.
Evidence read_evidence(const std::string& db_path);

}  // namespace traindoc::store
