// ErrorFiles: the TORCHELASTIC_ERROR_FILE records written for torchrun's ranks, read back as
// torch reads them (message, extraInfo.py_callstack, extraInfo.timestamp).
#include "supervisor/error_files.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr int kTorchrun = 50;
constexpr int kRank0 = 101;
constexpr int kRank1 = 102;
constexpr int64_t kSecond = 1'000'000'000;

class ErrorFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = fs::temp_directory_path() /
            ("error_files_test_" + std::to_string(getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(m_dir);
    fs::create_directories(m_dir);
    for (int pid : {kRank0, kRank1}) {
      m_files.process_seen(pid, 7, kTorchrun, pid - kRank0, path(pid).c_str(), 10 * kSecond);
    }
  }
  void TearDown() override { fs::remove_all(m_dir); }

  std::string path(int pid) const { return (m_dir / (std::to_string(pid) + ".json")).string(); }
  static std::string read(const std::string& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static void write(const std::string& file, const std::string& text) {
    std::ofstream(file) << text;
  }
  void end(int pid, int64_t t_ns, std::optional<int> code, std::optional<int> sig = {}) {
    store::ProcessRecord record;
    record.pid = pid;
    record.start_ticks = 7;
    record.exit_code = code;
    record.exit_signal = sig;
    record.end_ns = t_ns;
    m_files.ended(record);
  }

  fs::path m_dir;
  ErrorFiles m_files;
};

TEST_F(ErrorFilesTest, KilledRankGetsItsEndAndTimestamp) {
  end(kRank1, 12 * kSecond + 400'000'000, std::nullopt, SIGKILL);
  m_files.update();
  Json record = Json::parse(read(path(kRank1)));
  EXPECT_EQ(record["message"]["message"], "traindoc: rank 1 (pid 102) killed by SIGKILL");
  EXPECT_EQ(record["message"]["extraInfo"]["timestamp"], "12");
  EXPECT_EQ(record["message"]["extraInfo"]["py_callstack"],
            "traindoc: rank 1 (pid 102) killed by SIGKILL");
  EXPECT_FALSE(fs::exists(path(kRank0)));  // still running
  EXPECT_FALSE(fs::exists(path(kRank1) + ".traindoc"));
}

TEST_F(ErrorFilesTest, CrashRecordIsWrittenInItsWordsWithItsTraceback) {
  store::Crash crash;
  crash.pid = kRank0;
  crash.start_ticks = 7;
  crash.time_ns = 11 * kSecond;
  crash.python_traceback = "Current thread 0x1 (most recent call first):\n  File \"t.py\"";
  m_files.crashed(crash, "died of SIGSEGV: null pointer dereference");
  m_files.update();
  Json record = Json::parse(read(path(kRank0)));
  EXPECT_EQ(record["message"]["message"],
            "traindoc: rank 0 (pid 101) died of SIGSEGV: null pointer dereference");
  EXPECT_EQ(record["message"]["extraInfo"]["timestamp"], "11");
  std::string stack = record["message"]["extraInfo"]["py_callstack"];
  EXPECT_NE(stack.find("\n\nCurrent thread 0x1"), std::string::npos) << stack;
}

TEST_F(ErrorFilesTest, JobsOwnFileIsLeftAsItWas) {
  const std::string own = R"({"message": {"message": "ValueError: x"}})";
  write(path(kRank0), own);
  end(kRank1, 10 * kSecond, std::nullopt, SIGKILL);  // a failure before it: no note in the job's
  end(kRank0, 12 * kSecond, 1);
  m_files.update();
  EXPECT_EQ(read(path(kRank0)), own);
}

TEST_F(ErrorFilesTest, HookRecordNamesTheRankThatHadEndedFirst) {
  end(kRank1, 12 * kSecond, std::nullopt, SIGKILL);
  Json hook = {
      {"message",
       {{"message", "RuntimeError: Connection closed by peer"},
        {"extraInfo",
         {{"py_callstack", "Traceback (most recent call last):\n"}, {"timestamp", "12"}}}}},
      {"traindoc", {{"pid", kRank0}, {"time_ns", 12 * kSecond}, {"ended_before", {kRank1}}}}};
  write(path(kRank0), hook.dump());
  end(kRank0, 12 * kSecond + 1, 1);
  m_files.update();
  Json record = Json::parse(read(path(kRank0)));
  EXPECT_EQ(record["message"]["extraInfo"]["py_callstack"],
            "traindoc: rank 1 (pid 102) failed before this rank (killed by SIGKILL): look there "
            "first\nTraceback (most recent call last):\n");
  EXPECT_EQ(record["message"]["extraInfo"]["timestamp"], "12");  // never changed
  EXPECT_EQ(record["message"]["message"], "RuntimeError: Connection closed by peer");
}

TEST_F(ErrorFilesTest, ExceptionSeenAliveAfterAPeerFailedNamesNoPeer) {
  // Rank 0 raised, then took its time to exit while rank 1 failed in consequence: seen alive
  // after rank 1's end, rank 0 had still failed first, and its hook saw no sibling ended.
  Json hook = {
      {"message",
       {{"message", "ValueError: x"},
        {"extraInfo", {{"py_callstack", "Traceback\n"}, {"timestamp", "10"}}}}},
      {"traindoc", {{"pid", kRank0}, {"time_ns", 10 * kSecond}, {"ended_before", Json::array()}}}};
  write(path(kRank0), hook.dump());
  end(kRank1, 11 * kSecond, 1);
  m_files.find_zombies(12 * kSecond);  // rank 0 (no such process here) is adopted, not seen alive
  end(kRank0, 13 * kSecond, 1);
  m_files.update();
  EXPECT_EQ(Json::parse(read(path(kRank0)))["message"]["extraInfo"]["py_callstack"], "Traceback\n");
}

TEST_F(ErrorFilesTest, NoOrderKnownNoNote) {
  // Both failures were learned after the last sighting of either alive: which came first is
  // not known, so neither record names the other.
  end(kRank1, 12 * kSecond, std::nullopt, SIGKILL);
  end(kRank0, 12 * kSecond, 1);
  m_files.update();
  for (int pid : {kRank0, kRank1}) {
    std::string stack = Json::parse(read(path(pid)))["message"]["extraInfo"]["py_callstack"];
    EXPECT_EQ(stack.find("failed before"), std::string::npos) << stack;
  }
}

TEST_F(ErrorFilesTest, WorkerOfARankInheritsItsPathAndGetsNone) {
  constexpr int kWorker = 201;
  m_files.process_seen(kWorker, 9, kRank0, std::nullopt, path(kRank0).c_str(), 10 * kSecond);
  store::ProcessRecord worker;
  worker.pid = kWorker;
  worker.start_ticks = 9;
  worker.exit_signal = SIGSEGV;
  worker.end_ns = 11 * kSecond;
  m_files.ended(worker);
  m_files.update();
  EXPECT_FALSE(fs::exists(path(kRank0)));
}

TEST_F(ErrorFilesTest, MissingFolderWritesNothingAndThrowsNothing) {
  fs::remove_all(m_dir);
  end(kRank1, 12 * kSecond, 3);
  EXPECT_NO_THROW(m_files.update());
  EXPECT_FALSE(fs::exists(path(kRank1)));
}

}  // namespace
}  // namespace traindoc::supervisor
