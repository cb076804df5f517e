// read_evidence: loads a whole run.db into the evidence model, in one read snapshot.
// Used by `traindoc analyze` and the report, possibly while a supervisor writes the file or after
// one was killed; the file is outside input, so every failure is a StoreError, never a crash.
#include "store/store_reader.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/rank_env.h"
#include "store/allocator_tables.h"
#include "store/cgroup_tables.h"
#include "store/collective_words_v9.h"
#include "store/gpu_tables.h"
#include "store/preflight_tables.h"
#include "store/schema.h"
#include "store/sqlite_util.h"

namespace traindoc::store {

using detail::DbHandle;
using detail::Statement;

namespace {

constexpr int kBusyTimeoutMs = 5000;

struct OpenResult {
  DbHandle db;
  int error_code = SQLITE_OK;
  std::string message;
};

// Opens and reads the schema once, which is when SQLite first touches the WAL and its index.
OpenResult try_open(const std::string& target, int flags, bool wal_holds_commits) {
  OpenResult result;
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(target.c_str(), &raw, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  result.db.reset(raw);
  sqlite3* db = raw;
  if (rc != SQLITE_OK) {
    result.error_code = db ? sqlite3_extended_errcode(db) : rc;
    result.message = detail::reason(db);
    result.db.reset();
    return result;
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // The file may come from anywhere: no schema-defined functions or views run with our rights.
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  // The last connection to close checkpoints the WAL into the main file and deletes it: reading
  // must leave evidence files as they were, so only a WAL with nothing in it may go (as the
  // one SQLite makes for this very read of a finished run, which would otherwise stay behind).
  if (wal_holds_commits) sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_exec(db, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
  // Catches damaged b-tree pages early instead of reading nonsense from them.
  sqlite3_exec(db, "PRAGMA cell_size_check = 1", nullptr, nullptr, nullptr);

  sqlite3_stmt* probe = nullptr;
  const bool ok = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &probe,
                                     nullptr) == SQLITE_OK &&
                  sqlite3_step(probe) == SQLITE_ROW;
  if (!ok) {
    result.error_code = sqlite3_extended_errcode(db);
    result.message = detail::reason(db);
  }
  sqlite3_finalize(probe);
  if (!ok) result.db.reset();
  return result;
}

// Errors that a less demanding open mode may avoid: no write access to the file, the folder,
// or the WAL index.
bool worth_another_mode(int error_code) {
  switch (error_code & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_IOERR:
      return true;
    default:
      return false;
  }
}

std::string immutable_uri(const std::string& path) {
  std::string uri = "file:";
  constexpr std::string_view kHex = "0123456789ABCDEF";
  for (const char c : path) {
    const auto byte = static_cast<unsigned char>(c);
    const bool plain = (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                       (byte >= '0' && byte <= '9') || c == '/' || c == '.' || c == '-' ||
                       c == '_' || c == '~';
    if (plain) {
      uri += c;
    } else {
      uri += '%';
      uri += kHex[byte >> 4];
      uri += kHex[byte & 0xf];
    }
  }
  return uri + "?immutable=1";
}

// Read-write first: after a kill -9 of the writer, SQLite must rebuild the WAL index, which
// needs write access to the -shm file. Read-only next (a folder we may not write). Immutable
// last: it ignores the WAL (and so the commits not yet checkpointed) but opens anything.
DbHandle open_for_reading(const std::string& path) {
  std::error_code no_wal;
  const bool wal_holds_commits = std::filesystem::file_size(path + "-wal", no_wal) > 0 && !no_wal;
  OpenResult first = try_open(path, SQLITE_OPEN_READWRITE, wal_holds_commits);
  if (first.db) return std::move(first.db);
  const auto fail = [&path](const OpenResult& result) {
    const bool cannot_open = (result.error_code & 0xff) == SQLITE_CANTOPEN;
    throw StoreError("run database '" + path +
                     "': " + (cannot_open ? "cannot open: " : "not a readable SQLite database: ") +
                     result.message);
  };
  if (!worth_another_mode(first.error_code)) fail(first);
  OpenResult read_only = try_open(path, SQLITE_OPEN_READONLY, wal_holds_commits);
  if (read_only.db) return std::move(read_only.db);
  if (!worth_another_mode(read_only.error_code)) fail(read_only);
  OpenResult immutable =
      try_open(immutable_uri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, wal_holds_commits);
  if (immutable.db) return std::move(immutable.db);
  fail(first);
  return nullptr;  // not reached
}

void read_run(sqlite3* db, RunInfo& run) {
  Statement row(db,
                "SELECT hostname, version, supervisor_pid, root_pid, start_ns, end_ns, exit_code, "
                "exit_signal, exec_error FROM run WHERE id = 1");
  if (row.step()) {
    run.hostname = row.text(0);
    run.version = row.text(1);
    run.supervisor_pid = row.int32(2);
    run.root_pid = row.int32(3);
    run.start_ns = row.int64(4);
    run.end_ns = row.int64(5);
    run.exit_code = row.opt_int32(6);
    run.exit_signal = row.opt_int32(7);
    run.exec_error = row.text(8);
  }
  Statement args(db, "SELECT arg FROM run_args ORDER BY position");
  while (args.step()) run.command.push_back(args.text(0));
}

void read_processes(sqlite3* db, int schema_version, std::vector<ProcessRecord>& out) {
  // Schema 4 and older have no init_process_group arguments and no worker numbers: they read as
  // not passed and not told.
  Statement rows(
      db, std::string("SELECT pid, start_ticks, ppid, start_ns, argv0, cmdline, rank, "
                      "local_rank, world_size, node_rank, rank_source, agent, forked, "
                      "end_source, exit_code, exit_signal, core_dumped, end_ns, ") +
              (schema_version >= 5 ? "init_rank, init_world_size, worker_id" : "NULL, NULL, NULL") +
              " FROM processes ORDER BY start_ticks, pid");
  while (rows.step()) {
    ProcessRecord& r = out.emplace_back();
    r.pid = rows.int32(0);
    r.start_ticks = rows.uint64(1);
    r.ppid = rows.int32(2);
    r.start_ns = rows.int64(3);
    r.argv0 = rows.text(4);
    r.cmdline = rows.text(5);
    r.rank = rows.opt_int32(6);
    r.local_rank = rows.opt_int32(7);
    r.world_size = rows.opt_int32(8);
    r.node_rank = rows.opt_int32(9);
    r.rank_source = common::rank_source_named(rows.text(10));
    r.agent = rows.int64(11) != 0;
    r.forked = rows.int64(12) != 0;
    r.end_source = end_source_from_string(rows.text(13));
    r.exit_code = rows.opt_int32(14);
    r.exit_signal = rows.opt_int32(15);
    r.core_dumped = rows.int64(16) != 0;
    r.end_ns = rows.int64(17);
    r.init_rank = rows.opt_int32(18);
    r.init_world_size = rows.opt_int32(19);
    r.worker_id = rows.opt_int32(20);
  }
}

void read_proc_samples(sqlite3* db, int schema_version, std::vector<ProcSample>& out) {
  // Schema 5 and older did not keep the pages of mapped files, 12 and older the peak rss: read
  // as not sampled.
  Statement rows(db,
                 std::string("SELECT t_ns, pid, start_ticks, rss, swap, pss, uss, threads, fds, "
                             "fd_limit, cpu_user_s, cpu_sys_s, ") +
                     (schema_version >= 6 ? "rss_file" : "NULL") + ", " +
                     (schema_version >= 13 ? "rss_peak" : "NULL") +
                     " FROM proc_samples ORDER BY t_ns, rowid");
  while (rows.step()) {
    ProcSample& s = out.emplace_back();
    s.t_ns = rows.int64(0);
    s.pid = rows.int32(1);
    s.start_ticks = rows.uint64(2);
    s.rss = rows.uint64(3);
    s.swap = rows.uint64(4);
    s.pss = rows.opt_uint64(5);
    s.uss = rows.opt_uint64(6);
    s.threads = rows.int32(7);
    s.fds = rows.opt_int32(8);
    s.fd_limit = rows.opt_int32(9);
    s.cpu_user_s = rows.real(10);
    s.cpu_sys_s = rows.real(11);
    s.rss_file = rows.opt_uint64(12);
    s.rss_peak = rows.opt_uint64(13);
  }
}

void read_host_samples(sqlite3* db, std::vector<HostSample>& out) {
  Statement rows(db,
                 "SELECT t_ns, mem_total, mem_available, swap_total, swap_free, cgroup_version, "
                 "cgroup_current, cgroup_max, cgroup_oom_kills, shm_total, shm_used "
                 "FROM host_samples ORDER BY t_ns, rowid");
  while (rows.step()) {
    HostSample& h = out.emplace_back();
    h.t_ns = rows.int64(0);
    h.mem_total = rows.uint64(1);
    h.mem_available = rows.uint64(2);
    h.swap_total = rows.uint64(3);
    h.swap_free = rows.uint64(4);
    h.cgroup_version = rows.int32(5);
    h.cgroup_current = rows.opt_uint64(6);
    h.cgroup_max = rows.opt_uint64(7);
    h.cgroup_oom_kills = rows.opt_uint64(8);
    h.shm_total = rows.opt_uint64(9);
    h.shm_used = rows.opt_uint64(10);
  }
}

void read_events(sqlite3* db, int schema_version, std::vector<Event>& out) {
  Statement rows(db, "SELECT t_ns, kind, pid, text, " + schema::event_facts(schema_version) +
                         " FROM events ORDER BY t_ns, id");
  while (rows.step()) {
    // A kind this build does not know (a run.db of a later version) says nothing it can use.
    std::optional<EventKind> kind = event_kind_named(rows.text(1));
    if (!kind) continue;
    Event& e = out.emplace_back();
    e.t_ns = rows.int64(0);
    e.kind = *kind;
    e.pid = rows.int32(2);
    e.text = rows.text(3);
    e.a = rows.opt_int64(4);
    e.b = rows.opt_int64(5);
    e.c = rows.opt_int64(6);
    e.name = rows.text(7);
  }
}

void read_logs(sqlite3* db, int schema_version, std::vector<LogStream>& out) {
  Statement rows(db, "SELECT name, bytes, lines, bytes_not_kept FROM logs ORDER BY rowid");
  Statement files(db, "SELECT path FROM log_files WHERE stream = ?1 ORDER BY position");
  std::optional<Statement> writers;
  if (schema_version >= 7) {
    writers.emplace(db, "SELECT pid, fd, t_ns FROM log_writers WHERE stream = ?1 ORDER BY t_ns");
  }
  while (rows.step()) {
    LogStream& l = out.emplace_back();
    l.name = rows.text(0);
    l.bytes = rows.uint64(1);
    l.lines = rows.uint64(2);
    l.bytes_not_kept = rows.uint64(3);
    files.bind(1, l.name);
    while (files.step()) l.files.push_back(files.text(0));
    files.reset();
    if (!writers) continue;
    writers->bind(1, l.name);
    while (writers->step()) {
      l.writers.push_back({static_cast<int>(writers->int64(0)), static_cast<int>(writers->int64(1)),
                           writers->int64(2)});
    }
    writers->reset();
  }
}

// Crashes by time, each with its frames and their inlined functions in order. Rows that belong
// to no crash (a damaged file) are skipped; positions need not be contiguous.
void read_crashes(sqlite3* db, std::vector<Crash>& out) {
  Statement rows(db,
                 "SELECT id, pid, start_ticks, tid, thread_name, signo, code, fault_addr, "
                 "sender_pid, time_ns, pc, sp, fp, stack_lo, stack_hi, other_crashes, maps, "
                 "code_bytes, python_traceback, python_note FROM crashes ORDER BY time_ns, id");
  std::unordered_map<int64_t, size_t> by_id;
  while (rows.step()) {
    by_id[rows.int64(0)] = out.size();
    Crash& c = out.emplace_back();
    c.pid = rows.int32(1);
    c.start_ticks = rows.uint64(2);
    c.tid = rows.int32(3);
    c.thread_name = rows.text(4);
    c.signo = rows.int32(5);
    c.code = rows.int32(6);
    c.fault_addr = rows.uint64(7);
    c.sender_pid = rows.int32(8);
    c.time_ns = rows.int64(9);
    c.pc = rows.uint64(10);
    c.sp = rows.uint64(11);
    c.fp = rows.uint64(12);
    c.stack_lo = rows.uint64(13);
    c.stack_hi = rows.uint64(14);
    c.other_crashes = rows.int32(15);
    c.maps = rows.text(16);
    c.code_bytes = rows.text(17);
    c.python_traceback = rows.text(18);
    c.python_note = rows.text(19);
  }
  if (out.empty()) return;

  // The stored position of each frame read, per crash, ascending: where inlined rows go.
  std::vector<std::vector<int64_t>> positions(out.size());
  Statement frames(db,
                   "SELECT crash_id, position, address, module, module_offset, function, "
                   "function_offset, file, line FROM crash_frames ORDER BY crash_id, position");
  while (frames.step()) {
    const auto crash = by_id.find(frames.int64(0));
    if (crash == by_id.end()) continue;
    positions[crash->second].push_back(frames.int64(1));
    NativeFrame& f = out[crash->second].frames.emplace_back();
    f.address = frames.uint64(2);
    f.module = frames.text(3);
    f.module_offset = frames.uint64(4);
    f.function = frames.text(5);
    f.function_offset = frames.uint64(6);
    f.file = frames.text(7);
    f.line = frames.int32(8);
  }
  Statement inlined(db,
                    "SELECT crash_id, frame, function FROM crash_inlined "
                    "ORDER BY crash_id, frame, position");
  while (inlined.step()) {
    const auto crash = by_id.find(inlined.int64(0));
    if (crash == by_id.end()) continue;
    const std::vector<int64_t>& at = positions[crash->second];
    const auto frame = std::lower_bound(at.begin(), at.end(), inlined.int64(1));
    if (frame == at.end() || *frame != inlined.int64(1)) continue;
    out[crash->second].frames[static_cast<size_t>(frame - at.begin())].inlined.push_back(
        inlined.text(2));
  }
}

void read_log_lines(sqlite3* db, std::vector<LogLine>& out) {
  Statement rows(db,
                 "SELECT t_ns, stream, number, text FROM log_lines "
                 "ORDER BY t_ns, stream, number, id");
  while (rows.step()) {
    LogLine& l = out.emplace_back();
    l.t_ns = rows.int64(0);
    l.stream = rows.text(1);
    l.number = rows.uint64(2);
    l.text = rows.text(3);
  }
}

// Rows of a step kind this build does not know (a newer writer) are left out.
void read_step_samples(sqlite3* db, std::vector<StepSample>& out) {
  Statement rows(db,
                 "SELECT t_ns, pid, start_ticks, kind, count FROM step_samples "
                 "ORDER BY t_ns, rowid");
  while (rows.step()) {
    std::optional<StepKind> kind = step_kind_from_string(rows.text(3));
    if (!kind) continue;
    out.push_back({.t_ns = rows.int64(0),
                   .pid = rows.int32(1),
                   .start_ticks = rows.uint64(2),
                   .kind = *kind,
                   .count = rows.int64(4)});
  }
}

void read_collectives(sqlite3* db, int schema_version, std::vector<CollectiveCall>& out) {
  Statement rows(db,
                 "SELECT t_ns, end_ns, pid, start_ticks, group_id, number, group_rank, group_size, "
                 "source, op, dtype, count, tensors, redop, peer, site, step, async, " +
                     std::string(schema_version >= 8 ? "raised" : "NULL") +
                     " FROM collectives ORDER BY t_ns, id");
  while (rows.step()) {
    CollectiveCall& c = out.emplace_back();
    c.t_ns = rows.int64(0);
    c.end_ns = rows.int64(1);
    c.pid = rows.int32(2);
    c.start_ticks = rows.uint64(3);
    c.group = rows.uint64(4);
    c.number = rows.uint64(5);
    c.group_rank = rows.int32(6);
    c.group_size = rows.int32(7);
    c.source = rows.text(8);
    c.op = rows.text(9);
    c.dtype = rows.text(10);
    c.count = rows.uint64(11);
    c.tensors = rows.text(12);
    c.redop = rows.text(13);
    c.peer = rows.int32(14);
    c.site = rows.text(15);
    c.step = rows.uint64(16);
    c.async = rows.int32(17) != 0;
    c.raised = rows.int32(18) != 0;
  }
}

// The columns of schema 10, or NULLs in their place for an older file: a NULL fact is read
// from the row's words.
std::string columns_since_v10(int version, const char* columns, int count) {
  if (version >= 10) return columns;
  std::string nulls;
  for (int i = 0; i < count; ++i) nulls += i == 0 ? "NULL" : ", NULL";
  return nulls;
}

// An issue row: its facts, or (a row written before schema 10) its words read back.
bool read_issue(Statement& rows, CollectiveIssue& i) {
  std::optional<IssueKind> kind = issue_kind_named(rows.text(3));
  std::optional<IssueField> field = issue_field_named(rows.text(7));
  if (!kind || !field) return false;  // of a kind this build does not know
  i.t_ns = rows.int64(1);
  i.first_ns = rows.int64(2);
  i.kind = *kind;
  i.group = rows.uint64(4);
  i.number = rows.uint64(5);
  i.op = rows.text(6);
  i.field = *field;
  i.aborted = rows.int32(9) != 0;
  if (rows.is_null(10)) {
    issue_facts_from_words(rows.text(8), i);
    return true;
  }
  i.group_size = rows.int32(10);
  i.default_group = rows.int32(11) != 0;
  i.pair = rows.int32(12) != 0;
  i.wait_end = wait_end_named(rows.text(13)).value_or(WaitEnd::kNone);
  i.wait_end_rank = rows.int32(14);
  i.alone = rows.int32(15) != 0;
  i.waited_ns = rows.int64(16);
  i.quiet_ns = rows.int64(17);
  i.sites_differed_at = rows.uint64(18);
  return true;
}

void read_issue_rank(Statement& ranks, CollectiveIssueRank& r) {
  r.group_rank = ranks.int32(1);
  r.pid = ranks.int32(2);
  r.start_ticks = ranks.uint64(3);
  r.value = ranks.text(4);
  r.site = ranks.text(5);
  r.last_call = ranks.text(7);
  r.calls = ranks.uint64(8);
  r.stack = ranks.text(9);
  if (ranks.is_null(10)) {
    rank_facts_from_words(ranks.text(6), r);
    return;
  }
  r.state = rank_state_named(ranks.text(10)).value_or(RankState::kNone);
  r.job_rank = ranks.int32(11);
  r.odd = ranks.int32(12) != 0;
  r.op = ranks.text(13);
  r.peer = ranks.int32(14);
  r.late_ns = ranks.int64(15);
  if (ranks.int32(16) != 0) {
    r.end = RankEnd{ranks.opt_int32(17), ranks.opt_int32(18), ranks.int32(19) != 0};
  }
}

void read_collective_issues(sqlite3* db, int version, std::vector<CollectiveIssue>& out) {
  std::map<int64_t, size_t> by_id;
  Statement rows(db,
                 "SELECT id, t_ns, first_ns, kind, group_id, number, op, field, message, "
                 "aborted, " +
                     columns_since_v10(version,
                                       "group_size, default_group, pair, wait_end, "
                                       "wait_end_rank, alone, waited_ns, quiet_ns, "
                                       "sites_differed_at",
                                       9) +
                     " FROM collective_issues ORDER BY id");
  while (rows.step()) {
    CollectiveIssue issue;
    if (!read_issue(rows, issue)) continue;
    by_id[rows.int64(0)] = out.size();
    out.push_back(std::move(issue));
  }
  Statement ranks(db,
                  "SELECT issue_id, group_rank, pid, start_ticks, value, site, state, "
                  "last_call, calls, stack, " +
                      columns_since_v10(version,
                                        "status, job_rank, odd, op, peer, late_ns, ended, "
                                        "exit_code, exit_signal, finished",
                                        10) +
                      " FROM collective_issue_ranks ORDER BY issue_id, position");
  while (ranks.step()) {
    auto issue = by_id.find(ranks.int64(0));
    if (issue == by_id.end()) continue;
    read_issue_rank(ranks, out[issue->second].ranks.emplace_back());
  }
}

uint64_t parse_count(const std::string& text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

void read_bounds(sqlite3* db, Evidence& evidence) {
  Statement rows(db, "SELECT key, value FROM meta");
  const std::string_view events_prefix = schema::kMetaEventsDroppedPrefix;
  const std::string_view lines_prefix = schema::kMetaLogLinesDroppedPrefix;
  while (rows.step()) {
    const std::string key = rows.text(0);
    if (key == schema::kMetaThinnedUntil) {
      evidence.samples_thinned_until_ns = static_cast<int64_t>(parse_count(rows.text(1)));
    } else if (key.starts_with(events_prefix)) {
      const uint64_t count = parse_count(rows.text(1));
      if (count > 0) evidence.events_dropped[key.substr(events_prefix.size())] = count;
    } else if (key.starts_with(lines_prefix)) {
      const uint64_t count = parse_count(rows.text(1));
      if (count > 0) evidence.log_lines_dropped[key.substr(lines_prefix.size())] = count;
    } else if (key == schema::kMetaCrashesDropped) {
      evidence.crashes_dropped = parse_count(rows.text(1));
    } else if (key == schema::kMetaGpuEventsDropped) {
      evidence.gpu_events_dropped = parse_count(rows.text(1));
    } else if (key == schema::kMetaCollectivesDropped) {
      evidence.collectives_dropped = parse_count(rows.text(1));
    } else if (key == schema::kMetaOomKillsDropped) {
      evidence.kernel_oom_kills_dropped = parse_count(rows.text(1));
    }
  }
}

}  // namespace

Evidence read_evidence(const std::string& db_path) {
  DbHandle handle = open_for_reading(db_path);
  sqlite3* db = handle.get();
  // One snapshot: a writer committing meanwhile cannot leave samples without their process.
  detail::exec(db, "BEGIN");
  if (schema::check(db, db_path) == schema::State::kEmpty) {
    throw StoreError("run database '" + db_path +
                     "': empty file, not a traindoc run database (no tables)");
  }
  Evidence evidence;
  evidence.schema_version = static_cast<int>(detail::query_int(db, "PRAGMA user_version"));
  read_run(db, evidence.run);
  read_processes(db, evidence.schema_version, evidence.processes);
  read_proc_samples(db, evidence.schema_version, evidence.proc_samples);
  read_host_samples(db, evidence.host_samples);
  read_events(db, evidence.schema_version, evidence.events);
  read_logs(db, evidence.schema_version, evidence.logs);
  // Schema 1 has no crashes and no log lines: a v1 file reads with both empty.
  if (evidence.schema_version >= 2) {
    read_crashes(db, evidence.crashes);
    read_log_lines(db, evidence.log_lines);
  }
  if (evidence.schema_version >= 3) read_step_samples(db, evidence.steps);
  // Schema 2 and older have no GPU evidence: it reads as "not sampled" (nvml_status "").
  if (evidence.schema_version >= 3) detail::read_gpu(db, evidence.schema_version, evidence.gpu);
  // Schema 3 adds the collectives; older files read with none.
  if (evidence.schema_version >= 3) {
    read_collectives(db, evidence.schema_version, evidence.collectives);
    read_collective_issues(db, evidence.schema_version, evidence.collective_issues);
  }
  if (evidence.schema_version >= 12) {
    detail::read_cgroups(db, evidence.process_cgroups, evidence.cgroup_samples,
                         evidence.kernel_oom_kills);
  }
  if (evidence.schema_version >= 14)
    detail::read_preflight(db, evidence.preflight, evidence.preflight_ns);
  if (evidence.schema_version >= 15) detail::read_allocator_states(db, evidence.allocator_states);
  read_bounds(db, evidence);
  detail::exec(db, "COMMIT");
  return evidence;
}

}  // namespace traindoc::store
