// StoreWriter: appends what the supervisor sees to <run>/run.db (SQLite, WAL).
// Lives in the supervisor, owned and called by one thread. Every statement is prepared once at
// open and reused: the supervisor writes 8-30 processes' samples every second for days.
#include "store/store_writer.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "common/rank_env.h"
#include "store/allocator_tables.h"
#include "store/cgroup_tables.h"
#include "store/collective_tables.h"
#include "store/crash_tables.h"
#include "store/gpu_tables.h"
#include "store/preflight_tables.h"
#include "store/schema.h"
#include "store/sqlite_util.h"

#ifndef TRAINDOC_VERSION
#define TRAINDOC_VERSION "unknown"
#endif

namespace traindoc::store {

using detail::Statement;

namespace {

constexpr int kBusyTimeoutMs = 5000;
// Checkpoints keep the WAL near 4 MiB in steady state; this caps what is left after a burst
// (e.g. while a long `traindoc analyze` held a read snapshot and blocked checkpoints).
constexpr int64_t kJournalSizeLimit = 64LL * 1024 * 1024;

// A process's row: written whole by the supervisor, whose table knows all of it (an exec unsets
// what the program before it had set), or merged (kMergeProcess) by those that know a part.
constexpr const char* kProcessRow = R"sql(
INTO processes (pid, start_ticks, ppid, start_ns, argv0, cmdline, rank, local_rank, world_size,
                node_rank, rank_source, agent, forked, end_source, exit_code, exit_signal,
                core_dumped, end_ns, init_rank, init_world_size, worker_id)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20,
        ?21)
)sql";

constexpr const char* kMergeProcess = R"sql(
ON CONFLICT (pid, start_ticks) DO UPDATE SET
  ppid = CASE WHEN excluded.ppid <> 0 THEN excluded.ppid ELSE ppid END,
  start_ns = CASE WHEN excluded.start_ns <> 0 THEN excluded.start_ns ELSE start_ns END,
  argv0 = CASE WHEN excluded.argv0 <> '' THEN excluded.argv0 ELSE argv0 END,
  cmdline = CASE WHEN excluded.cmdline <> '' THEN excluded.cmdline ELSE cmdline END,
  rank = coalesce(excluded.rank, rank),
  local_rank = coalesce(excluded.local_rank, local_rank),
  world_size = coalesce(excluded.world_size, world_size),
  node_rank = coalesce(excluded.node_rank, node_rank),
  rank_source = CASE WHEN excluded.rank_source <> '' THEN excluded.rank_source ELSE rank_source END,
  agent = agent OR excluded.agent,
  forked = forked OR excluded.forked,
  end_source = CASE WHEN excluded.end_source <> 'none' THEN excluded.end_source ELSE end_source END,
  exit_code = CASE WHEN excluded.exit_code IS NOT NULL OR excluded.exit_signal IS NOT NULL
                   THEN excluded.exit_code ELSE exit_code END,
  exit_signal = CASE WHEN excluded.exit_code IS NOT NULL OR excluded.exit_signal IS NOT NULL
                     THEN excluded.exit_signal ELSE exit_signal END,
  core_dumped = core_dumped OR excluded.core_dumped,
  end_ns = CASE WHEN excluded.end_ns <> 0 THEN excluded.end_ns ELSE end_ns END,
  init_rank = coalesce(excluded.init_rank, init_rank),
  init_world_size = coalesce(excluded.init_world_size, init_world_size),
  worker_id = coalesce(excluded.worker_id, worker_id)
)sql";

// Thinning, in two passes over the same window ranking: the bucket's peak row (row 1) takes the
// bucket's maxima of the measures sampled at a lower rate or that peak on their own (fds, swap,
// pss, uss, rss_peak), then every other row of the bucket goes. rss_file stays the peak row's own:
// it is a part of that row's rss. ?1..?2: time range, ?3: bucket width.
constexpr const char* kThinProcUpdate = R"sql(
UPDATE proc_samples
SET swap = peak.max_swap, pss = peak.max_pss, uss = peak.max_uss, fds = peak.max_fds,
    fd_limit = peak.max_fd_limit, rss_peak = peak.max_rss_peak
FROM (SELECT rowid AS id,
             row_number() OVER (bucket ORDER BY rss DESC, t_ns) AS n,
             max(swap) OVER bucket AS max_swap, max(pss) OVER bucket AS max_pss,
             max(uss) OVER bucket AS max_uss, max(fds) OVER bucket AS max_fds,
             max(fd_limit) OVER bucket AS max_fd_limit, max(rss_peak) OVER bucket AS max_rss_peak
      FROM proc_samples
      WHERE t_ns >= ?1 AND t_ns < ?2
      WINDOW bucket AS (PARTITION BY pid, start_ticks, t_ns / ?3)) AS peak
WHERE proc_samples.rowid = peak.id AND peak.n = 1
)sql";

constexpr const char* kThinProcDelete = R"sql(
DELETE FROM proc_samples WHERE rowid IN (
  SELECT id FROM (SELECT rowid AS id,
                         row_number() OVER (PARTITION BY pid, start_ticks, t_ns / ?3
                                            ORDER BY rss DESC, t_ns) AS n
                  FROM proc_samples
                  WHERE t_ns >= ?1 AND t_ns < ?2)
  WHERE n > 1)
)sql";

constexpr const char* kThinHostUpdate = R"sql(
UPDATE host_samples
SET swap_free = peak.min_swap_free, cgroup_current = peak.max_cgroup_current,
    cgroup_oom_kills = peak.max_oom_kills, shm_used = peak.max_shm_used
FROM (SELECT rowid AS id,
             row_number() OVER (bucket ORDER BY mem_available, t_ns) AS n,
             min(swap_free) OVER bucket AS min_swap_free,
             max(cgroup_current) OVER bucket AS max_cgroup_current,
             max(cgroup_oom_kills) OVER bucket AS max_oom_kills,
             max(shm_used) OVER bucket AS max_shm_used
      FROM host_samples
      WHERE t_ns >= ?1 AND t_ns < ?2
      WINDOW bucket AS (PARTITION BY t_ns / ?3)) AS peak
WHERE host_samples.rowid = peak.id AND peak.n = 1
)sql";

constexpr const char* kThinHostDelete = R"sql(
DELETE FROM host_samples WHERE rowid IN (
  SELECT id FROM (SELECT rowid AS id,
                         row_number() OVER (PARTITION BY t_ns / ?3
                                            ORDER BY mem_available, t_ns) AS n
                  FROM host_samples
                  WHERE t_ns >= ?1 AND t_ns < ?2)
  WHERE n > 1)
)sql";

// Step counts only grow: a bucket's first and last rows keep where each process stood at both ends
// of it, so the steps per second stay known across thinned time.
constexpr const char* kThinStepsDelete = R"sql(
DELETE FROM step_samples WHERE rowid IN (
  SELECT id FROM (SELECT rowid AS id,
                         row_number() OVER (bucket ORDER BY t_ns, rowid) AS first,
                         row_number() OVER (bucket ORDER BY t_ns DESC, rowid DESC) AS last
                  FROM step_samples
                  WHERE t_ns >= ?1 AND t_ns < ?2
                  WINDOW bucket AS (PARTITION BY pid, start_ticks, kind, t_ns / ?3))
  WHERE first > 1 AND last > 1)
)sql";

uint64_t parse_count(const std::string& text) {
  uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  return value;
}

// Binds a ProcessRecord to kProcessRow's parameters and runs the statement.
void run_process(Statement& statement, const ProcessRecord& r) {
  statement.bind(1, r.pid)
      .bind(2, r.start_ticks)
      .bind(3, r.ppid)
      .bind(4, r.start_ns)
      .bind(5, r.argv0)
      .bind(6, r.cmdline)
      .bind(7, r.rank)
      .bind(8, r.local_rank)
      .bind(9, r.world_size)
      .bind(10, r.node_rank)
      .bind(11, common::rank_source_name(r.rank_source))
      .bind(12, r.agent)
      .bind(13, r.forked)
      .bind(14, to_string(r.end_source))
      .bind(15, r.exit_code)
      .bind(16, r.exit_signal)
      .bind(17, r.core_dumped)
      .bind(18, r.end_ns)
      .bind(19, r.init_rank)
      .bind(20, r.init_world_size)
      .bind(21, r.worker_id)
      .run();
}

}  // namespace

struct StoreWriter::Impl {
  std::string path;
  WriterOptions options;
  std::optional<std::string> failure;  // the first write error: nothing is written after it
  // Declared before the statements so that they are finalized first.
  detail::DbHandle db;

  Statement begin;
  Statement commit;
  Statement set_meta;
  Statement replace_run;
  Statement delete_args;
  Statement insert_arg;
  Statement upsert_process;
  Statement write_process;
  Statement insert_proc_sample;
  Statement insert_host_sample;
  Statement insert_step_sample;
  Statement insert_event;
  Statement drop_oldest_event;
  Statement upsert_log;
  Statement delete_log_files;
  Statement insert_log_file;
  Statement insert_log_writer;
  Statement thin_proc_update;
  Statement thin_proc_delete;
  Statement thin_host_update;
  Statement thin_host_delete;
  Statement thin_steps_delete;
  Statement insert_log_line;
  Statement drop_log_lines;
  detail::GpuTables gpu;
  detail::CrashTables crashes;
  detail::CollectiveTables collectives;
  detail::CgroupTables cgroups;

  bool in_transaction = false;
  int64_t thinned_until_ns = 0;
  std::unordered_map<std::string, int64_t> event_counts;
  std::unordered_map<std::string, int64_t> log_line_counts;
  // What the bounds removed, by meta key ("events_dropped:<kind>", "log_lines_dropped:<stream>",
  // "crashes_dropped"); the keys changed since the last commit are written by flush().
  std::map<std::string, uint64_t> dropped;
  std::set<std::string> dropped_dirty;

  // The statements of the run, its processes and samples.
  void prepare_run_rows(sqlite3* d) {
    begin = Statement(d, "BEGIN IMMEDIATE");
    commit = Statement(d, "COMMIT");
    set_meta = Statement(d,
                         "INSERT INTO meta (key, value) VALUES (?1, ?2) "
                         "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    replace_run = Statement(d,
                            "INSERT OR REPLACE INTO run (id, hostname, version, supervisor_pid, "
                            "root_pid, start_ns, end_ns, exit_code, exit_signal, exec_error) "
                            "VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    delete_args = Statement(d, "DELETE FROM run_args");
    insert_arg = Statement(d, "INSERT INTO run_args (position, arg) VALUES (?1, ?2)");
    upsert_process = Statement(d, std::string("INSERT ") + kProcessRow + kMergeProcess);
    write_process = Statement(d, std::string("INSERT OR REPLACE ") + kProcessRow);
    insert_proc_sample =
        Statement(d,
                  "INSERT INTO proc_samples (t_ns, pid, start_ticks, rss, swap, pss, uss, threads, "
                  "fds, fd_limit, cpu_user_s, cpu_sys_s, rss_file, rss_peak) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
    insert_host_sample = Statement(
        d,
        "INSERT INTO host_samples (t_ns, mem_total, mem_available, swap_total, swap_free, "
        "cgroup_version, cgroup_current, cgroup_max, cgroup_oom_kills, shm_total, shm_used) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    insert_step_sample = Statement(d,
                                   "INSERT INTO step_samples (t_ns, pid, start_ticks, kind, count) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5)");
  }

  // The statements of the events and the output streams.
  void prepare_event_rows(sqlite3* d) {
    insert_event = Statement(d,
                             "INSERT INTO events (t_ns, kind, pid, text, a, b, c, name) "
                             "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    drop_oldest_event = Statement(d,
                                  "DELETE FROM events WHERE id = (SELECT id FROM events "
                                  "WHERE kind = ?1 ORDER BY id LIMIT 1 OFFSET ?2)");
    upsert_log = Statement(d,
                           "INSERT INTO logs (name, bytes, lines, bytes_not_kept) "
                           "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (name) DO UPDATE SET "
                           "bytes = excluded.bytes, lines = excluded.lines, "
                           "bytes_not_kept = excluded.bytes_not_kept");
    delete_log_files = Statement(d, "DELETE FROM log_files WHERE stream = ?1");
    insert_log_file =
        Statement(d, "INSERT INTO log_files (stream, position, path) VALUES (?1, ?2, ?3)");
    insert_log_writer = Statement(d,
                                  "INSERT OR IGNORE INTO log_writers (stream, pid, fd, t_ns) "
                                  "VALUES (?1, ?2, ?3, ?4)");
  }

  void prepare() {
    sqlite3* d = db.get();
    prepare_run_rows(d);
    prepare_event_rows(d);
    thin_proc_update = Statement(d, kThinProcUpdate);
    thin_proc_delete = Statement(d, kThinProcDelete);
    thin_host_update = Statement(d, kThinHostUpdate);
    thin_host_delete = Statement(d, kThinHostDelete);
    thin_steps_delete = Statement(d, kThinStepsDelete);
    insert_log_line =
        Statement(d, "INSERT INTO log_lines (t_ns, stream, number, text) VALUES (?1, ?2, ?3, ?4)");
    // ?2: the rows kept for good, ?3: how many of the oldest rolling rows go.
    drop_log_lines = Statement(d,
                               "DELETE FROM log_lines WHERE id IN (SELECT id FROM log_lines "
                               "WHERE stream = ?1 ORDER BY id LIMIT ?3 OFFSET ?2)");
    gpu = detail::GpuTables(d);
    crashes = detail::CrashTables(d);
    collectives = detail::CollectiveTables(d);
    cgroups = detail::CgroupTables(d);
  }

  // What an earlier writer of this file left: reopening appends under the same bounds.
  void load_state() {
    Statement counts(db.get(), "SELECT kind, count(*) FROM events GROUP BY kind");
    while (counts.step()) event_counts[counts.text(0)] = counts.int64(1);
    Statement lines(db.get(), "SELECT stream, count(*) FROM log_lines GROUP BY stream");
    while (lines.step()) log_line_counts[lines.text(0)] = lines.int64(1);
    Statement meta(db.get(), "SELECT key, value FROM meta");
    while (meta.step()) {
      const std::string key = meta.text(0);
      if (key == schema::kMetaThinnedUntil) {
        thinned_until_ns = static_cast<int64_t>(parse_count(meta.text(1)));
      } else if (key.starts_with(schema::kMetaEventsDroppedPrefix) ||
                 key.starts_with(schema::kMetaLogLinesDroppedPrefix) ||
                 key == schema::kMetaCrashesDropped || key == schema::kMetaGpuEventsDropped ||
                 key == schema::kMetaCollectivesDropped || key == schema::kMetaOomKillsDropped) {
        dropped[key] = parse_count(meta.text(1));
      }
    }
  }

  void count_dropped(const std::string& key, uint64_t count) {
    dropped[key] += count;
    dropped_dirty.insert(key);
  }

  void meta(const char* key, const std::string& value) {
    set_meta.bind(1, key).bind(2, value).run();
  }
};

StoreWriter::StoreWriter(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
StoreWriter::StoreWriter(StoreWriter&&) noexcept = default;
StoreWriter& StoreWriter::operator=(StoreWriter&& other) noexcept {
  if (this != &other) {
    // The db being replaced still deserves its pending rows.
    if (m_impl) {
      try {
        flush();
      } catch (...) {
      }
    }
    m_impl = std::move(other.m_impl);
  }
  return *this;
}

StoreWriter::~StoreWriter() {
  if (!m_impl) return;
  try {
    flush();
  } catch (...) {
    // Nothing sensible to do in a destructor; what the last flush committed stays readable.
  }
}

StoreWriter StoreWriter::open(const std::string& db_path, const WriterOptions& options) {
  if (options.bucket_ns <= 0 || options.full_rate_window_ns < 0 ||
      options.max_events_per_kind < 0 || options.max_log_lines_per_stream < 0 ||
      options.log_lines_kept_first < 0 || options.max_crashes < 0 || options.max_collectives < 0) {
    throw std::invalid_argument("StoreWriter: bucket_ns must be > 0, other bounds >= 0");
  }
  auto impl = std::make_unique<Impl>();
  impl->path = db_path;
  impl->options = options;

  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(db_path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  impl->db.reset(raw);
  sqlite3* db = raw;
  if (rc != SQLITE_OK) {
    detail::fail(db, db_path, "cannot create or open for writing (is the run folder writable?)");
  }
  if (sqlite3_db_readonly(db, "main") == 1) {
    throw StoreError("run database '" + db_path + "': the file is read-only");
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);

  // Identity first: never turn some other SQLite file into WAL mode or add tables to it.
  const schema::State state = schema::check(db, db_path);

  // WAL: readers (traindoc analyze, sqlite3) see the last commit while we write, and a killed
  // writer loses only its open transaction. NORMAL: no fsync per commit, only at checkpoints;
  // a power loss may drop the last commits, a process crash never does.
  std::string journal_mode;
  {
    Statement wal(db, "PRAGMA journal_mode = WAL");
    if (wal.step()) journal_mode = wal.text(0);
  }
  detail::exec(db, "PRAGMA synchronous = NORMAL");
  detail::exec(db, ("PRAGMA journal_size_limit = " + std::to_string(kJournalSizeLimit)).c_str());

  detail::exec(db, "BEGIN IMMEDIATE");
  try {
    if (state == schema::State::kEmpty) schema::create(db);
    // Appending to a file of an older schema (a resumed run) first adds the newer tables.
    if (state == schema::State::kOlder) schema::upgrade(db);
    impl->prepare();
    // Journal mode is recorded rather than enforced: on a filesystem without shared memory
    // (some network mounts) SQLite keeps a rollback journal, still crash-safe, only without
    // concurrent readers.
    impl->meta(schema::kMetaWriter, std::string("traindoc ") + TRAINDOC_VERSION);
    impl->meta(schema::kMetaJournalMode, journal_mode);
    impl->meta(schema::kMetaFullRateWindow, std::to_string(options.full_rate_window_ns));
    impl->meta(schema::kMetaBucket, std::to_string(options.bucket_ns));
    impl->meta(schema::kMetaMaxEvents, std::to_string(options.max_events_per_kind));
    impl->meta(schema::kMetaMaxLogLines, std::to_string(options.max_log_lines_per_stream));
    impl->meta(
        schema::kMetaLogLinesKeptFirst,
        std::to_string(std::min(options.log_lines_kept_first, options.max_log_lines_per_stream)));
    impl->meta(schema::kMetaMaxCrashes, std::to_string(options.max_crashes));
    impl->meta(schema::kMetaMaxCollectives, std::to_string(options.max_collectives));
    impl->load_state();
    detail::exec(db, "COMMIT");
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return StoreWriter(std::move(impl));
}

const std::string& StoreWriter::path() const {
  return m_impl->path;
}

template <class Write>
void StoreWriter::guarded(Write&& write) {
  Impl& s = *m_impl;
  if (s.failure) return;
  try {
    write();
  } catch (const std::exception& error) {
    s.failure = error.what();
    sqlite3_exec(s.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    s.in_transaction = false;
    s.dropped_dirty.clear();
  }
}

const std::optional<std::string>& StoreWriter::failure() const {
  return m_impl->failure;
}

void StoreWriter::resume() {
  m_impl->failure.reset();
}

void StoreWriter::begin_if_needed() {
  if (m_impl->in_transaction) return;
  m_impl->begin.run();
  m_impl->in_transaction = true;
}

void StoreWriter::flush() {
  guarded([&] {
    Impl& s = *m_impl;
    if (!s.in_transaction) return;
    for (const std::string& key : s.dropped_dirty) {
      s.set_meta.bind(1, key).bind(2, std::to_string(s.dropped[key])).run();
    }
    s.commit.run();
    s.in_transaction = false;
    s.dropped_dirty.clear();
  });
}

void StoreWriter::write_run(const RunInfo& run) {
  guarded([&] {
    Impl& s = *m_impl;
    begin_if_needed();
    s.replace_run.bind(1, run.hostname)
        .bind(2, run.version)
        .bind(3, run.supervisor_pid)
        .bind(4, run.root_pid)
        .bind(5, run.start_ns)
        .bind(6, run.end_ns)
        .bind(7, run.exit_code)
        .bind(8, run.exit_signal)
        .bind(9, run.exec_error)
        .run();
    s.delete_args.run();
    for (size_t i = 0; i < run.command.size(); ++i) {
      s.insert_arg.bind(1, static_cast<int64_t>(i)).bind(2, run.command[i]).run();
    }
  });
}

void StoreWriter::upsert_process(const ProcessRecord& record) {
  guarded([&] {
    begin_if_needed();
    run_process(m_impl->upsert_process, record);
  });
}

void StoreWriter::write_process(const ProcessRecord& record) {
  guarded([&] {
    begin_if_needed();
    run_process(m_impl->write_process, record);
  });
}

void StoreWriter::add_proc_samples(const std::vector<ProcSample>& samples) {
  guarded([&] {
    Impl& s = *m_impl;
    if (samples.empty()) return;
    begin_if_needed();
    for (const ProcSample& p : samples) {
      s.insert_proc_sample.bind(1, p.t_ns)
          .bind(2, p.pid)
          .bind(3, p.start_ticks)
          .bind(4, p.rss)
          .bind(5, p.swap)
          .bind(6, p.pss)
          .bind(7, p.uss)
          .bind(8, p.threads)
          .bind(9, p.fds)
          .bind(10, p.fd_limit)
          .bind(11, p.cpu_user_s)
          .bind(12, p.cpu_sys_s)
          .bind(13, p.rss_file)
          .bind(14, p.rss_peak)
          .run();
    }
  });
}

void StoreWriter::add_host_sample(const HostSample& h) {
  guarded([&] {
    Impl& s = *m_impl;
    begin_if_needed();
    s.insert_host_sample.bind(1, h.t_ns)
        .bind(2, h.mem_total)
        .bind(3, h.mem_available)
        .bind(4, h.swap_total)
        .bind(5, h.swap_free)
        .bind(6, h.cgroup_version)
        .bind(7, h.cgroup_current)
        .bind(8, h.cgroup_max)
        .bind(9, h.cgroup_oom_kills)
        .bind(10, h.shm_total)
        .bind(11, h.shm_used)
        .run();
  });
}

void StoreWriter::add_step_samples(const std::vector<StepSample>& samples) {
  guarded([&] {
    Impl& s = *m_impl;
    if (samples.empty()) return;
    begin_if_needed();
    for (const StepSample& step : samples) {
      s.insert_step_sample.bind(1, step.t_ns)
          .bind(2, step.pid)
          .bind(3, step.start_ticks)
          .bind(4, to_string(step.kind))
          .bind(5, step.count)
          .run();
    }
  });
}

void StoreWriter::add_event(const Event& event) {
  guarded([&] {
    Impl& s = *m_impl;
    const int64_t max = s.options.max_events_per_kind;
    const std::string kind(to_string(event.kind));
    int64_t& count = s.event_counts[kind];
    begin_if_needed();
    if (count >= max) {
      s.count_dropped(schema::kMetaEventsDroppedPrefix + kind, 1);
      if (max == 0) return;
      // The first events of a kind often name the cause and the last ones the end: keep the
      // first half of the cap for good and roll the second half.
      s.drop_oldest_event.bind(1, kind).bind(2, max / 2).run();
      --count;
    }
    s.insert_event.bind(1, event.t_ns)
        .bind(2, kind)
        .bind(3, event.pid)
        .bind(4, event.text)
        .bind(5, event.a)
        .bind(6, event.b)
        .bind(7, event.c);
    if (event.name.empty()) {
      s.insert_event.bind_null(8);
    } else {
      s.insert_event.bind(8, event.name);
    }
    s.insert_event.run();
    ++count;
  });
}

void StoreWriter::write_log_stream(const LogStream& stream) {
  guarded([&] {
    Impl& s = *m_impl;
    begin_if_needed();
    s.upsert_log.bind(1, stream.name)
        .bind(2, stream.bytes)
        .bind(3, stream.lines)
        .bind(4, stream.bytes_not_kept)
        .run();
    s.delete_log_files.bind(1, stream.name).run();
    for (size_t i = 0; i < stream.files.size(); ++i) {
      s.insert_log_file.bind(1, stream.name)
          .bind(2, static_cast<int64_t>(i))
          .bind(3, stream.files[i])
          .run();
    }
    for (const LogWriter& writer : stream.writers) {
      s.insert_log_writer.bind(1, stream.name)
          .bind(2, writer.pid)
          .bind(3, writer.fd)
          .bind(4, writer.t_ns)
          .run();
    }
  });
}

void StoreWriter::write_crash(const Crash& crash) {
  guarded([&] {
    begin_if_needed();
    if (!m_impl->crashes.write(crash, m_impl->options.max_crashes)) {
      m_impl->count_dropped(schema::kMetaCrashesDropped, 1);
    }
  });
}

void StoreWriter::add_collectives(const std::vector<CollectiveCall>& calls) {
  guarded([&] {
    Impl& s = *m_impl;
    begin_if_needed();
    for (const CollectiveCall& call : calls) {
      if (!s.collectives.add_call(call, s.options.max_collectives)) {
        s.count_dropped(schema::kMetaCollectivesDropped, 1);
      }
    }
  });
}

void StoreWriter::end_collectives(const std::vector<CollectiveCall>& calls) {
  guarded([&] {
    begin_if_needed();
    for (const CollectiveCall& call : calls) m_impl->collectives.end_call(call);
  });
}

void StoreWriter::add_collective_issue(const CollectiveIssue& issue) {
  guarded([&] {
    begin_if_needed();
    m_impl->collectives.add_issue(issue);
  });
}

void StoreWriter::add_log_lines(const std::vector<LogLine>& lines) {
  guarded([&] {
    Impl& s = *m_impl;
    if (lines.empty()) return;
    const int64_t max = s.options.max_log_lines_per_stream;
    const int64_t first = std::min(s.options.log_lines_kept_first, max);
    // Per stream, which of this call's lines are not inserted: [skip_from, skip_to) of the
    // stream's lines in this call. Lines that the bound would delete at once never go in.
    struct Plan {
      int64_t lines = 0;
      int64_t skip_from = 0;
      int64_t skip_to = 0;
      int64_t next = 0;
    };
    std::unordered_map<std::string_view, Plan> plans;
    for (const LogLine& line : lines) ++plans[line.stream].lines;
    begin_if_needed();
    for (auto& [stream, plan] : plans) {
      int64_t& count = s.log_line_counts[std::string(stream)];
      const int64_t excess = count + plan.lines - max;
      if (excess <= 0) continue;
      // The first `first` rows stay; the oldest rows after them go first, then this call's
      // oldest lines past the first ones.
      const int64_t from_table = std::min(excess, std::max<int64_t>(count - first, 0));
      if (from_table > 0) {
        s.drop_log_lines.bind(1, stream).bind(2, first).bind(3, from_table).run();
        count -= from_table;
      }
      plan.skip_from = std::max<int64_t>(first - count, 0);
      plan.skip_to = plan.skip_from + (excess - from_table);
      s.count_dropped(schema::kMetaLogLinesDroppedPrefix + std::string(stream),
                      static_cast<uint64_t>(excess));
    }
    for (const LogLine& line : lines) {
      Plan& plan = plans[line.stream];
      const int64_t index = plan.next++;
      if (index >= plan.skip_from && index < plan.skip_to) continue;
      s.insert_log_line.bind(1, line.t_ns)
          .bind(2, line.stream)
          .bind(3, line.number)
          .bind(4, line.text)
          .run();
      ++s.log_line_counts[line.stream];
    }
  });
}

void StoreWriter::write_gpu_status(bool nvml_loaded, const std::string& status,
                                   bool driver_devices) {
  guarded([&] {
    begin_if_needed();
    m_impl->meta(detail::kMetaNvmlLoaded, nvml_loaded ? "1" : "0");
    m_impl->meta(detail::kMetaNvmlStatus, status);
    m_impl->meta(detail::kMetaDriverDevices, driver_devices ? "1" : "0");
  });
}

void StoreWriter::write_gpu_device(const GpuDevice& device) {
  guarded([&] {
    begin_if_needed();
    m_impl->gpu.write_device(device);
  });
}

void StoreWriter::add_gpu_samples(const std::vector<GpuSample>& samples) {
  guarded([&] {
    if (samples.empty()) return;
    begin_if_needed();
    m_impl->gpu.add_samples(samples);
  });
}

void StoreWriter::add_gpu_process_samples(const std::vector<GpuProcessSample>& samples) {
  guarded([&] {
    if (samples.empty()) return;
    begin_if_needed();
    m_impl->gpu.add_process_samples(samples);
  });
}

void StoreWriter::write_gpu_process(const GpuProcess& process) {
  guarded([&] {
    begin_if_needed();
    m_impl->gpu.write_process(process);
  });
}

void StoreWriter::add_gpu_event(const GpuEvent& event) {
  guarded([&] {
    begin_if_needed();
    if (!m_impl->gpu.add_event(event, m_impl->options.max_events_per_kind)) {
      m_impl->count_dropped(schema::kMetaGpuEventsDropped, 1);
    }
  });
}

void StoreWriter::add_process_cgroup(const ProcessCgroup& row) {
  guarded([&] {
    begin_if_needed();
    m_impl->cgroups.add_process_cgroup(row);
  });
}

void StoreWriter::add_cgroup_samples(const std::vector<CgroupSample>& samples) {
  guarded([&] {
    if (samples.empty()) return;
    begin_if_needed();
    m_impl->cgroups.add_samples(samples);
  });
}

void StoreWriter::add_kernel_oom_kill(const KernelOomKill& kill) {
  guarded([&] {
    begin_if_needed();
    if (!m_impl->cgroups.add_oom_kill(kill, m_impl->options.max_events_per_kind)) {
      m_impl->count_dropped(schema::kMetaOomKillsDropped, 1);
    }
  });
}

void StoreWriter::write_preflight(int64_t t_ns, const std::vector<PreflightResult>& results) {
  guarded([&] {
    if (results.empty()) return;
    begin_if_needed();
    detail::write_preflight(m_impl->db.get(), t_ns, results);
  });
}

void StoreWriter::write_allocator_state(const AllocatorState& state) {
  guarded([&] {
    begin_if_needed();
    detail::write_allocator_state(m_impl->db.get(), state);
  });
}

void StoreWriter::write_cuda_env(const CudaEnv& env) {
  guarded([&] {
    begin_if_needed();
    m_impl->gpu.write_cuda_env(env);
  });
}

void StoreWriter::downsample(int64_t now_ns) {
  guarded([&] {
    Impl& s = *m_impl;
    const int64_t bucket = s.options.bucket_ns;
    const int64_t horizon = now_ns - s.options.full_rate_window_ns;
    if (horizon <= 0) return;
    // Only whole buckets: a bucket straddling the horizon would be thinned twice.
    const int64_t until = horizon / bucket * bucket;
    if (until <= s.thinned_until_ns) return;
    begin_if_needed();
    const int64_t from = s.thinned_until_ns;
    s.thin_proc_update.bind(1, from).bind(2, until).bind(3, bucket).run();
    s.thin_proc_delete.bind(1, from).bind(2, until).bind(3, bucket).run();
    s.thin_host_update.bind(1, from).bind(2, until).bind(3, bucket).run();
    s.thin_host_delete.bind(1, from).bind(2, until).bind(3, bucket).run();
    s.thin_steps_delete.bind(1, from).bind(2, until).bind(3, bucket).run();
    s.gpu.thin(from, until, bucket);
    s.cgroups.thin(from, until, bucket);
    s.meta(schema::kMetaThinnedUntil, std::to_string(until));
    s.thinned_until_ns = until;
  });
}

}  // namespace traindoc::store
