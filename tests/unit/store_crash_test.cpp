// Unit tests of schema 2's evidence in run.db: crashes with their native frames, replaced by
// (pid, start_ticks), and log lines with their per-stream bound. Test process only.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <string>
#include <vector>

#include "store/store_reader.h"
#include "store/store_writer.h"
#include "store_test_util.h"

namespace traindoc::store {
namespace {

using test::full_crash;
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

void exec(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  const std::string message = error ? error : "";
  sqlite3_free(error);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << message;
}

// The agent's record as the supervisor writes it first: no frames symbolized yet.
Crash raw_crash(int pid, uint64_t start_ticks) {
  Crash c;
  c.pid = pid;
  c.start_ticks = start_ticks;
  c.tid = pid;
  c.signo = 6;
  c.code = -6;  // SI_TKILL: abort()
  c.sender_pid = pid;
  c.time_ns = kT0 + 10 * kSecond + pid;
  c.pc = 0x7F00'0000'1000ULL;
  c.python_note = "faulthandler was not enabled";
  return c;
}

std::vector<uint64_t> numbers(const Evidence& evidence, const std::string& stream) {
  std::vector<uint64_t> out;
  for (const LogLine& line : evidence.log_lines) {
    if (line.stream == stream) out.push_back(line.number);
  }
  return out;
}

std::vector<uint64_t> range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  for (uint64_t n = first; n <= last; ++n) out.push_back(n);
  return out;
}

LogLine line(const std::string& stream, uint64_t number) {
  return {kT0 + static_cast<int64_t>(number) * kSecond, stream, number,
          stream + " line " + std::to_string(number)};
}

TEST(StoreCrash, RoundTripsCrashesWithFrames) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  const Crash symbolized = full_crash(511, 0xF000'0000'0000'0001ULL);  // above INT64_MAX
  Crash bare;                                                          // every field zero or empty
  bare.pid = 512;
  Crash reused = raw_crash(511, 77);  // the same pid, another process
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.write_crash(symbolized);
    writer.write_crash(bare);
    writer.write_crash(reused);
  }
  const Evidence evidence = read_evidence(path);
  // By time: bare (0), reused (t0 + 10 s), symbolized (t0 + 42 s).
  ASSERT_EQ(evidence.crashes.size(), 3u);
  EXPECT_EQ(evidence.crashes[0], bare);
  EXPECT_EQ(evidence.crashes[1], reused);
  EXPECT_EQ(evidence.crashes[2], symbolized);
  const std::vector<NativeFrame>& frames = evidence.crashes[2].frames;
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0].inlined.size(), 2u);  // innermost first, as written
  EXPECT_EQ(frames[0].inlined[0], "c10::TensorImpl::data<float>() const");
  EXPECT_EQ(frames[1].module, "");
  EXPECT_TRUE(frames[1].inlined.empty());
  EXPECT_EQ(frames[2].inlined, std::vector<std::string>{""});
  EXPECT_EQ(evidence.crashes_dropped, 0u);
}

TEST(StoreCrash, ReplacesByKeyWithFramesWhole) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  StoreWriter writer = StoreWriter::open(path);
  writer.write_crash(raw_crash(900, 1));  // another crash, untouched by what follows
  Crash crash = full_crash(511, 1100);
  Crash raw = crash;
  raw.frames.clear();
  raw.python_traceback = "";
  writer.write_crash(raw);
  writer.flush();
  ASSERT_EQ(read_evidence(path).crashes.at(1), raw);
  const int64_t id = query(path, "SELECT id FROM crashes WHERE pid = 511");

  writer.write_crash(crash);  // symbolized
  writer.flush();
  EXPECT_EQ(read_evidence(path).crashes.at(1), crash);

  // Fewer frames, fewer inlined functions, a field cleared: nothing of the old record is left.
  crash.frames.resize(1);
  crash.frames[0].inlined = {"only"};
  crash.maps = "";
  crash.other_crashes = 0;
  writer.write_crash(crash);
  writer.flush();
  const Evidence evidence = read_evidence(path);
  ASSERT_EQ(evidence.crashes.size(), 2u);
  EXPECT_EQ(evidence.crashes[0], raw_crash(900, 1));
  EXPECT_EQ(evidence.crashes[1], crash);
  EXPECT_EQ(query(path, "SELECT count(*) FROM crashes"), 2);
  EXPECT_EQ(query(path, "SELECT id FROM crashes WHERE pid = 511"), id);  // the id stays
  EXPECT_EQ(query(path, "SELECT count(*) FROM crash_frames"), 1);
  EXPECT_EQ(query(path, "SELECT count(*) FROM crash_inlined"), 1);
}

TEST(StoreCrash, KeepsTheFirstCrashesUpToTheCap) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  WriterOptions options;
  options.max_crashes = 3;
  {
    StoreWriter writer = StoreWriter::open(path, options);
    for (int pid = 1; pid <= 5; ++pid) writer.write_crash(raw_crash(pid, 100));
    // At the cap, a crash already kept is still replaced (its frames arrive later).
    writer.write_crash(full_crash(2, 100));
  }
  Evidence evidence = read_evidence(path);
  ASSERT_EQ(evidence.crashes.size(), 3u);
  EXPECT_EQ(evidence.crashes[0].pid, 1);
  EXPECT_EQ(evidence.crashes[1].pid, 3);
  EXPECT_EQ(evidence.crashes[2], full_crash(2, 100));  // its time is now t0 + 42 s
  EXPECT_EQ(evidence.crashes_dropped, 2u);

  // Reopening continues the same count.
  {
    StoreWriter writer = StoreWriter::open(path, options);
    writer.write_crash(raw_crash(6, 100));
  }
  evidence = read_evidence(path);
  EXPECT_EQ(evidence.crashes.size(), 3u);
  EXPECT_EQ(evidence.crashes_dropped, 3u);
  EXPECT_EQ(query(path, "SELECT value FROM meta WHERE key = 'crashes_dropped'"), 3);
  EXPECT_EQ(query(path, "SELECT value FROM meta WHERE key = 'max_crashes'"), 3);
}

TEST(StoreCrash, ReaderSkipsFramesOfNoCrash) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  { StoreWriter::open(path).write_crash(full_crash(511, 1100)); }
  // What a damaged or hand-edited file may hold: frames of a crash that is not there, inlined
  // functions of a frame that is not there, and a gap in the positions.
  exec(path,
       "INSERT INTO crash_frames VALUES (999, 0, 1, 'm', 0, 'f', 0, '', 0);"
       "INSERT INTO crash_inlined VALUES (999, 0, 0, 'x');"
       "INSERT INTO crash_inlined (crash_id, frame, position, function) "
       "  SELECT id, 7, 0, 'y' FROM crashes;"
       "UPDATE crash_frames SET position = position + 10 WHERE position = 2;"
       "UPDATE crash_inlined SET frame = frame + 10 WHERE frame = 2;");
  const Evidence evidence = read_evidence(path);
  ASSERT_EQ(evidence.crashes.size(), 1u);
  EXPECT_EQ(evidence.crashes[0], full_crash(511, 1100));
}

TEST(StoreLogLines, RoundTripInTimeOrder) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  const std::vector<LogLine> lines = {
      {kT0 + 2, "stderr", 2, "Traceback (most recent call last):"},
      {kT0 + 1, "stdout", 1, "epoch 0 — loss 2.3"},
      {kT0 + 2, "stderr", 1, ""},  // the same time: by stream, then number
      {kT0 + 2, "stdout", 7, std::string("with\0nul", 8)},
      {kT0 + 3, "stdout", 0xF000'0000'0000'0000ULL, std::string(4096, 'x')},
  };
  {
    StoreWriter writer = StoreWriter::open(path);
    writer.add_log_lines(lines);
    writer.add_log_lines({});
  }
  const Evidence evidence = read_evidence(path);
  const std::vector<LogLine> want = {lines[1], lines[2], lines[0], lines[3], lines[4]};
  EXPECT_EQ(evidence.log_lines, want);
  EXPECT_TRUE(evidence.log_lines_dropped.empty());
}

// The bound must not depend on how the lines were batched.
class StoreLogLineBound : public ::testing::TestWithParam<int> {};

TEST_P(StoreLogLineBound, KeepsTheFirstAndTheNewestPerStream) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  WriterOptions options;
  options.max_log_lines_per_stream = 10;
  options.log_lines_kept_first = 4;
  const int batch = GetParam();
  {
    StoreWriter writer = StoreWriter::open(path, options);
    std::vector<LogLine> pending;
    for (uint64_t n = 1; n <= 25; ++n) {
      pending.push_back(line("stdout", n));
      if (n <= 3) pending.push_back(line("stderr", n));  // under the bound: all kept
      if (pending.size() >= static_cast<size_t>(batch)) {
        writer.add_log_lines(pending);
        pending.clear();
      }
    }
    writer.add_log_lines(pending);
  }
  Evidence evidence = read_evidence(path);
  std::vector<uint64_t> want = range(1, 4);
  for (uint64_t n : range(20, 25)) want.push_back(n);
  EXPECT_EQ(numbers(evidence, "stdout"), want);
  EXPECT_EQ(numbers(evidence, "stderr"), range(1, 3));
  EXPECT_EQ(evidence.log_lines_dropped, (std::map<std::string, uint64_t>{{"stdout", 15}}));
  EXPECT_EQ(query(path, "SELECT value FROM meta WHERE key = 'log_lines_dropped:stdout'"), 15);

  // Reopening continues the same counts.
  {
    StoreWriter writer = StoreWriter::open(path, options);
    writer.add_log_lines({line("stdout", 26)});
  }
  evidence = read_evidence(path);
  want = range(1, 4);
  for (uint64_t n : range(21, 26)) want.push_back(n);
  EXPECT_EQ(numbers(evidence, "stdout"), want);
  EXPECT_EQ(evidence.log_lines_dropped.at("stdout"), 16u);
}

INSTANTIATE_TEST_SUITE_P(Batches, StoreLogLineBound, ::testing::Values(1, 3, 7, 100));

TEST(StoreLogLines, DefaultBoundIsTwentyThousandPerStream) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  {
    StoreWriter writer = StoreWriter::open(path);
    std::vector<LogLine> lines;
    for (uint64_t n = 1; n <= 25'000; ++n) lines.push_back(line("stderr", n));
    for (size_t i = 0; i < lines.size(); i += 1000) {
      writer.add_log_lines({lines.begin() + static_cast<std::ptrdiff_t>(i),
                            lines.begin() + static_cast<std::ptrdiff_t>(i + 1000)});
    }
  }
  const Evidence evidence = read_evidence(path);
  std::vector<uint64_t> want = range(1, 2'000);
  for (uint64_t n : range(7'001, 25'000)) want.push_back(n);
  EXPECT_EQ(numbers(evidence, "stderr"), want);
  EXPECT_EQ(evidence.log_lines_dropped.at("stderr"), 5'000u);
}

TEST(StoreLogLines, ZeroBoundStoresNoneButCounts) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  WriterOptions options;
  options.max_log_lines_per_stream = 0;  // log_lines_kept_first is clamped to it
  {
    StoreWriter writer = StoreWriter::open(path, options);
    writer.add_log_lines({line("stdout", 1), line("stderr", 1), line("stdout", 2)});
  }
  const Evidence evidence = read_evidence(path);
  EXPECT_TRUE(evidence.log_lines.empty());
  EXPECT_EQ(evidence.log_lines_dropped,
            (std::map<std::string, uint64_t>{{"stderr", 1}, {"stdout", 2}}));
}

TEST(StoreLogLines, KeptFirstAboveTheBoundKeepsOnlyTheFirst) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  WriterOptions options;
  options.max_log_lines_per_stream = 3;
  options.log_lines_kept_first = 50;
  {
    StoreWriter writer = StoreWriter::open(path, options);
    for (uint64_t n = 1; n <= 6; ++n) writer.add_log_lines({line("stdout", n)});
  }
  const Evidence evidence = read_evidence(path);
  EXPECT_EQ(numbers(evidence, "stdout"), range(1, 3));
  EXPECT_EQ(evidence.log_lines_dropped.at("stdout"), 3u);
}

TEST(StoreLogLines, RejectsNegativeBounds) {
  TempDir dir;
  WriterOptions options;
  options.max_crashes = -1;
  EXPECT_THROW(StoreWriter::open(dir.file("run.db"), options), std::invalid_argument);
  options = {};
  options.log_lines_kept_first = -1;
  EXPECT_THROW(StoreWriter::open(dir.file("run.db"), options), std::invalid_argument);
}

}  // namespace
}  // namespace traindoc::store
