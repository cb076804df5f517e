// The run.db schema: its DDL, its identity (meta table, PRAGMA user_version) and the check that a
// file is a run.db this build understands. Used by the writer (supervisor) and the reader
// (analyze, report). docs/run-db.md documents every table; keep the two in step.
#pragma once

#include <sqlite3.h>

#include <cstdint>
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
// Schema 2.
inline constexpr const char* kMetaMaxLogLines = "max_log_lines_per_stream";
inline constexpr const char* kMetaLogLinesKeptFirst = "log_lines_kept_first";
inline constexpr const char* kMetaMaxCrashes = "max_crashes";
// Followed by the stream: "log_lines_dropped:stderr".
inline constexpr const char* kMetaLogLinesDroppedPrefix = "log_lines_dropped:";
inline constexpr const char* kMetaCrashesDropped = "crashes_dropped";
// Schema 3.
inline constexpr const char* kMetaGpuEventsDropped = "gpu_events_dropped";
inline constexpr const char* kMetaMaxCollectives = "max_collectives";
inline constexpr const char* kMetaCollectivesDropped = "collectives_dropped";
// Schema 12.
inline constexpr const char* kMetaOomKillsDropped = "kernel_oom_kills_dropped";

enum class State {
  kEmpty,    // a new or zero-length file: no tables, user_version 0
  kOlder,    // a run.db of an older schema this build still reads (1 .. kSchemaVersion - 1)
  kCurrent,  // a run.db of kSchemaVersion
};

// Throws StoreError naming `path` when the file is not a SQLite database, is corrupt, is some
// other SQLite database, or has a schema version this build does not know.
State check(sqlite3* db, const std::string& path);

// Creates every table and index and the meta rows, in the caller's transaction.
void create(sqlite3* db);

// An event's a, b, c and name (event_kind.h) as an SQL select list for a file of schema
// `version`: its columns, and where they are NULL or missing the words that held them before
// (every event's numbers before schema 9, a signal-forwarded event's sender before 11). How an
// older file is read, and how its upgrade fills the columns.
std::string event_facts(int64_t version);

// Brings a run.db of an older schema (State::kOlder) to kSchemaVersion, in the caller's
// transaction: every change so far only adds tables and columns, so the rows already there stay as
// they are (the event columns of schemas 9 and 11 are filled from the texts; schema 10 leaves a
// collective issue's new columns NULL, and the reader makes those facts from the words).
// A file created by create() and one upgraded from an older version have the same schema.
void upgrade(sqlite3* db);

}  // namespace traindoc::store::schema
