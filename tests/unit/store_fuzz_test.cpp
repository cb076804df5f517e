// Fuzz-style unit tests of read_evidence: random files and randomly damaged run.db files must
// give a StoreError or a result, never a crash or another exception. Test process only; fixed
// seeds so that a failure reproduces (tests/fuzz holds the open-ended fuzz targets).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

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
using test::kT0;
using test::read_file;
using test::TempDir;
using test::write_file;

enum class Outcome { kRead, kRefused, kBroken };

// Reads `bytes` as a run.db: a result, a StoreError, or anything else (a failure).
Outcome read_bytes(const std::string& path, const std::string& bytes) {
  std::error_code ignored;
  std::filesystem::remove(path + "-wal", ignored);
  std::filesystem::remove(path + "-shm", ignored);
  write_file(path, bytes);
  try {
    read_evidence(path);
    return Outcome::kRead;
  } catch (const StoreError&) {
    return Outcome::kRefused;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
  }
  return Outcome::kBroken;
}

TEST(StoreFuzz, RandomBytes) {
  TempDir dir;
  const std::string path = dir.file("run.db");
  std::mt19937_64 random(20240611);
  const std::string magic("SQLite format 3\0", 16);
  for (int i = 0; i < 300; ++i) {
    std::string bytes(random() % 9000, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    // Half of them pass the first check: a valid magic string and a plausible page size.
    if (i % 2 == 0 && bytes.size() >= 100) {
      bytes.replace(0, magic.size(), magic);
      bytes[16] = 0x10;  // page size 4096
      bytes[17] = 0x00;
    }
    ASSERT_NE(read_bytes(path, bytes), Outcome::kBroken) << "iteration " << i;
  }
}

TEST(StoreFuzz, DamagedRunDb) {
  TempDir dir;
  const std::string source = dir.file("source.db");
  {
    StoreWriter writer = StoreWriter::open(source);
    writer.write_run(full_run());
    for (int pid = 1; pid <= 8; ++pid) writer.upsert_process(full_process(pid));
    for (int i = 0; i < 400; ++i) writer.add_proc_samples({full_proc_sample(i % 8 + 1, kT0 + i)});
    for (int i = 0; i < 50; ++i) writer.add_host_sample(full_host_sample(kT0 + i));
    for (int i = 0; i < 50; ++i)
      writer.add_event({kT0 + i, EventKind::kThreadDied, i, "text of the event"});
    writer.write_log_stream({"stdout", 1, 1, 0, {"logs/stdout.log"}, {}});
    for (int pid = 1; pid <= 8; ++pid) writer.write_crash(full_crash(pid, 100));
    for (uint64_t n = 1; n <= 50; ++n) {
      writer.add_log_lines({{kT0 + static_cast<int64_t>(n), n % 2 ? "stdout" : "stderr", n,
                             "a line of the job's output"}});
    }
  }
  const std::string pristine = read_file(source);
  ASSERT_GT(pristine.size(), 8192u);
  const std::string path = dir.file("run.db");
  ASSERT_EQ(read_bytes(path, pristine), Outcome::kRead);

  std::mt19937_64 random(77);
  std::map<Outcome, int> outcomes;
  for (int i = 0; i < 400; ++i) {
    std::string bytes = pristine;
    const int flips = 1 + static_cast<int>(random() % 16);
    for (int f = 0; f < flips; ++f) {
      // Bias toward the first pages, where the header and schema live.
      const size_t limit = random() % 2 ? bytes.size() : std::min<size_t>(bytes.size(), 8192);
      bytes[random() % limit] = static_cast<char>(random());
    }
    if (i % 10 == 0) bytes.resize(random() % bytes.size());
    const Outcome outcome = read_bytes(path, bytes);
    ASSERT_NE(outcome, Outcome::kBroken) << "iteration " << i;
    ++outcomes[outcome];
  }
  // Both paths were exercised: damage that SQLite reads through, and damage it refuses.
  EXPECT_GT(outcomes[Outcome::kRead], 0);
  EXPECT_GT(outcomes[Outcome::kRefused], 0);
}

}  // namespace
}  // namespace traindoc::store
