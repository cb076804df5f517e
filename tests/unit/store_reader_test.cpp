// Unit tests of read_evidence: reading beside a live writer, after a writer killed with -9, and
// refusing files that are not a run.db this build understands. Test process (forks children).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "store/collective_words.h"
#include "store/forwarded_signal.h"
#include "store/store_reader.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace traindoc::store {
namespace {

using test::full_crash;
using test::full_host_sample;
using test::full_proc_sample;
using test::full_process;
using test::full_run;
using test::kSecond;
using test::kT0;
using test::TempDir;
using test::write_file;

// Expects a StoreError whose message names the file and contains `needle`.
void expect_store_error(const std::string& path, const std::string& needle) {
  try {
    read_evidence(path);
    ADD_FAILURE() << "expected StoreError for " << path;
  } catch (const StoreError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(needle), std::string::npos) << message;
  }
}

TEST(StoreReader, SeesTheLastFlushWhileTheWriterHoldsATransaction) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  writer.write_run(full_run());
  writer.add_proc_samples({full_proc_sample(1, kT0)});
  writer.flush();
  writer.add_proc_samples({full_proc_sample(1, kT0 + kSecond)});  // open, not committed
  writer.add_event({kT0, EventKind::kJobIdle, 1, ""});

  Evidence seen = read_evidence(path);
  EXPECT_EQ(seen.run, full_run());
  EXPECT_EQ(seen.proc_samples.size(), 1u);
  EXPECT_TRUE(seen.events.empty());

  writer.flush();
  seen = read_evidence(path);
  EXPECT_EQ(seen.proc_samples.size(), 2u);
  EXPECT_EQ(seen.events.size(), 1u);
  // The writer goes on after readers came and went.
  writer.add_host_sample(full_host_sample(kT0));
  writer.flush();
  EXPECT_EQ(read_evidence(path).host_samples.size(), 1u);
}

TEST(StoreReader, RefusesAnEmptyDatabaseFromAWriterThatNeverFlushed) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  // The schema was committed at open: the file is a valid, empty run.db.
  const Evidence seen = read_evidence(path);
  EXPECT_TRUE(seen.processes.empty());
  EXPECT_TRUE(seen.run.command.empty());
}

// Forks a child that writes, flushes, writes more, then dies the way `how` says without running
// any destructor. Returns the child's wait status.
int write_and_die(const std::string& path, void (*how)()) {
  const pid_t child = fork();
  if (child == 0) {
    try {
      StoreWriter writer = StoreWriter::open(path);
      writer.write_run(full_run());
      writer.upsert_process(full_process(11));
      for (int i = 0; i < 100; ++i) writer.add_proc_samples({full_proc_sample(11, kT0 + i)});
      writer.add_host_sample(full_host_sample(kT0));
      writer.flush();
      writer.add_event({kT0, EventKind::kSupervisorLost, 11, "after the last flush"});
      writer.add_proc_samples({full_proc_sample(11, kT0 + 1000)});
      how();
    } catch (...) {
    }
    _exit(99);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

void check_survivors(const std::string& path) {
  const Evidence seen = read_evidence(path);
  EXPECT_EQ(seen.run, full_run());
  ASSERT_EQ(seen.processes.size(), 1u);
  EXPECT_EQ(seen.processes[0], full_process(11));
  EXPECT_EQ(seen.proc_samples.size(), 100u);
  EXPECT_EQ(seen.host_samples.size(), 1u);
  EXPECT_TRUE(seen.events.empty());
}

TEST(StoreReader, ReadsTheDatabaseOfAWriterKilledWithSigkill) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  const int status = write_and_die(path, [] { raise(SIGKILL); });
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
  // The commits are still in the WAL, not yet in the main file: reading them needs recovery.
  ASSERT_TRUE(std::filesystem::exists(path + "-wal"));
  const auto wal_size = std::filesystem::file_size(path + "-wal");
  ASSERT_GT(wal_size, 0u);
  check_survivors(path);
  check_survivors(path);  // reading changed nothing
  EXPECT_EQ(std::filesystem::file_size(path + "-wal"), wal_size);

  // A new writer on the same file recovers too, and appends.
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.add_event({kT0, EventKind::kJobResumed, 1, ""});
  }
  EXPECT_EQ(read_evidence(path).events.size(), 1u);
}

TEST(StoreReader, SkipsEventsOfAKindItDoesNotKnow) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.add_event({kT0, EventKind::kJobIdle, 0, "idle"});
  }
  // As a later version would write one of its own kinds.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "INSERT INTO events (t_ns, kind, pid, text) "
                         "VALUES (2, 'a-kind-of-later', 1, 'x')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::vector<Event> events = read_evidence(path).events;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kJobIdle);
  EXPECT_EQ(events[0].text, "idle");
}

TEST(StoreReader, ReadsTheDatabaseOfAWriterThatCalledExit) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  const int status = write_and_die(path, [] { _exit(3); });
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 3);
  check_survivors(path);
}

TEST(StoreReader, ReadsInAFolderItCannotWrite) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  TempDir dir;
  const std::string path = dir.file("run.db");
  const int status = write_and_die(path, [] { raise(SIGKILL); });
  ASSERT_TRUE(WIFSIGNALED(status));
  std::filesystem::permissions(
      dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  std::filesystem::permissions(path, std::filesystem::perms::owner_read);
  std::filesystem::permissions(path + "-wal", std::filesystem::perms::owner_read);
  std::filesystem::permissions(path + "-shm", std::filesystem::perms::owner_read);
  // Every commit is still in the WAL: a read-only open must use it, not ignore it.
  check_survivors(path);
}

TEST(StoreReader, LeavesAFinishedRunsFolderAsItFoundIt) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  { StoreWriter::open(path).write_run(full_run()); }
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_EQ(read_evidence(path).run, full_run());
  // SQLite makes an empty WAL and its index for the read; they must not stay behind.
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
}

// Builds a database from a SQL text fixture, as the sqlite3 CLI would from a .dump.
void load_sql_fixture(const std::string& fixture, const std::string& db_path) {
  const std::string sql = test::read_file(std::string(TRAINDOC_FIXTURES) + "/store/" + fixture);
  ASSERT_FALSE(sql.empty()) << fixture;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// Every table and index with its exact DDL, as sqlite_master holds it.
std::vector<std::string> schema_of(const std::string& db_path) {
  std::vector<std::string> rows;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db,
                               "SELECT type || ' ' || name || ' on ' || tbl_name || ': ' || "
                               "coalesce(sql, '') FROM sqlite_master ORDER BY type, name",
                               -1, &statement, nullptr),
            SQLITE_OK);
  while (sqlite3_step(statement) == SQLITE_ROW) {
    rows.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return rows;
}

int64_t query_int(const std::string& db_path, const std::string& sql) {
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

std::string query_text(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* statement = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr), SQLITE_OK) << sql;
  std::string value;
  if (sqlite3_step(statement) == SQLITE_ROW) {
    value = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

// The file format is a contract: a run.db written by the first release stays readable.
TEST(StoreReader, ReadsTheSchemaV1Fixture) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v1.sql", path);
  const Evidence seen = read_evidence(path);
  EXPECT_EQ(seen.schema_version, 1);
  EXPECT_EQ(seen.run.command.size(), 8u);
  EXPECT_EQ(seen.run.command.back(), "train.py");
  EXPECT_EQ(seen.run.hostname, "ci-runner");
  EXPECT_EQ(seen.run.exit_code, 1);
  EXPECT_EQ(seen.run.exit_signal, std::nullopt);

  ASSERT_EQ(seen.processes.size(), 4u);
  const ProcessRecord& launcher = seen.processes[0];
  EXPECT_EQ(launcher.pid, 501);
  EXPECT_EQ(launcher.rank, std::nullopt);
  EXPECT_EQ(launcher.end_source, EndSource::kSupervisor);
  const ProcessRecord& crashed = seen.processes[2];
  EXPECT_EQ(crashed.pid, 511);
  EXPECT_EQ(crashed.rank, 1);
  EXPECT_EQ(crashed.world_size, 2);
  EXPECT_EQ(crashed.rank_source, common::RankSource::kTorch);
  EXPECT_EQ(crashed.end_source, EndSource::kParent);
  EXPECT_EQ(crashed.exit_signal, 11);
  EXPECT_TRUE(crashed.core_dumped);
  const ProcessRecord& worker = seen.processes[3];
  EXPECT_TRUE(worker.forked);
  EXPECT_EQ(worker.end_source, EndSource::kVanished);

  ASSERT_EQ(seen.proc_samples.size(), 6u);
  EXPECT_EQ(seen.proc_samples[0].pss, 400'000'000u);
  EXPECT_EQ(seen.proc_samples[0].fd_limit, 1024);
  EXPECT_EQ(seen.proc_samples[5].pss, std::nullopt);
  EXPECT_DOUBLE_EQ(seen.proc_samples[5].cpu_user_s, 3.0);
  ASSERT_EQ(seen.host_samples.size(), 2u);
  EXPECT_EQ(seen.host_samples[0].cgroup_max, std::nullopt);
  EXPECT_EQ(seen.host_samples[1].cgroup_max, 12'000'000'000u);
  ASSERT_EQ(seen.events.size(), 1u);
  EXPECT_EQ(seen.events[0].kind, EventKind::kSignalForwarded);
  ASSERT_EQ(seen.logs.size(), 2u);
  EXPECT_EQ(seen.logs[1].files, (std::vector<std::string>{"logs/stderr.log", "logs/stderr.1.log"}));
  EXPECT_EQ(seen.logs[1].bytes_not_kept, 100u);
  // Schema 1 had no crashes and no log lines.
  EXPECT_TRUE(seen.crashes.empty());
  EXPECT_TRUE(seen.log_lines.empty());
  EXPECT_TRUE(seen.log_lines_dropped.empty());
  EXPECT_EQ(seen.crashes_dropped, 0u);
  EXPECT_EQ(read_evidence(path), seen);  // reading changed nothing

  // A writer of this build appends to it, after adding schema 2's tables.
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.add_event({kT0, EventKind::kScriptFinished, 1, ""});
    writer.write_crash(full_crash(511, 1100));
    writer.add_log_lines({{kT0, "stderr", 1, "appended"}});
  }
  const Evidence upgraded = read_evidence(path);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  EXPECT_EQ(upgraded.events.size(), 2u);
  EXPECT_EQ(upgraded.processes, seen.processes);
  EXPECT_EQ(upgraded.proc_samples, seen.proc_samples);
  ASSERT_EQ(upgraded.crashes.size(), 1u);
  EXPECT_EQ(upgraded.crashes[0], full_crash(511, 1100));
  ASSERT_EQ(upgraded.log_lines.size(), 1u);
  EXPECT_EQ(query_int(path, "SELECT value FROM meta WHERE key = 'schema_version'"), kSchemaVersion);
}

TEST(StoreReader, ReadsTheSchemaV2Fixture) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v2.sql", path);
  const Evidence seen = read_evidence(path);
  EXPECT_EQ(seen.schema_version, 2);
  ASSERT_EQ(seen.processes.size(), 4u);
  EXPECT_EQ(seen.processes[3].exit_signal, 6);

  // By time: the worker's abort, then rank 1's segfault.
  ASSERT_EQ(seen.crashes.size(), 2u);
  const Crash& abort = seen.crashes[0];
  EXPECT_EQ(abort.pid, 520);
  EXPECT_EQ(abort.start_ticks, 1200u);
  EXPECT_EQ(abort.thread_name, "pt_data_worker");
  EXPECT_EQ(abort.signo, 6);
  EXPECT_EQ(abort.code, -6);
  EXPECT_EQ(abort.sender_pid, 520);
  EXPECT_EQ(abort.time_ns, 1'700'000'020'000'000'000);
  EXPECT_EQ(abort.python_traceback, "");
  EXPECT_EQ(abort.python_note, "faulthandler is not enabled in this process");
  EXPECT_NE(abort.maps.find("\n7f1c2e200000-7f1c2e3a0000 r-xp"), std::string::npos);
  ASSERT_EQ(abort.frames.size(), 7u);
  EXPECT_EQ(abort.pc, abort.frames[0].address);
  EXPECT_EQ(abort.frames[0].function, "__pthread_kill_implementation");
  EXPECT_EQ(abort.frames[0].module, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(abort.frames[0].module_offset, 0x8a9fcu);
  const NativeFrame& decode = abort.frames[5];
  EXPECT_EQ(decode.function, "decode_jpeg(unsigned char const*, unsigned long)");
  EXPECT_EQ(decode.function_offset, 0x42u);
  EXPECT_EQ(decode.file, "src/decode.cpp");
  EXPECT_EQ(decode.line, 88);
  EXPECT_EQ(decode.inlined, std::vector<std::string>{"fastimg::Reader::next()"});

  const Crash& segv = seen.crashes[1];
  EXPECT_EQ(segv.pid, 511);
  EXPECT_EQ(segv.signo, 11);
  EXPECT_EQ(segv.code, 1);
  EXPECT_EQ(segv.fault_addr, 16u);
  EXPECT_EQ(segv.other_crashes, 1);
  EXPECT_EQ(segv.code_bytes, "488b4710c3");
  EXPECT_EQ(segv.stack_hi - segv.stack_lo, 0x21000u);
  EXPECT_TRUE(segv.python_traceback.starts_with("Fatal Python error: Segmentation fault\n"));
  EXPECT_NE(segv.python_traceback.find("line 42 in forward"), std::string::npos);
  ASSERT_EQ(segv.frames.size(), 4u);
  EXPECT_EQ(segv.frames[0].inlined.size(), 2u);
  EXPECT_EQ(segv.frames[0].inlined[0], "c10::TensorImpl::data<float>() const");
  EXPECT_EQ(segv.frames[1].module, "");  // in no file mapping
  EXPECT_EQ(segv.frames[1].function, "");
  EXPECT_EQ(segv.frames[3].function, "_PyEval_EvalFrameDefault");

  // By time, then stream, then number.
  ASSERT_EQ(seen.log_lines.size(), 6u);
  EXPECT_EQ(seen.log_lines[0].text, "starting training: 2 ranks");
  EXPECT_EQ(seen.log_lines[1].number, 12u);
  EXPECT_EQ(seen.log_lines[2].text, "  what():  fastimg: truncated JPEG");
  EXPECT_EQ(seen.log_lines[3].stream, "stderr");
  EXPECT_EQ(seen.log_lines[4].stream, "stdout");
  EXPECT_EQ(seen.log_lines[4].number, 24'990u);
  EXPECT_EQ(seen.log_lines[1].text,
            "terminate called after throwing an instance of 'std::runtime_error'");
  EXPECT_EQ(seen.log_lines_dropped, (std::map<std::string, uint64_t>{{"stdout", 5000}}));
  EXPECT_EQ(seen.crashes_dropped, 0u);

  // A writer of this build appends to it and replaces a crash by its key.
  {
    StoreWriter writer = StoreWriter::open(path);
    Crash symbolized_again = segv;
    symbolized_again.frames.resize(1);
    writer.write_crash(symbolized_again);
    writer.add_log_lines({{1'700'000'029'500'000'000, "stdout", 25'000, "last"}});
  }
  const Evidence appended = read_evidence(path);
  ASSERT_EQ(appended.crashes.size(), 2u);
  EXPECT_EQ(appended.crashes[1].frames.size(), 1u);
  EXPECT_EQ(appended.crashes[0], abort);
  EXPECT_EQ(appended.log_lines.back().text, "last");
}

TEST(StoreReader, ReadsTheSchemaV3Fixture) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v3.sql", path);
  const Evidence seen = read_evidence(path);
  EXPECT_EQ(seen.schema_version, 3);
  EXPECT_EQ(seen.crashes.size(), 2u);
  // By time; the row of a kind this build does not know is left out.
  ASSERT_EQ(seen.steps.size(), 6u);
  EXPECT_EQ(seen.steps[0],
            (StepSample{1'700'000'003'000'000'000, 510, 1100, StepKind::kOptimizer, 1}));
  EXPECT_EQ(seen.steps[1].kind, StepKind::kBackward);
  EXPECT_EQ(seen.steps[4].count, 1198);
  EXPECT_EQ(seen.steps[5],
            (StepSample{1'700'000'028'500'000'000, 511, 1100, StepKind::kOptimizer, 1200}));
}

// A v2 file has no steps; a writer of this build adds the table and appends to it.
TEST(StoreReader, AV2RunDbReadsWithoutStepsAndTakesThemOnceUpgraded) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v2.sql", path);
  EXPECT_TRUE(read_evidence(path).steps.empty());
  const StepSample step{kT0, 511, 1100, StepKind::kDdpForward, 7};
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.add_step_samples({step});
  }
  const Evidence upgraded = read_evidence(path);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  EXPECT_EQ(upgraded.steps, std::vector<StepSample>{step});
}

TEST(StoreReader, ReadsTheGpuTablesOfTheSchemaV3Fixture) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v3.sql", path);
  const Evidence seen = read_evidence(path);
  const GpuEvidence& gpu = seen.gpu;
  EXPECT_TRUE(gpu.nvml_loaded);
  EXPECT_NE(gpu.nvml_status.find("580.65.06"), std::string::npos);
  ASSERT_EQ(gpu.devices.size(), 2u);
  EXPECT_EQ(gpu.devices[1],
            (GpuDevice{1, "GPU-0a1b2c3d-0000-0000-0000-000000000001", "00000000:07:00.0",
                       "NVIDIA H100 80GB HBM3", 85'520'809'984}));
  ASSERT_EQ(gpu.samples.size(), 2u);
  EXPECT_EQ(gpu.samples[0].memory_used, 42'949'672'960u);
  EXPECT_EQ(gpu.samples[1].ecc_corrected, std::nullopt);
  EXPECT_EQ(gpu.samples[1].throttle_reasons, 4u);
  ASSERT_EQ(gpu.process_samples.size(), 4u);
  EXPECT_EQ(gpu.process_samples[1].pid, 511);
  EXPECT_EQ(gpu.process_samples[1].device, 0);
  EXPECT_EQ(gpu.process_samples[3].used_bytes, std::nullopt);
  EXPECT_EQ(gpu.process_samples[3].type, "graphics");
  ASSERT_EQ(gpu.processes.size(), 3u);
  EXPECT_EQ(gpu.processes[0].cmdline, "/usr/bin/Xorg :0");
  ASSERT_EQ(gpu.events.size(), 1u);
  EXPECT_EQ(gpu.events[0].code, 79u);
  ASSERT_EQ(gpu.cuda_env.size(), 2u);
  EXPECT_EQ(gpu.cuda_env[0].visible_devices, std::nullopt);
  EXPECT_EQ(gpu.cuda_env[1].visible_devices, "1");
  EXPECT_EQ(gpu.cuda_env[1].alloc_conf, std::nullopt);  // schema 3 has no such column
  EXPECT_EQ(read_evidence(path), seen);
}

// Schema 4 adds the allocator settings of each process; a v3 file upgraded by a writer of this
// build takes them from then on.
TEST(StoreReader, ReadsTheAllocatorSettingsOfSchemaV4AndOfAnUpgradedV3File) {
  TempDir dir;
  const std::string v4 = dir.file("v4.db");
  load_sql_fixture("schema_v4.sql", v4);
  const Evidence seen = read_evidence(v4);
  EXPECT_EQ(seen.schema_version, 4);
  ASSERT_EQ(seen.gpu.cuda_env.size(), 2u);
  EXPECT_EQ(seen.gpu.cuda_env[0].alloc_conf, std::nullopt);
  EXPECT_EQ(seen.gpu.cuda_env[1].alloc_conf, "expandable_segments:True");
  EXPECT_EQ(seen.gpu.cuda_env[1].visible_devices, "1");

  const std::string v3 = dir.file("v3.db");
  load_sql_fixture("schema_v3.sql", v3);
  const CudaEnv env{512, 1100, "0", "", "max_split_size_mb:128"};
  {
    StoreWriter writer = StoreWriter::open(v3);
    writer.write_cuda_env(env);
  }
  const Evidence upgraded = read_evidence(v3);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  ASSERT_EQ(upgraded.gpu.cuda_env.size(), 3u);
  EXPECT_EQ(upgraded.gpu.cuda_env[1].alloc_conf, std::nullopt);
  EXPECT_EQ(upgraded.gpu.cuda_env[2], env);
}

// Files of schema 2 have no GPU evidence: they read as "not sampled", and a writer of this build
// adds the GPU tables when it appends.
TEST(StoreReader, ASchemaV2FileHasNoGpuEvidenceUntilUpgraded) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v2.sql", path);
  EXPECT_EQ(read_evidence(path).gpu, GpuEvidence{});
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.write_gpu_status(false, "NVML not found", false);
  }
  const Evidence upgraded = read_evidence(path);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  EXPECT_EQ(upgraded.gpu.nvml_status, "NVML not found");
}

// Schema 5 adds what init_process_group was passed and the worker numbers DataLoaders gave; a v4
// file reads as if nothing was passed or told, and a v4 file upgraded by a writer of this build
// takes them from then on.
TEST(StoreReader, ReadsTheInitProcessGroupArgumentsOfSchemaV5AndOfAnUpgradedV4File) {
  TempDir dir;
  const std::string v5 = dir.file("v5.db");
  load_sql_fixture("schema_v5.sql", v5);
  const Evidence seen = read_evidence(v5);
  EXPECT_EQ(seen.schema_version, 5);
  ASSERT_EQ(seen.processes.size(), 4u);
  EXPECT_EQ(seen.processes[0].init_world_size, std::nullopt);  // the launcher
  EXPECT_EQ(seen.processes[2].pid, 511);
  EXPECT_EQ(seen.processes[2].init_rank, 1);
  EXPECT_EQ(seen.processes[2].init_world_size, 4);
  EXPECT_EQ(seen.processes[2].world_size, 2);
  EXPECT_EQ(seen.processes[3].pid, 520);
  EXPECT_EQ(seen.processes[3].worker_id, 0);
  EXPECT_EQ(seen.processes[2].worker_id, std::nullopt);

  const std::string v4 = dir.file("v4.db");
  load_sql_fixture("schema_v4.sql", v4);
  ProcessRecord rank = read_evidence(v4).processes[1];
  EXPECT_EQ(rank.init_rank, std::nullopt);
  EXPECT_EQ(rank.init_world_size, std::nullopt);
  EXPECT_EQ(rank.worker_id, std::nullopt);
  rank.init_world_size = 8;
  {
    StoreWriter writer = StoreWriter::open(v4);
    writer.upsert_process(rank);
  }
  const Evidence upgraded = read_evidence(v4);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  EXPECT_EQ(upgraded.processes[1], rank);
  EXPECT_EQ(upgraded.processes[2].init_world_size, std::nullopt);
}

// Schema 6 adds the pages of mapped files of each process sample's RSS; a v5 file reads as not
// sampled, and a v5 file upgraded by a writer of this build takes them from then on.
TEST(StoreReader, ReadsTheFilePagesOfSchemaV6AndOfAnUpgradedV5File) {
  TempDir dir;
  const std::string v6 = dir.file("v6.db");
  load_sql_fixture("schema_v6.sql", v6);
  const Evidence seen = read_evidence(v6);
  EXPECT_EQ(seen.schema_version, 6);
  ASSERT_EQ(seen.proc_samples.size(), 2u);
  EXPECT_EQ(seen.proc_samples[0].rss_file, 150000000u);
  EXPECT_EQ(seen.proc_samples[1].rss_file, std::nullopt);
  EXPECT_EQ(seen.processes[3].worker_id, 0);  // what schema 5 had still reads

  const std::string v5 = dir.file("v5.db");
  load_sql_fixture("schema_v5.sql", v5);
  ASSERT_FALSE(read_evidence(v5).proc_samples.empty());
  EXPECT_EQ(read_evidence(v5).proc_samples[0].rss_file, std::nullopt);
  ProcSample later = read_evidence(v5).proc_samples[0];
  later.t_ns += 1'000'000'000;
  later.rss_file = 4096;
  {
    StoreWriter writer = StoreWriter::open(v5);
    writer.add_proc_samples({later});
  }
  const Evidence upgraded = read_evidence(v5);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  EXPECT_EQ(upgraded.proc_samples.back(), later);
}

// Schema 7 adds the writers of a file the job wrote its output to; a v6 file's streams have
// none, and a v6 file upgraded by a writer of this build keeps them from then on.
TEST(StoreReader, ReadsTheWritersOfSchemaV7AndOfAnUpgradedV6File) {
  TempDir dir;
  const std::string v7 = dir.file("v7.db");
  load_sql_fixture("schema_v7.sql", v7);
  const Evidence seen = read_evidence(v7);
  EXPECT_EQ(seen.schema_version, 7);
  ASSERT_EQ(seen.logs.size(), 3u);
  EXPECT_TRUE(seen.logs[0].writers.empty());
  EXPECT_EQ(seen.logs[2].name, "/home/user/run/rank1.err");
  EXPECT_EQ(seen.logs[2].files, std::vector<std::string>{"logs/file-1.log"});
  EXPECT_EQ(seen.logs[2].writers, (std::vector<LogWriter>{{511, 2, 1700000001500000000}}));
  EXPECT_EQ(seen.proc_samples[0].rss_file, 150000000u);  // what schema 6 had still reads

  const std::string v6 = dir.file("v6.db");
  load_sql_fixture("schema_v6.sql", v6);
  ASSERT_EQ(read_evidence(v6).logs.size(), 2u);
  EXPECT_TRUE(read_evidence(v6).logs[1].writers.empty());
  LogStream file{.name = "/tmp/job/out.txt",
                 .bytes = 10,
                 .lines = 1,
                 .files = {"logs/file-1.log"},
                 .writers = {{510, 1, 5}, {510, 2, 5}}};
  {
    StoreWriter writer = StoreWriter::open(v6);
    writer.write_log_stream(file);
    writer.write_log_stream(file);  // written again at every sample: the same rows
  }
  const Evidence upgraded = read_evidence(v6);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  ASSERT_EQ(upgraded.logs.size(), 3u);
  EXPECT_EQ(upgraded.logs[2], file);
}

// Schema 8 tells a call that raised from one that returned; a v7 file's calls all returned (or
// did not), and a v7 file upgraded by a writer of this build keeps the difference from then on.
TEST(StoreReader, ReadsTheRaisedCallsOfSchemaV8AndOfAnUpgradedV7File) {
  TempDir dir;
  const std::string v8 = dir.file("v8.db");
  load_sql_fixture("schema_v8.sql", v8);
  const Evidence seen = read_evidence(v8);
  EXPECT_EQ(seen.schema_version, 8);
  ASSERT_EQ(seen.collectives.size(), 3u);
  EXPECT_FALSE(seen.collectives[0].raised);
  EXPECT_TRUE(seen.collectives[2].raised);
  EXPECT_EQ(seen.collectives[2].end_ns, 1'700'000'061'000'000'000);
  EXPECT_EQ(seen.logs[2].writers.size(), 1u);  // what schema 7 had still reads

  const std::string v7 = dir.file("v7.db");
  load_sql_fixture("schema_v7.sql", v7);
  ASSERT_EQ(read_evidence(v7).collectives.size(), 2u);
  EXPECT_FALSE(read_evidence(v7).collectives[0].raised);
  CollectiveCall raised = read_evidence(v7).collectives[0];
  raised.number = 2;
  raised.t_ns += 1'000'000'000;
  raised.end_ns = raised.t_ns + 30'000'000'000;
  raised.raised = true;
  {
    StoreWriter writer = StoreWriter::open(v7);
    writer.add_collectives({raised});
  }
  const Evidence upgraded = read_evidence(v7);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  ASSERT_EQ(upgraded.collectives.size(), 3u);
  EXPECT_FALSE(upgraded.collectives[0].raised);  // written before: NULL, read as returned
  EXPECT_EQ(upgraded.collectives[2], raised);
}

// Schema 9 holds an event's numbers in its columns; before, only its text said them, in words
// that a file of an older schema is read by (and that its upgrade fills the columns from).
TEST(StoreReader, ReadsTheEventNumbersOfSchemaV9AndFromTheTextsOfOlderFiles) {
  TempDir dir;
  const std::string v9 = dir.file("v9.db");
  load_sql_fixture("schema_v9.sql", v9);
  const Evidence seen = read_evidence(v9);
  EXPECT_EQ(seen.schema_version, 9);
  ASSERT_EQ(seen.events.size(), 3u);
  EXPECT_EQ(seen.events[0].kind, EventKind::kLabelOutOfRange);
  EXPECT_EQ(seen.events[0].a, 255);
  EXPECT_EQ(seen.events[0].b, 19);
  EXPECT_EQ(seen.events[1].kind, EventKind::kSignalForwarded);
  EXPECT_EQ(seen.events[1].a, SIGTERM);  // "SIGTERM to the job": its signal, in words
  EXPECT_EQ(seen.events[1].b, std::nullopt);
  EXPECT_EQ(seen.events[2].a, -500);
  EXPECT_EQ(seen.events[2].b, std::nullopt);

  // The texts an older traindoc wrote.
  const std::string v8 = dir.file("v8.db");
  load_sql_fixture("schema_v8.sql", v8);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(v8.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO events (t_ns, kind, pid, text) VALUES "
                         "(1, 'label-out-of-range', 511, 'label -3, 5 classes'), "
                         "(2, 'kill-sent', 501, 'pid 510'), "
                         "(3, 'kill-sent', 501, 'process group 500'), "
                         "(4, 'kill-sent', 510, 'its own process group'), "
                         "(5, 'kill-sent', 510, 'every process it may signal'), "
                         "(6, 'kill-sent', 510, 'pid of no number')",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto numbers = [](const Evidence& evidence) {
    std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> out;
    for (const Event& e : evidence.events) {
      if (e.kind != EventKind::kSignalForwarded) out.emplace_back(e.a, e.b);
    }
    return out;
  };
  const decltype(numbers(seen)) expected = {
      {-3, 5},           {510, std::nullopt}, {-500, std::nullopt},
      {0, std::nullopt}, {-1, std::nullopt},  {std::nullopt, std::nullopt}};
  EXPECT_EQ(numbers(read_evidence(v8)), expected);
  { StoreWriter::open(v8); }  // upgraded to schema 9: the columns filled from the texts
  const Evidence upgraded = read_evidence(v8);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  EXPECT_EQ(numbers(upgraded), expected);
}

// A signal-forwarded event said its signal and the processes it reached only in words up to
// schema 9, and its sender up to schema 10: files of 10 and before are read, and upgraded, from
// those words, and tell the same request as this build's facts.
TEST(StoreReader, ReadsTheFactsOfASignalForwardedFromTheWordsOfOlderFiles) {
  const char* kWords =
      "(1, 'signal-forwarded', 4242, 'SIGTERM from pid 4242 (slurmstepd), passed on to 3 "
      "process(es)'), "
      "(2, 'signal-forwarded', 0, 'SIGINT from the terminal, passed on to 0 process(es)'), "
      "(3, 'signal-forwarded', 7, 'SIGTERM from pid 7 (timeout), passed on to 0 process(es) (1 "
      "had it already)'), "
      "(4, 'signal-forwarded', 0, 'SIGKILL at the second interrupt, sent to 12 process(es)'), "
      "(5, 'signal-forwarded', 0, 'SIGHUP, sent to 2 process(es)'), "
      "(6, 'signal-forwarded', 0, 'SIGQUIT from the terminal, sent to 1 process(es)'), "
      "(7, 'signal-forwarded', 0, 'SIGUSR1 from nowhere'), "
      "(8, 'signal-forwarded', 0, 'SIGTERM from a process outside traindoc''s pid namespace (its "
      "container''s runtime or host: docker stop or a Kubernetes pod''s end), passed on to 2 "
      "process(es)'), "
      "(9, 'signal-forwarded', 4242, 'SIGTERM from pid 4242, passed on to 1 process(es)'), "
      "(10, 'signal-forwarded', 9, 'SIGHUP from pid 9 (a (b)), passed on to 2 process(es)')";
  using Told = std::tuple<std::optional<int64_t>, std::optional<int64_t>, std::string>;
  const std::vector<Told> expected = {
      {SIGTERM, 3, "SIGTERM from pid 4242 (slurmstepd)"},
      {SIGINT, 0, "SIGINT from the terminal"},
      {SIGTERM, 0, "SIGTERM from pid 7 (timeout)"},
      {SIGKILL, 12, "SIGKILL at the second interrupt"},
      {SIGHUP, 2, "SIGHUP"},
      {SIGQUIT, 1, "SIGQUIT from the terminal"},
      {std::nullopt, std::nullopt, "SIGUSR1 from nowhere"},
      {SIGTERM, 2, "SIGTERM from " + sender_words({0, SI_USER, ""})},
      {SIGTERM, 1, "SIGTERM from pid 4242"},
      {SIGHUP, 2, "SIGHUP from pid 9 (a (b))"}};
  auto told = [](const Evidence& evidence) {
    std::vector<Told> out;
    for (const Event& e : evidence.events) {
      if (e.kind == EventKind::kSignalForwarded && e.t_ns < 100) {
        out.emplace_back(e.a, e.b, forwarded_request(e));
      }
    }
    return out;
  };
  TempDir dir;
  for (const char* fixture : {"schema_v8.sql", "schema_v9.sql", "schema_v10.sql"}) {
    SCOPED_TRACE(fixture);
    const std::string path = dir.file(std::string(fixture) + ".db");
    load_sql_fixture(fixture, path);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(
            db,
            ("INSERT INTO events (t_ns, kind, pid, text) VALUES " + std::string(kWords)).c_str(),
            nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
    EXPECT_EQ(told(read_evidence(path)), expected);
    { StoreWriter::open(path); }  // an older file is upgraded: its columns filled from the words
    EXPECT_EQ(told(read_evidence(path)), expected);
  }
  // The frozen file of schema 11 holds its sender in columns.
  const std::string v11 = dir.file("v11.db");
  load_sql_fixture("schema_v11.sql", v11);
  const Evidence frozen = read_evidence(v11);
  auto stop = std::find_if(frozen.events.begin(), frozen.events.end(),
                           [](const Event& e) { return e.t_ns == 1700000029200000000; });
  ASSERT_NE(stop, frozen.events.end());
  EXPECT_EQ(stop->c, 0);
  EXPECT_EQ(stop->name, "slurmstepd");
  EXPECT_EQ(forwarded_request(*stop), "SIGTERM from pid 4242 (slurmstepd)");
  // This build's own events keep their facts, whatever their words.
  const std::string fresh = dir.file("run.db");
  const Event own{
      1,       EventKind::kSignalForwarded, 4242, "SIGINT, sent to 9 process(es)", 15, 4, SI_QUEUE,
      "sbatch"};
  { StoreWriter::open(fresh).add_event(own); }
  const std::vector<Event> events = read_evidence(fresh).events;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], own);
  EXPECT_EQ(forwarded_request(events[0]), "SIGTERM from pid 4242 (sbatch)");
}

// Schema 12 holds each process's own memory cgroup, samples of each and the kernel's OOM kills;
// an older file reads with none of them (its OOM evidence is traindoc's own cgroup's).
TEST(StoreReader, ReadsTheCgroupsOfSchemaV12AndNoneFromOlderFiles) {
  TempDir dir;
  const std::string v12 = dir.file("v12.db");
  load_sql_fixture("schema_v12.sql", v12);
  const Evidence seen = read_evidence(v12);
  EXPECT_EQ(seen.schema_version, 12);
  ASSERT_EQ(seen.process_cgroups.size(), 2u);
  EXPECT_EQ(seen.process_cgroups[1], (ProcessCgroup{1700000003000000000, 511, 1100, 2, "/job/rank1",
                                                    "/sys/fs/cgroup/job/rank1"}));
  ASSERT_EQ(seen.cgroup_samples.size(), 4u);
  EXPECT_EQ(seen.cgroup_samples[0], (CgroupSample{1700000002000000000, "/sys/fs/cgroup/job", 2,
                                                  6000000000, std::nullopt, "", 0}));
  EXPECT_EQ(seen.cgroup_samples[3].oom_kills, 1u);
  EXPECT_EQ(seen.cgroup_samples[3].max, 2147483648u);
  ASSERT_EQ(seen.kernel_oom_kills.size(), 1u);
  EXPECT_EQ(seen.kernel_oom_kills[0],
            (KernelOomKill{1700000028900000000, 511, "python3", true, "/job/rank1", "/job/rank1",
                           3000000000, 2100000000, 20000000, 0}));
  EXPECT_EQ(seen.kernel_oom_kills_dropped, 2u);
  const std::string v11 = dir.file("v11.db");
  load_sql_fixture("schema_v11.sql", v11);
  const Evidence older = read_evidence(v11);
  EXPECT_TRUE(older.process_cgroups.empty());
  EXPECT_TRUE(older.cgroup_samples.empty());
  EXPECT_TRUE(older.kernel_oom_kills.empty());
  // What this build writes reads back the same.
  const std::string fresh = dir.file("run.db");
  {
    StoreWriter writer = StoreWriter::open(fresh);
    writer.add_process_cgroup(seen.process_cgroups[1]);
    writer.add_cgroup_samples(seen.cgroup_samples);
    writer.add_kernel_oom_kill(seen.kernel_oom_kills[0]);
    writer.flush();
  }
  const Evidence again = read_evidence(fresh);
  EXPECT_EQ(again.process_cgroups, std::vector<ProcessCgroup>{seen.process_cgroups[1]});
  EXPECT_EQ(again.cgroup_samples, seen.cgroup_samples);
  EXPECT_EQ(again.kernel_oom_kills, seen.kernel_oom_kills);
}

// Schema 13 holds each sample's peak rss (VmHWM); older files read without it.
TEST(StoreReader, ReadsThePeakRssOfSchemaV13AndNoneFromOlderFiles) {
  TempDir dir;
  const std::string v13 = dir.file("v13.db");
  load_sql_fixture("schema_v13.sql", v13);
  const Evidence seen = read_evidence(v13);
  EXPECT_EQ(seen.schema_version, 13);
  ASSERT_EQ(seen.proc_samples.size(), 2u);
  EXPECT_EQ(seen.proc_samples[0].rss_peak, 650000000u);
  EXPECT_EQ(seen.proc_samples[1].rss_peak, std::nullopt);
  const std::string v12 = dir.file("v12.db");
  load_sql_fixture("schema_v12.sql", v12);
  EXPECT_EQ(read_evidence(v12).proc_samples[0].rss_peak, std::nullopt);
  // What this build writes reads back the same, and a v12 file upgraded takes the new rows.
  { StoreWriter::open(v12).add_proc_samples({seen.proc_samples[0]}); }
  EXPECT_EQ(read_evidence(v12).proc_samples.back(), seen.proc_samples[0]);
}

// Schema 14 holds the traps the preflight checks found as the run started; a check this build
// does not know is left out, and older files read with none.
TEST(StoreReader, ReadsThePreflightChecksOfSchemaV14AndNoneFromOlderFiles) {
  TempDir dir;
  const std::string v14 = dir.file("v14.db");
  load_sql_fixture("schema_v14.sql", v14);
  const Evidence seen = read_evidence(v14);
  EXPECT_EQ(seen.schema_version, 14);
  ASSERT_EQ(seen.preflight.size(), 2u);
  EXPECT_EQ(seen.preflight_ns, 1700000000100000000);
  EXPECT_EQ(seen.preflight[0].check, PreflightCheck::kShmSmall);
  EXPECT_EQ(seen.preflight[0].verdict, Verdict::kMayFail);
  EXPECT_EQ(seen.preflight[0].measured, 67108864);
  EXPECT_EQ(seen.preflight[0].device, std::nullopt);
  EXPECT_EQ(seen.preflight[1].device, 1);
  EXPECT_EQ(seen.preflight[1].pid, 4242);
  EXPECT_EQ(seen.preflight[1].subject, "python other.py");
  const std::string v13 = dir.file("v13.db");
  load_sql_fixture("schema_v13.sql", v13);
  EXPECT_TRUE(read_evidence(v13).preflight.empty());
  // What this build writes reads back the same, and a v13 file upgraded takes the new rows.
  { StoreWriter::open(v13).write_preflight(42, seen.preflight); }
  const Evidence upgraded = read_evidence(v13);
  EXPECT_EQ(upgraded.preflight, seen.preflight);
  EXPECT_EQ(upgraded.preflight_ns, 42);
}

// Schema 15 holds the caching allocator's state at each out-of-memory error, with the sites of
// its live allocations; a site whose state is missing is left out, and older files read with none.
TEST(StoreReader, ReadsTheAllocatorStatesOfSchemaV15AndNoneFromOlderFiles) {
  TempDir dir;
  const std::string v15 = dir.file("v15.db");
  load_sql_fixture("schema_v15.sql", v15);
  const Evidence seen = read_evidence(v15);
  EXPECT_EQ(seen.schema_version, 15);
  ASSERT_EQ(seen.allocator_states.size(), 2u);
  const AllocatorState& first = seen.allocator_states[0];
  EXPECT_EQ(first.pid, 4242);
  EXPECT_EQ(first.device, 1);
  EXPECT_EQ(first.requested, 2147483648u);
  EXPECT_EQ(first.largest_free, 1073741824u);
  EXPECT_FALSE(first.history);
  EXPECT_TRUE(first.sites.empty());
  const AllocatorState& second = seen.allocator_states[1];
  EXPECT_EQ(second.number, 1);
  EXPECT_EQ(second.pending_free, std::nullopt);
  EXPECT_TRUE(second.history);
  EXPECT_EQ(second.snapshot, "allocator/oom-4242-1.pickle");
  ASSERT_EQ(second.sites.size(), 2u);
  EXPECT_EQ(second.sites[0].file, "/home/u/train.py");
  EXPECT_EQ(second.sites[0].line, 41);
  EXPECT_EQ(second.sites[0].blocks, 30u);
  EXPECT_EQ(second.sites[1].function, "__init__");
  EXPECT_EQ(second.sites[1].smallest, 2147483648u);
  const std::string v14 = dir.file("v14.db");
  load_sql_fixture("schema_v14.sql", v14);
  EXPECT_TRUE(read_evidence(v14).allocator_states.empty());
  // What this build writes reads back the same, and a v14 file upgraded takes the new rows.
  {
    StoreWriter writer = StoreWriter::open(v14);
    for (const AllocatorState& s : seen.allocator_states) writer.write_allocator_state(s);
  }
  EXPECT_EQ(read_evidence(v14).allocator_states, seen.allocator_states);
}

// The golden check: the schema this build creates is the one frozen in schema_v15.sql. A change
// to the DDL must come with a new schema version and a new fixture (docs/run-db.md).
TEST(StoreReader, NewRunDbHasExactlyTheSchemaOfTheV15Fixture) {
  TempDir dir;
  const std::string fixture = dir.file("fixture.db");
  load_sql_fixture("schema_v15.sql", fixture);
  const std::string fresh = dir.file("run.db");
  { StoreWriter::open(fresh); }
  const std::vector<std::string> want = schema_of(fixture);
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(schema_of(fresh), want);
  EXPECT_EQ(query_int(fresh, "PRAGMA user_version"), 15);
  // A v3 file upgraded by this build has the same schema.
  const std::string upgraded = dir.file("upgraded.db");
  load_sql_fixture("schema_v3.sql", upgraded);
  { StoreWriter::open(upgraded); }
  EXPECT_EQ(schema_of(upgraded), want);
}

// Schema 10 holds a collective issue's facts in columns; schema 9 and before held its sentence
// and each rank's state in words, which a file of such a schema is read by (also once upgraded:
// its rows keep NULL in the new columns).
TEST(StoreReader, ReadsTheCollectiveFactsOfSchemaV10AndFromTheWordsOfOlderFiles) {
  TempDir dir;
  const std::string v10 = dir.file("v10.db");
  load_sql_fixture("schema_v10.sql", v10);
  const Evidence seen = read_evidence(v10);
  EXPECT_EQ(seen.schema_version, 10);
  ASSERT_EQ(seen.collective_issues.size(), 1u);
  const CollectiveIssue& mismatch = seen.collective_issues[0];
  EXPECT_EQ(mismatch.group_size, 2);
  EXPECT_TRUE(mismatch.default_group);
  EXPECT_TRUE(mismatch.words.empty());
  ASSERT_EQ(mismatch.ranks.size(), 2u);
  EXPECT_EQ(mismatch.ranks[1].state, RankState::kCalled);
  EXPECT_EQ(mismatch.ranks[1].op, "all_reduce");
  EXPECT_EQ(mismatch.ranks[1].job_rank, 1);
  EXPECT_EQ(issue_line(mismatch), query_text(v10, "SELECT message FROM collective_issues"));

  const std::string v9 = dir.file("v9.db");
  load_sql_fixture("schema_v9.sql", v9);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(v9.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(
          db,
          "INSERT INTO collective_issues VALUES (2, 5, 4, 'peer-exited', 7, 2, 'recv', 'missing', "
          "'peer-exited: rank 1 never made the send to rank 0 that rank 0 waits for in recv #2', "
          "0),"
          " (3, 6, 4, 'collective-missing', 8, 3, 'all_reduce', 'late', 'collective-missing: "
          "rank 1 made all_reduce #3 9.0 s after the others', 0);"
          "INSERT INTO collective_issue_ranks VALUES "
          "(2, 0, 0, 510, 1, '', '', 'the odd one: waiting in it', '', 1, ''),"
          " (2, 1, 1, 511, 1, '', '', 'killed by SIGABRT after its program finished without "
          "calling it', '', 1, ''),"
          " (2, 2, 2, 512, 1, '', '', 'exited 0; never calls from there', '', 0, ''),"
          " (2, 3, 3, 513, 1, '', '', 'waits in recv from rank 1', '', 0, ''),"
          " (2, 4, 4, 514, 1, '', '', 'killed by signal 40 without calling it', '', 0, ''),"
          " (3, 0, 0, 510, 1, '0.0 s', '', 'waited in it', '', 2, ''),"
          " (3, 1, 1, 511, 1, '9.0 s', '', 'made it 9.0 s after the first rank', '', 2, '')",
          nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  auto expect_facts = [](const Evidence& old) {
    ASSERT_EQ(old.collective_issues.size(), 3u);
    const CollectiveIssue& exited = old.collective_issues[1];
    EXPECT_EQ(exited.kind, IssueKind::kPeerExited);
    EXPECT_EQ(exited.field, IssueField::kMissing);
    EXPECT_TRUE(exited.pair);
    EXPECT_EQ(issue_title(exited),
              "rank 1 never made the send to rank 0 that rank 0 waits for in "
              "recv #2");
    ASSERT_EQ(exited.ranks.size(), 5u);
    EXPECT_EQ(exited.ranks[0].state, RankState::kWaiting);
    EXPECT_TRUE(exited.ranks[0].odd);
    EXPECT_EQ(exited.ranks[1].state, RankState::kNeverCalled);
    EXPECT_EQ(exited.ranks[1].end, (RankEnd{.exit_signal = SIGABRT, .finished = true}));
    EXPECT_EQ(exited.ranks[2].state, RankState::kNeverCallsFromThere);
    EXPECT_EQ(exited.ranks[2].end, (RankEnd{.exit_code = 0}));
    EXPECT_EQ(exited.ranks[3].state, RankState::kWaitsIn);
    EXPECT_EQ(exited.ranks[3].op, "recv");
    EXPECT_EQ(exited.ranks[3].peer, 1);
    EXPECT_EQ(exited.ranks[4].end, (RankEnd{.exit_signal = 40}));
    for (size_t r = 0; r < 4; ++r) {  // the words they were read from, made again
      EXPECT_EQ(rank_state_text(exited, exited.ranks[r]),
                std::vector<std::string>({"the odd one: waiting in it",
                                          "killed by SIGABRT after its program finished without "
                                          "calling it",
                                          "exited 0; never calls from there",
                                          "waits in recv from rank 1"})[r]);
    }
    const CollectiveIssue& late = old.collective_issues[2];
    EXPECT_EQ(late.field, IssueField::kLate);
    EXPECT_EQ(late.ranks[0].state, RankState::kWaited);
    EXPECT_EQ(late.ranks[1].state, RankState::kCameLate);
    EXPECT_EQ(late.ranks[1].late_ns, 9 * kSecond);
    EXPECT_EQ(rank_state_text(late, late.ranks[1]), "made it 9.0 s after the first rank");
  };
  expect_facts(read_evidence(v9));
  { StoreWriter::open(v9); }  // upgraded to schema 10: the old rows keep their words only
  const Evidence upgraded = read_evidence(v9);
  EXPECT_EQ(upgraded.schema_version, kSchemaVersion);
  expect_facts(upgraded);
}

TEST(StoreReader, ReadsTheSchemaV3FixtureCollectives) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  load_sql_fixture("schema_v3.sql", path);
  const Evidence seen = read_evidence(path);
  EXPECT_EQ(seen.schema_version, 3);
  EXPECT_EQ(seen.crashes.size(), 2u);  // what schema 2 had still reads
  ASSERT_EQ(seen.collectives.size(), 2u);
  EXPECT_EQ(seen.collectives[1].pid, 511);
  EXPECT_EQ(seen.collectives[1].group, 13303997638879916043ULL);  // stored as a negative int64
  EXPECT_EQ(seen.collectives[1].tensors, "[20] float32");
  EXPECT_EQ(seen.collectives[0].end_ns, 1'700'000'030'001'000'000);
  EXPECT_EQ(seen.collectives_dropped, 7u);
  ASSERT_EQ(seen.collective_issues.size(), 1u);
  const CollectiveIssue& issue = seen.collective_issues[0];
  EXPECT_EQ(issue.kind, IssueKind::kMismatch);
  EXPECT_EQ(issue.field, IssueField::kShape);
  EXPECT_EQ(issue.words, "all_reduce #1 shape differs");  // schema 3 held no facts to make it from
  ASSERT_EQ(issue.ranks.size(), 2u);
  EXPECT_EQ(issue.ranks[1].state, RankState::kCalled);
  EXPECT_EQ(issue.ranks[1].value, "[20] float32");
  EXPECT_EQ(issue.ranks[1].site, "/job/train.py:6");
}

TEST(StoreReader, CollectivesAndIssuesRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  CollectiveCall call;
  call.t_ns = 5;
  call.pid = 42;
  call.group = ~uint64_t{0};
  call.number = 3;
  call.op = "broadcast";
  call.peer = 1;
  call.site = "a.py:1";
  call.async = true;
  CollectiveIssue issue;
  issue.kind = IssueKind::kPeerExited;
  issue.field = IssueField::kMissing;
  issue.group = call.group;
  issue.group_size = 3;
  issue.default_group = true;
  issue.wait_end = WaitEnd::kRankEnded;
  issue.wait_end_rank = 1;
  issue.waited_ns = 31;
  issue.quiet_ns = 30;
  issue.sites_differed_at = 2;
  issue.aborted = true;
  CollectiveIssueRank missing;
  missing.group_rank = 1;
  missing.job_rank = 2;
  missing.pid = 43;
  missing.state = RankState::kNeverCalled;
  missing.end = RankEnd{.exit_signal = 6, .finished = true};
  missing.stack = "python:\n";
  issue.ranks.push_back(missing);
  {
    StoreWriter writer = StoreWriter::open(path, {.max_collectives = 1});
    writer.add_collectives({call, call});
    writer.add_collective_issue(issue);
  }
  const Evidence seen = read_evidence(path);
  ASSERT_EQ(seen.collectives.size(), 1u);
  EXPECT_EQ(seen.collectives[0], call);
  EXPECT_EQ(seen.collectives_dropped, 1u);
  ASSERT_EQ(seen.collective_issues.size(), 1u);
  EXPECT_EQ(seen.collective_issues[0], issue);
  // The words beside the facts, for people who read the file with sqlite3.
  EXPECT_EQ(query_text(path, "SELECT state FROM collective_issue_ranks"),
            "killed by SIGABRT after its program finished without calling it");
}

// A call stored before it returned gets its end later; another process's call of the same
// number, and a call beyond max_collectives, are left as they are.
TEST(StoreReader, ACallStoredOpenIsEndedInPlace) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  CollectiveCall open;
  open.t_ns = 5;
  open.pid = 42;
  open.start_ticks = 7;
  open.group = ~uint64_t{0};
  open.number = 3;
  CollectiveCall other = open;
  other.pid = 43;
  CollectiveCall ended = open;
  ended.end_ns = 3'000'000'005;
  ended.raised = true;
  CollectiveCall unstored = open;
  unstored.number = 4;
  {
    StoreWriter writer = StoreWriter::open(path, {.max_collectives = 2});
    writer.add_collectives({open, other});
    writer.end_collectives({ended, unstored});
  }
  const Evidence seen = read_evidence(path);
  ASSERT_EQ(seen.collectives.size(), 2u);
  EXPECT_EQ(seen.collectives[0], ended);
  EXPECT_EQ(seen.collectives[1], other);
}

// Upgrading keeps schema 1's tables as they are and adds the later ones: the same file as a new
// one.
TEST(StoreReader, AnUpgradedV1RunDbHasTheSchemaOfANewOne) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  load_sql_fixture("schema_v1.sql", path);
  { StoreWriter::open(path); }
  const std::string fresh = dir.file("run.db");
  { StoreWriter::open(fresh); }
  EXPECT_EQ(schema_of(path), schema_of(fresh));
  EXPECT_EQ(query_int(path, "PRAGMA user_version"), kSchemaVersion);
}

TEST(StoreReader, RefusesAMissingFile) {
  TempDir dir;
  expect_store_error(dir.file("absent.db"), "cannot open");
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));  // and did not create it
}

TEST(StoreReader, RefusesAnEmptyFile) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  write_file(path, "");
  expect_store_error(path, "empty file");
}

TEST(StoreReader, RefusesGarbage) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  write_file(path, std::string(4096, 'x') + "this is a log file, not a database\n");
  expect_store_error(path, "not a readable SQLite database");
}

TEST(StoreReader, RefusesATextFileShorterThanAHeader) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  write_file(path, "hello\n");
  expect_store_error(path, "not a readable SQLite database");
}

TEST(StoreReader, RefusesAFolder) {
  TempDir dir;
  expect_store_error(dir.path().string(), "run database");
}

TEST(StoreReader, RefusesATruncatedDatabase) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.write_run(full_run());
    for (int i = 0; i < 5000; ++i) writer.add_proc_samples({full_proc_sample(i % 30, kT0 + i)});
    for (int i = 0; i < 500; ++i)
      writer.add_event({kT0 + i, EventKind::kJobIdle, 1, std::string(100, 'e')});
  }
  // The last close checkpointed the WAL into the main file and removed it.
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  const auto size = std::filesystem::file_size(path);
  ASSERT_GT(size, 100'000u);
  std::filesystem::resize_file(path, size / 2);
  expect_store_error(path, "malformed");
}

TEST(StoreReader, RefusesAFutureSchemaVersion) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  { StoreWriter::open(path).write_run(full_run()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string bump = "PRAGMA user_version = " + std::to_string(kSchemaVersion + 1);
  ASSERT_EQ(sqlite3_exec(db, bump.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_store_error(path, "newer traindoc");
  EXPECT_THROW(StoreWriter::open(path), StoreError);
}

TEST(StoreReader, RefusesAnUnknownOlderSchemaVersion) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  { StoreWriter::open(path).write_run(full_run()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 0", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_store_error(path, "unknown schema version 0");
}

TEST(StoreReader, RefusesAnotherSqliteDatabase) {
  TempDir dir;
  const std::string path = dir.file("places.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE meta (key, value); PRAGMA user_version = 1;", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  expect_store_error(path, "not a traindoc run database");
}

TEST(StoreReader, RefusesAV2RunDbWithoutItsCrashTables) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  { StoreWriter::open(path).write_crash(full_crash(1, 1)); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE crash_inlined", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_store_error(path, "no such table");
}

TEST(StoreReader, RefusesARunDbWithATableMissing) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  { StoreWriter::open(path).write_run(full_run()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DROP TABLE host_samples", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_store_error(path, "no such table");
}

}  // namespace
}  // namespace traindoc::store
