// Unit tests of StoreWriter against real SQLite in a temporary folder: round trips, merging of
// process records, downsampling, event caps, and refusals. Test process only.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>

#include "file_size_limit.h"
#include "store/store_reader.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace traindoc::store {
namespace {

using test::full_host_sample;
using test::full_proc_sample;
using test::full_process;
using test::full_run;
using test::kSecond;
using test::kT0;
using test::TempDir;

// A second connection, as the sqlite3 CLI would see the file.
int64_t query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
  int64_t value = -1;
  if (sqlite3_step(statement) == SQLITE_ROW) value = sqlite3_column_int64(statement, 0);
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

TEST(StoreWriter, RoundTripsEveryField) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  Evidence expected;
  expected.run = full_run();
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.write_run(expected.run);

    ProcessRecord all_set = full_process(100);
    all_set.start_ticks = 10;
    ProcessRecord none_set;  // every optional empty, every flag false
    none_set.pid = 101;
    none_set.start_ticks = 20;
    ProcessRecord huge_ticks = full_process(102);  // start_ticks above INT64_MAX
    huge_ticks.cmdline = std::string("with\0nul", 8);
    expected.processes = {all_set, none_set, huge_ticks};
    for (const auto& p : expected.processes) writer.upsert_process(p);

    ProcSample sparse;  // pss, uss, fds, fd_limit, rss_file not measured
    sparse.t_ns = kT0 + 2 * kSecond;
    sparse.pid = 101;
    sparse.start_ticks = 20;
    sparse.rss = 1;
    expected.proc_samples = {full_proc_sample(100, kT0 + kSecond), sparse,
                             full_proc_sample(100, kT0 + 3 * kSecond)};
    writer.add_proc_samples(expected.proc_samples);

    HostSample bare;  // no cgroup, no shm
    bare.t_ns = kT0 + 2 * kSecond;
    bare.mem_total = 1;
    expected.host_samples = {full_host_sample(kT0 + kSecond), bare};
    for (const auto& h : expected.host_samples) writer.add_host_sample(h);

    expected.events = {{kT0 + kSecond, EventKind::kSignalForwarded, 4243, "SIGTERM"},
                       {kT0 + 2 * kSecond, EventKind::kStoreFailed, 0, "smaps_rollup: EACCES"}};
    for (const auto& e : expected.events) writer.add_event(e);

    expected.logs = {{"stdout", 1000, 10, 0, {"logs/stdout.log"}, {}},
                     {"stderr", 1ULL << 40, 77, 5, {"logs/stderr.log", "logs/stderr.1.log"}, {}}};
    for (const auto& l : expected.logs) writer.write_log_stream(l);

    expected.steps = {
        {kT0 + kSecond, 100, 10, StepKind::kOptimizer, 1},
        {kT0 + kSecond, 100, 10, StepKind::kBackward, 2},
        {kT0 + 2 * kSecond, 102, 0xFFFFFFFFFFFFFFF0ULL, StepKind::kDdpForward, int64_t{1} << 40}};
    writer.add_step_samples(expected.steps);
    writer.flush();
  }
  const Evidence actual = read_evidence(path);
  EXPECT_EQ(actual.schema_version, kSchemaVersion);
  EXPECT_EQ(actual.run, expected.run);
  ASSERT_EQ(actual.processes.size(), 3u);
  // start_ticks above INT64_MAX sorts as negative in SQLite: match by pid, not by position.
  for (const auto& want : expected.processes) {
    const auto found = std::find_if(actual.processes.begin(), actual.processes.end(),
                                    [&](const ProcessRecord& p) { return p.pid == want.pid; });
    ASSERT_NE(found, actual.processes.end());
    EXPECT_EQ(*found, want) << "pid " << want.pid;
  }
  EXPECT_EQ(actual.proc_samples, expected.proc_samples);
  EXPECT_EQ(actual.host_samples, expected.host_samples);
  EXPECT_EQ(actual.events, expected.events);
  EXPECT_EQ(actual.logs, expected.logs);
  EXPECT_EQ(actual.steps, expected.steps);
  EXPECT_EQ(actual.samples_thinned_until_ns, 0);
  EXPECT_TRUE(actual.events_dropped.empty());
}

TEST(StoreWriter, FileIsWalAndVersioned) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  writer.write_run(full_run());
  writer.flush();
  EXPECT_EQ(query(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(query(path,
                  "SELECT count(*) FROM meta WHERE key = 'format' AND "
                  "value = 'traindoc.run-db'"),
            1);
  EXPECT_EQ(query(path, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"), 1);
  EXPECT_TRUE(std::filesystem::exists(path + "-wal"));
}

// A file that cannot grow (a full disk; here a file size limit, which fails writes as ENOSPC
// does) stops the writer at the first error without a throw: what was committed stays readable,
// later writes are dropped, and after resume() it writes again.
TEST(StoreWriter, StopsAtTheFirstWriteErrorAndResumes) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  RunInfo run = full_run();
  writer.write_run(run);
  writer.flush();
  ASSERT_FALSE(writer.failure());

  {
    traindoc::test::FileSizeLimit limit(1 << 20);
    ASSERT_TRUE(limit.set());
    std::vector<ProcSample> samples;
    for (int i = 0; i < 20000; ++i) {
      samples.push_back(full_proc_sample(1000 + i % 50, i));
    }
    for (int round = 0; round < 10 && !writer.failure(); ++round) {
      EXPECT_NO_THROW(writer.add_proc_samples(samples));
      EXPECT_NO_THROW(writer.flush());
    }
    ASSERT_TRUE(writer.failure());
    EXPECT_NO_THROW(writer.add_event({1, EventKind::kJobIdle, 0, "never stored"}));
    EXPECT_NO_THROW(writer.flush());
  }

  EXPECT_EQ(read_evidence(path).run, run);  // committed before: readable
  writer.add_event({2, EventKind::kThreadDied, 0, "still dropped"});
  writer.resume();
  writer.add_event({3, EventKind::kJobResumed, 0, "stored"});
  writer.flush();
  EXPECT_FALSE(writer.failure());
  std::vector<EventKind> kinds;
  for (const Event& event : read_evidence(path).events) kinds.push_back(event.kind);
  EXPECT_EQ(kinds, std::vector<EventKind>{EventKind::kJobResumed});
}

TEST(StoreWriter, WriteRunReplacesTheRowAndCommand) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  RunInfo run = full_run();
  writer.write_run(run);
  run.command = {"python3", "train.py"};
  run.exit_code.reset();
  run.end_ns = 0;
  writer.write_run(run);
  writer.flush();
  EXPECT_EQ(read_evidence(path).run, run);
  EXPECT_EQ(query(path, "SELECT count(*) FROM run"), 1);
}

TEST(StoreWriter, UpsertKeepsKnownFields) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  ProcessRecord start = full_process(300);
  start.end_source = EndSource::kNone;
  start.exit_code.reset();
  start.exit_signal.reset();
  start.core_dumped = false;
  start.end_ns = 0;
  writer.upsert_process(start);

  // A later update that knows only the end.
  ProcessRecord end;
  end.pid = 300;
  end.start_ticks = start.start_ticks;
  end.end_source = EndSource::kSupervisor;
  end.exit_signal = 9;
  end.end_ns = kT0 + 50 * kSecond;
  writer.upsert_process(end);

  // Same pid, another start: another process (pid reuse).
  ProcessRecord reused;
  reused.pid = 300;
  reused.start_ticks = 999;
  reused.argv0 = "sleep";
  writer.upsert_process(reused);
  writer.flush();

  const Evidence evidence = read_evidence(path);
  ASSERT_EQ(evidence.processes.size(), 2u);
  const ProcessRecord& merged = evidence.processes[0].start_ticks == start.start_ticks
                                    ? evidence.processes[0]
                                    : evidence.processes[1];
  ProcessRecord want = start;
  want.end_source = EndSource::kSupervisor;
  want.exit_signal = 9;
  want.end_ns = end.end_ns;
  EXPECT_EQ(merged, want);
  EXPECT_EQ(merged.argv0, "/usr/bin/python3");
  EXPECT_EQ(merged.rank, 1);
  EXPECT_TRUE(merged.agent);  // a record without the agent flag does not clear it
}

TEST(StoreWriter, WriteProcessReplacesTheWholeRow) {
  // The supervisor's record of a fork that exec'd another program: the fork's rank, agent and
  // forked flags go.
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  ProcessRecord fork = full_process(300);
  fork.forked = true;
  writer.write_process(fork);
  ProcessRecord exec;
  exec.pid = 300;
  exec.start_ticks = fork.start_ticks;
  exec.ppid = fork.ppid;
  exec.argv0 = "./tool";
  exec.cmdline = "./tool --fast";
  writer.write_process(exec);
  writer.flush();
  const Evidence evidence = read_evidence(path);
  ASSERT_EQ(evidence.processes.size(), 1u);
  EXPECT_EQ(evidence.processes[0], exec);
}

TEST(StoreWriter, UpsertReplacesTheExitStatusAsOnePair) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  ProcessRecord r;
  r.pid = 7;
  r.start_ticks = 70;
  r.end_source = EndSource::kAgentExit;
  r.exit_code = 0;  // the agent saw exit(0) begin...
  writer.upsert_process(r);
  r.end_source = EndSource::kSupervisor;
  r.exit_code.reset();
  r.exit_signal = 9;  // ...but the process was killed during its exit handlers
  writer.upsert_process(r);
  ProcessRecord later;  // knows nothing of the end: keeps it
  later.pid = 7;
  later.start_ticks = 70;
  later.ppid = 1;
  writer.upsert_process(later);
  writer.flush();
  const ProcessRecord got = read_evidence(path).processes.at(0);
  EXPECT_EQ(got.end_source, EndSource::kSupervisor);
  EXPECT_EQ(got.exit_code, std::nullopt);
  EXPECT_EQ(got.exit_signal, 9);
  EXPECT_EQ(got.ppid, 1);
}

TEST(StoreWriter, LogStreamUpsertReplacesFiles) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  writer.write_log_stream({"stdout", 10, 1, 0, {"logs/stdout.log", "logs/stdout.1.log"}, {}});
  writer.write_log_stream({"stderr", 5, 1, 0, {}, {}});
  const LogStream grown{"stdout", 1000, 50, 7, {"logs/stdout.log"}, {}};
  writer.write_log_stream(grown);
  writer.flush();
  const Evidence evidence = read_evidence(path);
  ASSERT_EQ(evidence.logs.size(), 2u);
  EXPECT_EQ(evidence.logs[0], grown);
  EXPECT_TRUE(evidence.logs[1].files.empty());
}

// Two processes sampled every second for 15 minutes; rss has a known peak in each minute.
class StoreDownsample : public ::testing::Test {
 protected:
  static constexpr int kSeconds = 15 * 60;

  static uint64_t rss_at(int pid, int i) {
    // The peak of minute m sits at second (m * 7 + pid) % 60 of that minute.
    const int minute = i / 60;
    const bool peak = i % 60 == (minute * 7 + pid) % 60;
    return peak ? 5'000'000'000ULL + static_cast<uint64_t>(minute)
                : 1'000'000ULL + static_cast<uint64_t>(i % 13);
  }

  void write_samples(StoreWriter& writer) {
    for (int i = 0; i < kSeconds; ++i) {
      const int64_t t = kT0 + i * kSecond;
      std::vector<ProcSample> samples;
      for (int pid : {1, 2}) {
        ProcSample s = full_proc_sample(pid, t);
        s.rss = rss_at(pid, i);
        // fds measured every 5 s, with its own peak at second 10 of each minute.
        s.fds = i % 5 == 0 ? std::optional<int>(i % 60 == 10 ? 900 : 100) : std::nullopt;
        s.pss.reset();
        samples.push_back(s);
      }
      writer.add_proc_samples(samples);
      HostSample h = full_host_sample(t);
      h.mem_available = i % 60 == 42 ? 1'000 : 10'000'000 + static_cast<uint64_t>(i);
      h.shm_used = i % 60 == 3 ? 777 : 1;
      writer.add_host_sample(h);
    }
    writer.flush();
  }

  TempDir m_dir;
  std::string m_path = m_dir.file("run.db");
};

TEST_F(StoreDownsample, KeepsThePeakRowPerBucketAndRecentRows) {
  StoreWriter writer = StoreWriter::open(m_path);
  write_samples(writer);
  const int64_t now = kT0 + kSeconds * kSecond + kSecond / 2;
  writer.downsample(now);
  writer.flush();

  const Evidence evidence = read_evidence(m_path);
  // The horizon is now - 10 min, rounded down to a minute: minutes 0..4 are thinned.
  const int64_t until = kT0 + 300 * kSecond;
  EXPECT_EQ(evidence.samples_thinned_until_ns, until);
  std::map<int, std::vector<ProcSample>> old_rows;
  std::map<int, int> recent_rows;
  for (const ProcSample& s : evidence.proc_samples) {
    if (s.t_ns < until) {
      old_rows[s.pid].push_back(s);
    } else {
      ++recent_rows[s.pid];
    }
  }
  for (int pid : {1, 2}) {
    ASSERT_EQ(old_rows[pid].size(), 5u) << "pid " << pid;
    for (int minute = 0; minute < 5; ++minute) {
      const ProcSample& kept = old_rows[pid][static_cast<size_t>(minute)];
      const int second = (minute * 7 + pid) % 60;
      EXPECT_EQ(kept.t_ns, kT0 + (minute * 60 + second) * kSecond);
      EXPECT_EQ(kept.rss, 5'000'000'000ULL + static_cast<uint64_t>(minute));
      EXPECT_EQ(kept.fds, 900);  // the bucket's fd peak, though measured at another second
      EXPECT_EQ(kept.pss, std::nullopt);
    }
    EXPECT_EQ(recent_rows[pid], 10 * 60);
  }

  std::vector<HostSample> old_host;
  for (const HostSample& h : evidence.host_samples) {
    if (h.t_ns < until) old_host.push_back(h);
  }
  ASSERT_EQ(old_host.size(), 5u);
  for (int minute = 0; minute < 5; ++minute) {
    const HostSample& kept = old_host[static_cast<size_t>(minute)];
    EXPECT_EQ(kept.t_ns, kT0 + (minute * 60 + 42) * kSecond);
    EXPECT_EQ(kept.mem_available, 1'000u);
    EXPECT_EQ(kept.shm_used, 777u);
  }
  EXPECT_EQ(evidence.host_samples.size(), 5u + 10 * 60);
  // Ordered by time.
  EXPECT_TRUE(
      std::is_sorted(evidence.proc_samples.begin(), evidence.proc_samples.end(),
                     [](const ProcSample& a, const ProcSample& b) { return a.t_ns < b.t_ns; }));
}

// Step counts of one process, every second for 15 minutes: the thinned minutes keep their first
// and last rows per kind, so the first step, the last and the rate between stay known.
TEST_F(StoreDownsample, KeepsTheFirstAndLastStepRowOfEachBucket) {
  StoreWriter writer = StoreWriter::open(m_path);
  for (int i = 0; i < kSeconds; ++i) {
    const int64_t t = kT0 + i * kSecond;
    writer.add_step_samples(
        {{t, 1, 10, StepKind::kOptimizer, 3 * i}, {t, 1, 10, StepKind::kBackward, 6 * i}});
  }
  writer.downsample(kT0 + kSeconds * kSecond);
  writer.flush();
  const Evidence evidence = read_evidence(m_path);
  const int64_t until = kT0 + 300 * kSecond;
  std::vector<int64_t> old_optimizer;
  int recent = 0;
  for (const StepSample& s : evidence.steps) {
    if (s.t_ns >= until) {
      ++recent;
    } else if (s.kind == StepKind::kOptimizer) {
      old_optimizer.push_back(s.count);
    }
  }
  EXPECT_EQ(old_optimizer, (std::vector<int64_t>{0, 177, 180, 357, 360, 537, 540, 717, 720, 897}));
  EXPECT_EQ(evidence.steps.size(), 2 * 10 + 2u * 600);
  EXPECT_EQ(recent, 2 * 600);
}

TEST_F(StoreDownsample, VisitsEachBucketOnce) {
  StoreWriter writer = StoreWriter::open(m_path);
  write_samples(writer);
  const int64_t now = kT0 + kSeconds * kSecond;
  writer.downsample(now);
  // A late row inside an already thinned bucket is not looked at again: the proof that later
  // calls skip the thinned range.
  ProcSample late = full_proc_sample(1, kT0 + 30 * kSecond);
  late.rss = 1;
  writer.add_proc_samples({late});
  writer.downsample(now);
  writer.downsample(now + 59 * kSecond);  // same horizon minute: nothing to do
  writer.flush();
  const int64_t rows_before = query(m_path, "SELECT count(*) FROM proc_samples");
  EXPECT_EQ(rows_before, 2 * 5 + 1 + 2 * 600);

  writer.downsample(now + 60 * kSecond);  // minute 5 becomes old
  writer.flush();
  EXPECT_EQ(query(m_path, "SELECT count(*) FROM proc_samples"), 2 * 6 + 1 + 2 * 540);
  EXPECT_EQ(read_evidence(m_path).samples_thinned_until_ns, kT0 + 360 * kSecond);
}

TEST_F(StoreDownsample, ResumesFromTheRecordedHorizonAfterReopen) {
  {
    StoreWriter writer = StoreWriter::open(m_path);
    write_samples(writer);
    writer.downsample(kT0 + kSeconds * kSecond);
  }
  StoreWriter writer = StoreWriter::open(m_path);
  ProcSample late = full_proc_sample(1, kT0 + 30 * kSecond);
  writer.add_proc_samples({late});
  writer.downsample(kT0 + kSeconds * kSecond);
  writer.flush();
  EXPECT_EQ(query(m_path, "SELECT count(*) FROM proc_samples WHERE t_ns < " +
                              std::to_string(kT0 + 60 * kSecond)),
            2 + 1);
}

TEST(StoreWriter, CapsEventsPerKindKeepingFirstAndLatest) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  WriterOptions options;
  options.max_events_per_kind = 10;
  {
    StoreWriter writer = StoreWriter::open(path, options);
    for (int i = 0; i < 25; ++i)
      writer.add_event({kT0 + i, EventKind::kStdinWait, 1, std::to_string(i)});
    for (int i = 0; i < 3; ++i) writer.add_event({kT0 + i, EventKind::kSignalForwarded, 1, "x"});
    writer.flush();
  }
  Evidence evidence = read_evidence(path);
  std::vector<std::string> kept;
  for (const Event& e : evidence.events) {
    if (e.kind == EventKind::kStdinWait) kept.push_back(e.text);
  }
  const std::vector<std::string> want = {"0", "1", "2", "3", "4", "20", "21", "22", "23", "24"};
  EXPECT_EQ(kept, want);
  EXPECT_EQ(evidence.events.size(), 13u);
  EXPECT_EQ(evidence.events_dropped, (std::map<std::string, uint64_t>{{"stdin-wait", 15}}));

  // Reopening continues the same counts.
  {
    StoreWriter writer = StoreWriter::open(path, options);
    writer.add_event({kT0 + 100, EventKind::kStdinWait, 1, "late"});
  }
  evidence = read_evidence(path);
  EXPECT_EQ(evidence.events_dropped.at("stdin-wait"), 16u);
  EXPECT_EQ(evidence.events.back().text, "late");
  EXPECT_EQ(evidence.events.size(), 13u);
}

TEST(StoreWriter, ZeroEventCapStoresNoneButCounts) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  WriterOptions options;
  options.max_events_per_kind = 0;
  {
    StoreWriter writer = StoreWriter::open(path, options);
    writer.add_event({kT0, EventKind::kThreadDied, 1, "a"});
    writer.add_event({kT0, EventKind::kThreadDied, 1, "b"});
  }
  const Evidence evidence = read_evidence(path);
  EXPECT_TRUE(evidence.events.empty());
  EXPECT_EQ(evidence.events_dropped.at("thread-died"), 2u);
}

TEST(StoreWriter, UnflushedWritesAreCommittedByTheDestructorAndMove) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  {
    StoreWriter first = StoreWriter::open(path);
    first.write_run(full_run());
    StoreWriter second = std::move(first);
    second.add_event({kT0, EventKind::kJobIdle, 1, ""});
    second.flush();
    second.flush();  // nothing pending: a no-op
    second.add_event({kT0 + 1, EventKind::kJobResumed, 1, ""});
  }
  const Evidence evidence = read_evidence(path);
  EXPECT_EQ(evidence.run, full_run());
  ASSERT_EQ(evidence.events.size(), 2u);
  EXPECT_EQ(evidence.events[1].kind, EventKind::kJobResumed);
}

TEST(StoreWriter, RefusesAMissingFolder) {
  TempDir dir;
  const std::string path = dir.file("no/such/folder/run.db");
  try {
    StoreWriter::open(path);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos)
        << e.what();
  }
}

TEST(StoreWriter, RefusesAFolderAsPath) {
  TempDir dir;
  EXPECT_THROW(StoreWriter::open(dir.path().string()), StoreError);
}

TEST(StoreWriter, RefusesAnotherSqliteDatabaseAndLeavesItAlone) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1);", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  try {
    StoreWriter::open(path);
    FAIL() << "expected StoreError";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("not a traindoc run database"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(query(path, "SELECT count(*) FROM sqlite_master"), 1);
  EXPECT_EQ(query(path, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'delete'"),
            1);
}

TEST(StoreWriter, RejectsNonsenseOptions) {
  TempDir dir;
  WriterOptions options;
  options.bucket_ns = 0;
  EXPECT_THROW(StoreWriter::open(dir.file("run.db"), options), std::invalid_argument);
}

}  // namespace
}  // namespace traindoc::store
