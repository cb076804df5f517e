// The crash tables of run.db (crashes, crash_frames, crash_inlined): the writer's prepared
// statements and its cap on stored crashes. Internal to src/store: StoreWriter calls it;
// schema.cpp holds the DDL, docs/run-db.md documents the tables.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <vector>

#include "store/evidence.h"
#include "store/sqlite_util.h"

namespace traindoc::store::detail {

// The writer's side: statements prepared once, used by the supervisor's thread when an agent
// records a crash and again when its frames are symbolized.
class CrashTables {
 public:
  CrashTables() = default;
  // Counts the crashes the file holds already: reopening appends under the same cap.
  explicit CrashTables(sqlite3* db);

  // Inserts, or replaces whole (frames included) the crash of the same (pid, start_ticks). False
  // when the crash is a new one and the table holds `max_rows` already (the caller counts the
  // drop).
  bool write(const Crash& crash, int64_t max_rows);

 private:
  void insert_frames(int64_t crash_id, const std::vector<NativeFrame>& frames);

  Statement m_find;
  Statement m_replace;
  Statement m_delete_frames;
  Statement m_delete_inlined;
  Statement m_insert_frame;
  Statement m_insert_inlined;
  int64_t m_crashes = 0;  // rows in crashes
  sqlite3* m_db = nullptr;
};

}  // namespace traindoc::store::detail
