// The run.db schema: its DDL, its identity (meta table, PRAGMA user_version) and the check that a
// file is a run.db this build understands. Used by the writer (supervisor) and the reader
// (analyze, report). docs/run-db.md documents every table; keep the two in step.
#pragma once

#include <sqlite3.h>

#include <string>

namespace traindoc::store::schema {

// meta.format: tells a run.db from any other SQLite file.
inline constexpr const char* kFormat = "traindoc.run-db";

// Meta keys beyond format and schema_version.
inline constexpr const char* kMetaWriter = "writer";
inline constexpr const char* kMetaJournalMode = "journal_mode";
inline constexpr const char* kMetaThinnedUntil = "samples_thinned_until_ns";
inline constexpr const char* kMetaFullRateWindow = "full_rate_window_ns";
inline constexpr const char* kMetaBucket = "bucket_ns";
inline constexpr const char* kMetaMaxEvents = "max_events_per_kind";
// Followed by the event kind: "events_dropped:log-line".
inline constexpr const char* kMetaEventsDroppedPrefix = "events_dropped:";

enum class State {
  kEmpty,    // a new or zero-length file: no tables, user_version 0
  kCurrent,  // a run.db of kSchemaVersion
};

// Throws StoreError naming `path` when the file is not a SQLite database, is corrupt, is some
// other SQLite database, or has a schema version this build does not know.
State check(sqlite3* db, const std::string& path);

// Creates every table and index and the meta rows, in the caller's transaction.
void create(sqlite3* db);

}  // namespace traindoc::store::schema
