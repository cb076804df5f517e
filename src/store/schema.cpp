// The run.db schema: its DDL, its identity (meta table, PRAGMA user_version) and the check that a
// file is a run.db this build understands. Used by the writer (supervisor) and the reader
// (analyze, report). docs/run-db.md documents every table; keep the two in step.
#include "store/schema.h"

#include <string>

#include "store/allocator_tables.h"
#include "store/cgroup_tables.h"
#include "store/evidence.h"
#include "store/gpu_tables.h"
#include "store/preflight_tables.h"
#include "store/sqlite_util.h"

namespace traindoc::store::schema {

namespace {

// Units: bytes for memory, ns since the Unix epoch for times, clock ticks since boot for
// start_ticks (/proc/<pid>/stat field 22). Booleans are 0/1. NULL means "not measured".
// Schema 1, frozen: tests/fixtures/store/schema_v1.sql holds these same statements.
constexpr const char* kDdlV1 = R"sql(
CREATE TABLE meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE run (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  hostname TEXT NOT NULL,
  version TEXT NOT NULL,
  supervisor_pid INTEGER NOT NULL,
  root_pid INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  exit_code INTEGER,
  exit_signal INTEGER,
  exec_error TEXT NOT NULL
);
CREATE TABLE run_args (
  position INTEGER PRIMARY KEY,
  arg TEXT NOT NULL
);
CREATE TABLE processes (
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  argv0 TEXT NOT NULL,
  cmdline TEXT NOT NULL,
  rank INTEGER,
  local_rank INTEGER,
  world_size INTEGER,
  node_rank INTEGER,
  rank_source TEXT NOT NULL,
  agent INTEGER NOT NULL,
  forked INTEGER NOT NULL,
  end_source TEXT NOT NULL,
  exit_code INTEGER,
  exit_signal INTEGER,
  core_dumped INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  PRIMARY KEY (pid, start_ticks)
);
CREATE TABLE proc_samples (
  t_ns INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  rss INTEGER NOT NULL,
  swap INTEGER NOT NULL,
  pss INTEGER,
  uss INTEGER,
  threads INTEGER NOT NULL,
  fds INTEGER,
  fd_limit INTEGER,
  cpu_user_s REAL NOT NULL,
  cpu_sys_s REAL NOT NULL
);
CREATE INDEX proc_samples_by_time ON proc_samples (t_ns);
CREATE TABLE host_samples (
  t_ns INTEGER NOT NULL,
  mem_total INTEGER NOT NULL,
  mem_available INTEGER NOT NULL,
  swap_total INTEGER NOT NULL,
  swap_free INTEGER NOT NULL,
  cgroup_version INTEGER NOT NULL,
  cgroup_current INTEGER,
  cgroup_max INTEGER,
  cgroup_oom_kills INTEGER,
  shm_total INTEGER,
  shm_used INTEGER
);
CREATE INDEX host_samples_by_time ON host_samples (t_ns);
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  t_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  pid INTEGER NOT NULL,
  text TEXT NOT NULL
);
CREATE INDEX events_by_kind ON events (kind, id);
CREATE TABLE logs (
  name TEXT PRIMARY KEY,
  bytes INTEGER NOT NULL,
  lines INTEGER NOT NULL,
  bytes_not_kept INTEGER NOT NULL
);
CREATE TABLE log_files (
  stream TEXT NOT NULL,
  position INTEGER NOT NULL,
  path TEXT NOT NULL,
  PRIMARY KEY (stream, position)
);
)sql";

// What schema 2 adds: crashes with their native frames, and the log lines worth citing.
// Addresses are stored bit for bit (above 2^63 they show negative in SQL); texts are never NULL,
// "" means "unknown" or "none". tests/fixtures/store/schema_v2.sql holds schema 1 plus these.
constexpr const char* kDdlV2 = R"sql(
CREATE TABLE crashes (
  id INTEGER PRIMARY KEY,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  tid INTEGER NOT NULL,
  thread_name TEXT NOT NULL,
  signo INTEGER NOT NULL,
  code INTEGER NOT NULL,
  fault_addr INTEGER NOT NULL,
  sender_pid INTEGER NOT NULL,
  time_ns INTEGER NOT NULL,
  pc INTEGER NOT NULL,
  sp INTEGER NOT NULL,
  fp INTEGER NOT NULL,
  stack_lo INTEGER NOT NULL,
  stack_hi INTEGER NOT NULL,
  other_crashes INTEGER NOT NULL,
  maps TEXT NOT NULL,
  code_bytes TEXT NOT NULL,
  python_traceback TEXT NOT NULL,
  python_note TEXT NOT NULL,
  UNIQUE (pid, start_ticks)
);
CREATE TABLE crash_frames (
  crash_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  address INTEGER NOT NULL,
  module TEXT NOT NULL,
  module_offset INTEGER NOT NULL,
  function TEXT NOT NULL,
  function_offset INTEGER NOT NULL,
  file TEXT NOT NULL,
  line INTEGER NOT NULL,
  PRIMARY KEY (crash_id, position)
);
CREATE TABLE crash_inlined (
  crash_id INTEGER NOT NULL,
  frame INTEGER NOT NULL,
  position INTEGER NOT NULL,
  function TEXT NOT NULL,
  PRIMARY KEY (crash_id, frame, position)
);
CREATE TABLE log_lines (
  id INTEGER PRIMARY KEY,
  t_ns INTEGER NOT NULL,
  stream TEXT NOT NULL,
  number INTEGER NOT NULL,
  text TEXT NOT NULL
);
CREATE INDEX log_lines_by_time ON log_lines (t_ns);
CREATE INDEX log_lines_by_stream ON log_lines (stream, id);
)sql";

// What schema 3 adds (with the GPU tables of gpu_tables.cpp): the training steps the Python hook
// counted, one row per process and kind per sampling interval at most (thinned like the samples);
// collective calls (a bounded sample) and what the supervisor's collective checker found, with
// each rank's part ("group_id" is the group's 64-bit identity, bit for bit).
// tests/fixtures/store/schema_v3.sql holds schema 2 plus these.
constexpr const char* kDdlV3 = R"sql(
CREATE TABLE step_samples (
  t_ns INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  kind TEXT NOT NULL,
  count INTEGER NOT NULL
);
CREATE INDEX step_samples_by_time ON step_samples (t_ns);
CREATE TABLE collectives (
  id INTEGER PRIMARY KEY,
  t_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  group_id INTEGER NOT NULL,
  number INTEGER NOT NULL,
  group_rank INTEGER NOT NULL,
  group_size INTEGER NOT NULL,
  source TEXT NOT NULL,
  op TEXT NOT NULL,
  dtype TEXT NOT NULL,
  count INTEGER NOT NULL,
  tensors TEXT NOT NULL,
  redop TEXT NOT NULL,
  peer INTEGER NOT NULL,
  site TEXT NOT NULL,
  step INTEGER NOT NULL,
  async INTEGER NOT NULL
);
CREATE INDEX collectives_by_group ON collectives (group_id, number);
CREATE TABLE collective_issues (
  id INTEGER PRIMARY KEY,
  t_ns INTEGER NOT NULL,
  first_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  group_id INTEGER NOT NULL,
  number INTEGER NOT NULL,
  op TEXT NOT NULL,
  field TEXT NOT NULL,
  message TEXT NOT NULL,
  aborted INTEGER NOT NULL
);
CREATE TABLE collective_issue_ranks (
  issue_id INTEGER NOT NULL,
  position INTEGER NOT NULL,
  group_rank INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL,
  value TEXT NOT NULL,
  site TEXT NOT NULL,
  state TEXT NOT NULL,
  last_call TEXT NOT NULL,
  calls INTEGER NOT NULL,
  stack TEXT NOT NULL,
  PRIMARY KEY (issue_id, position)
);
)sql";

// Schema 5: what the job's code passed to init_process_group, beside what the launcher set, and
// the number a DataLoader gave its worker. tests/fixtures/store/schema_v5.sql holds schema 4 plus
// these.
constexpr const char* kDdlV5 = R"sql(
ALTER TABLE processes ADD COLUMN init_rank INTEGER;
ALTER TABLE processes ADD COLUMN init_world_size INTEGER;
ALTER TABLE processes ADD COLUMN worker_id INTEGER;
)sql";

// Schema 6: of each process sample's RSS, the pages of mapped files. tests/fixtures/store/
// schema_v6.sql holds schema 5 plus this.
constexpr const char* kDdlV6 = R"sql(
ALTER TABLE proc_samples ADD COLUMN rss_file INTEGER;
)sql";

// Schema 13: each process sample's VmHWM, the peak of its rss so far (`traindoc fit` measures a
// batch by it). tests/fixtures/store/schema_v13.sql holds schema 12 plus this.
constexpr const char* kDdlV13 = R"sql(
ALTER TABLE proc_samples ADD COLUMN rss_peak INTEGER;
)sql";

// Schema 7: the job processes that wrote a stream of the `logs` table, for a file their stdout or
// stderr was. tests/fixtures/store/schema_v7.sql holds schema 6 plus this.
constexpr const char* kDdlV7 = R"sql(
CREATE TABLE log_writers (
  stream TEXT NOT NULL,
  pid INTEGER NOT NULL,
  fd INTEGER NOT NULL,
  t_ns INTEGER NOT NULL,
  PRIMARY KEY (stream, pid, fd)
);
)sql";

// Schema 8: a call that raised (gave up waiting) rather than returned. tests/fixtures/store/
// schema_v8.sql holds schema 7 plus this.
constexpr const char* kDdlV8 = R"sql(
ALTER TABLE collectives ADD COLUMN raised INTEGER;
)sql";

// Schema 9: an event's numbers as numbers (event_kind.h), where a rule parsed them from its text.
// tests/fixtures/store/schema_v9.sql holds schema 8 plus this.
constexpr const char* kDdlV9 = R"sql(
ALTER TABLE events ADD COLUMN a INTEGER;
ALTER TABLE events ADD COLUMN b INTEGER;
)sql";

// Schema 10: a collective issue's facts, which schemas 3 to 9 held only in words (message, and
// each rank's state). Rows of an older file keep NULL in these columns; the reader makes their
// facts from the words (collective_words_v9.h). tests/fixtures/store/schema_v10.sql holds schema
// 9 plus this.
constexpr const char* kDdlV10 = R"sql(
ALTER TABLE collective_issues ADD COLUMN group_size INTEGER;
ALTER TABLE collective_issues ADD COLUMN default_group INTEGER;
ALTER TABLE collective_issues ADD COLUMN pair INTEGER;
ALTER TABLE collective_issues ADD COLUMN wait_end TEXT;
ALTER TABLE collective_issues ADD COLUMN wait_end_rank INTEGER;
ALTER TABLE collective_issues ADD COLUMN alone INTEGER;
ALTER TABLE collective_issues ADD COLUMN waited_ns INTEGER;
ALTER TABLE collective_issues ADD COLUMN quiet_ns INTEGER;
ALTER TABLE collective_issues ADD COLUMN sites_differed_at INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN status TEXT;
ALTER TABLE collective_issue_ranks ADD COLUMN job_rank INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN odd INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN op TEXT;
ALTER TABLE collective_issue_ranks ADD COLUMN peer INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN late_ns INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN ended INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN exit_code INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN exit_signal INTEGER;
ALTER TABLE collective_issue_ranks ADD COLUMN finished INTEGER;
)sql";

// Schema 11: who sent a stop signal that traindoc passed on, which schema 10 held only in words
// (the event's text). tests/fixtures/store/schema_v11.sql holds schema 10 plus this.
constexpr const char* kDdlV11 = R"sql(
ALTER TABLE events ADD COLUMN c INTEGER;
ALTER TABLE events ADD COLUMN name TEXT;
)sql";

// The words schemas 1 to 8 wrote ("label 255, 19 classes", "process group 4240"), and a
// signal-forwarded event's up to schema 9 ("SIGTERM from pid 4242 (slurmstepd), passed on to 3
// process(es)", "SIGKILL at the second interrupt, sent to 3 process(es)", "SIGINT, sent to 2
// process(es)"); CAST reads the number that starts its text.
constexpr const char* kEventA = R"sql(CASE
  WHEN kind = 'label-out-of-range' AND text GLOB 'label [0-9-]*, [0-9]* classes'
    THEN CAST(substr(text, 7) AS INTEGER)
  WHEN kind = 'kill-sent' AND text GLOB 'pid [0-9]*' THEN CAST(substr(text, 5) AS INTEGER)
  WHEN kind = 'kill-sent' AND text GLOB 'process group [0-9]*' THEN -CAST(substr(text, 15) AS INTEGER)
  WHEN kind = 'kill-sent' AND text = 'its own process group' THEN 0
  WHEN kind = 'kill-sent' AND text = 'every process it may signal' THEN -1
  WHEN kind = 'signal-forwarded' AND text GLOB 'SIGHUP[ ,]*' THEN 1
  WHEN kind = 'signal-forwarded' AND text GLOB 'SIGINT[ ,]*' THEN 2
  WHEN kind = 'signal-forwarded' AND text GLOB 'SIGQUIT[ ,]*' THEN 3
  WHEN kind = 'signal-forwarded' AND text GLOB 'SIGKILL[ ,]*' THEN 9
  WHEN kind = 'signal-forwarded' AND text GLOB 'SIGTERM[ ,]*' THEN 15
END)sql";
constexpr const char* kEventB = R"sql(CASE
  WHEN kind = 'label-out-of-range' AND text GLOB 'label [0-9-]*, [0-9]* classes'
    THEN CAST(substr(text, instr(text, ', ') + 2) AS INTEGER)
  WHEN kind = 'signal-forwarded' AND text GLOB '*, passed on to [0-9]* process(es)*'
    THEN CAST(substr(text, instr(text, ', passed on to ') + 15) AS INTEGER)
  WHEN kind = 'signal-forwarded' AND text GLOB '*, sent to [0-9]* process(es)'
    THEN CAST(substr(text, instr(text, ', sent to ') + 10) AS INTEGER)
END)sql";
// A signal-forwarded event's sender up to schema 10, in the words of store/forwarded_signal.h:
// "... from the terminal, ..." (si_code SI_KERNEL, 128), "... from pid 4242 (slurmstepd), passed
// on ...", "... from pid 4242, passed on ..." (gone), "... from a process outside ..." (kill(),
// SI_USER, 0). Older words name no sender.
constexpr const char* kEventC = R"sql(CASE
  WHEN kind != 'signal-forwarded' THEN NULL
  WHEN text GLOB 'SIG* from the terminal, *' THEN 128
  WHEN text GLOB 'SIG* from pid [0-9]*, passed on to *' OR text GLOB 'SIG* from a process outside *'
    THEN 0
END)sql";
constexpr const char* kEventName = R"sql(CASE
  WHEN kind = 'signal-forwarded' AND text GLOB 'SIG* from pid [0-9]* (*), passed on to *'
    THEN substr(text, instr(text, ' (') + 2,
                instr(text, '), passed on to ') - instr(text, ' (') - 2)
END)sql";

void set_version(sqlite3* db) {
  detail::Statement meta(db,
                         "INSERT INTO meta (key, value) VALUES ('schema_version', ?1) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  meta.bind(1, std::to_string(kSchemaVersion)).run();
  // PRAGMA takes no bound parameters; the value is our own constant.
  detail::exec(db, ("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
}

// Reads one integer; on failure returns false with `error` set from SQLite's message, taken before
// finalize so that the reason (e.g. "file is not a database") is not lost.
bool probe_int(sqlite3* db, const char* sql, int64_t& value, std::string& error) {
  sqlite3_stmt* statement = nullptr;
  const bool ok = sqlite3_prepare_v2(db, sql, -1, &statement, nullptr) == SQLITE_OK &&
                  sqlite3_step(statement) == SQLITE_ROW;
  if (ok) {
    value = sqlite3_column_int64(statement, 0);
  } else {
    error = sqlite3_errmsg(db);
  }
  sqlite3_finalize(statement);
  return ok;
}

}  // namespace

State check(sqlite3* db, const std::string& path) {
  // The first read of the file: a non-database or a damaged header fails here.
  int64_t tables = 0;
  int64_t version = 0;
  std::string error;
  if (!probe_int(db, "SELECT count(*) FROM sqlite_master", tables, error) ||
      !probe_int(db, "PRAGMA user_version", version, error)) {
    throw StoreError("run database '" + path + "': not a readable SQLite database: " + error);
  }
  if (tables == 0 && version == 0) return State::kEmpty;

  const std::string not_ours = "run database '" + path + "': not a traindoc run database";
  detail::Statement has_meta(
      db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!has_meta.step() || has_meta.int64(0) == 0) throw StoreError(not_ours + " (no meta table)");
  detail::Statement format(db, "SELECT value FROM meta WHERE key = 'format'");
  if (!format.step() || format.text(0) != kFormat) {
    throw StoreError(not_ours + " (meta.format is not '" + kFormat + "')");
  }
  if (version > kSchemaVersion) {
    throw StoreError("run database '" + path + "': written by a newer traindoc (schema version " +
                     std::to_string(version) + ", this traindoc reads up to " +
                     std::to_string(kSchemaVersion) + "); analyze it with that version");
  }
  if (version < 1) {
    throw StoreError("run database '" + path + "': unknown schema version " +
                     std::to_string(version));
  }
  return version < kSchemaVersion ? State::kOlder : State::kCurrent;
}

std::string event_facts(int64_t version) {
  const std::string older = std::string(", ") + kEventC + ", " + kEventName;
  if (version < 9) return std::string(kEventA) + ", " + kEventB + older;
  if (version < 11) {
    return std::string("coalesce(a, ") + kEventA + "), coalesce(b, " + kEventB + ")" + older;
  }
  return "a, b, c, name";
}

void create(sqlite3* db) {
  detail::exec(db, kDdlV1);
  detail::exec(db, kDdlV2);
  detail::exec(db, kDdlV3);
  detail::exec(db, detail::kGpuDdl);
  detail::exec(db, detail::kGpuDdlV4);
  detail::exec(db, kDdlV5);
  detail::exec(db, kDdlV6);
  detail::exec(db, kDdlV7);
  detail::exec(db, kDdlV8);
  detail::exec(db, kDdlV9);
  detail::exec(db, kDdlV10);
  detail::exec(db, kDdlV11);
  detail::exec(db, detail::kCgroupDdl);
  detail::exec(db, kDdlV13);
  detail::exec(db, detail::kPreflightDdl);
  detail::exec(db, detail::kAllocatorDdl);
  detail::Statement meta(db, "INSERT INTO meta (key, value) VALUES (?1, ?2)");
  meta.bind(1, "format").bind(2, kFormat).run();
  set_version(db);
}

void upgrade(sqlite3* db) {
  const int64_t version = detail::query_int(db, "PRAGMA user_version");
  if (version >= kSchemaVersion) return;
  if (version < 2) detail::exec(db, kDdlV2);
  if (version < 3) detail::exec(db, kDdlV3);
  if (version < 3) detail::exec(db, detail::kGpuDdl);
  if (version < 4) detail::exec(db, detail::kGpuDdlV4);
  if (version < 5) detail::exec(db, kDdlV5);
  if (version < 6) detail::exec(db, kDdlV6);
  if (version < 7) detail::exec(db, kDdlV7);
  if (version < 8) detail::exec(db, kDdlV8);
  if (version < 9) detail::exec(db, kDdlV9);
  if (version < 10) detail::exec(db, kDdlV10);
  if (version < 11) detail::exec(db, kDdlV11);
  if (version < 12) detail::exec(db, detail::kCgroupDdl);
  if (version < 13) detail::exec(db, kDdlV13);
  if (version < 14) detail::exec(db, detail::kPreflightDdl);
  if (version < 15) detail::exec(db, detail::kAllocatorDdl);
  // The facts an older traindoc wrote only in words; a row that has its numbers keeps them.
  detail::exec(db, ("UPDATE events SET (a, b, c, name) = (" + event_facts(10) + ")").c_str());
  set_version(db);
}

}  // namespace traindoc::store::schema
