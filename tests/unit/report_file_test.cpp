// Tests of write_report_file, which writes report.json and report.html: a link planted in the run
// folder (at the old temporary's name, at names like it, at the report's own) never makes it
// write another file; the report still lands, whole and for its owner only; a failed write
// (file too large, rename refused, folder gone) throws and leaves no temporary behind.
#include "report/report_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "file_size_limit.h"
#include "report/html_report.h"
#include "report/json_report.h"
#include "store_test_util.h"

namespace traindoc::report {
namespace {

namespace fs = std::filesystem;
using store::test::read_file;
using store::test::TempDir;
using store::test::write_file;

// Names of the folder's entries, sorted.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    out.push_back(entry.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Names someone who knows the old code, or guesses at a new one, would plant a link at.
std::vector<std::string> plausible_temporaries(const std::string& name) {
  return {name + ".tmp",       "." + name + ".tmp", name + "~",
          name + ".new",       name + ".part",      "." + name,
          "." + name + ".swp", name + ".tmp.0",     "." + name + ".0000000000000000.tmp"};
}

class PlantedLinks : public testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(m_root.path() / "run");
    write_file(victim(), "precious\n");
  }
  std::string run() const { return (m_root.path() / "run").string(); }
  std::string victim() const { return m_root.file("victim"); }

  // A link at each plausible name, to the victim and to a file that does not exist yet.
  void plant(const std::string& name) {
    int n = 0;
    for (const std::string& planted : plausible_temporaries(name)) {
      fs::path target = ++n % 2 ? fs::path(victim()) : m_root.path() / ("created-" + planted);
      fs::create_symlink(target, fs::path(run()) / planted);
    }
  }

  void expect_untouched() const {
    EXPECT_EQ(read_file(victim()), "precious\n");
    for (const fs::directory_entry& entry : fs::directory_iterator(m_root.path())) {
      EXPECT_EQ(entry.path().filename().string().rfind("created-", 0), std::string::npos)
          << "written through a planted link: " << entry.path();
    }
  }

  TempDir m_root;
};

TEST_F(PlantedLinks, NeverWriteAnotherFile) {
  plant("report.json");
  write_report_file(run(), "report.json", "{}\n");
  expect_untouched();
  EXPECT_EQ(read_file(run() + "/report.json"), "{}\n");
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(run() + "/report.json")));
  // The links are left as they were: nothing but the report is added.
  std::vector<std::string> expected = plausible_temporaries("report.json");
  expected.push_back("report.json");
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(entries(run()), expected);
}

TEST_F(PlantedLinks, AtTheReportItselfTheLinkIsReplaced) {
  fs::create_symlink(victim(), run() + "/report.json");
  write_report_file(run(), "report.json", "new\n");
  expect_untouched();
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(run() + "/report.json")));
  EXPECT_EQ(read_file(run() + "/report.json"), "new\n");
}

TEST_F(PlantedLinks, BothReportsLand) {
  plant("report.json");
  plant("report.html");
  analysis::Diagnosis diagnosis;
  diagnosis.run.command = {"true"};
  write_json_report(diagnosis, run());
  write_html_report(diagnosis, store::Evidence{}, run());
  expect_untouched();
  EXPECT_EQ(nlohmann::ordered_json::parse(read_file(run() + "/report.json")), to_json(diagnosis));
  EXPECT_EQ(read_file(run() + "/report.html"), render_html(diagnosis, store::Evidence{}));
}

TEST(ReportFile, ReadableByItsOwnerOnly) {
  TempDir dir;
  mode_t old_mask = umask(0);
  write_report_file(dir.path().string(), "report.json", "{}\n");
  umask(old_mask);
  struct stat status {};
  ASSERT_EQ(stat(dir.file("report.json").c_str(), &status), 0);
  EXPECT_EQ(status.st_mode & 07777, 0600u);
}

// A file size limit cuts the write short, then refuses it, as a full disk would: the old report
// stays whole, and no temporary is left.
TEST(ReportFile, AShortWriteThrowsAndLeavesTheOldReport) {
  TempDir dir;
  write_report_file(dir.path().string(), "report.json", "old\n");
  std::string big(1 << 20, 'x');
  std::string message;
  {
    traindoc::test::FileSizeLimit limit(64 << 10);
    ASSERT_TRUE(limit.set());
    try {
      write_report_file(dir.path().string(), "report.json", big);
    } catch (const std::runtime_error& error) {
      message = error.what();
    }
  }
  EXPECT_NE(message.find("cannot write " + dir.file("report.json")), std::string::npos) << message;
  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_EQ(read_file(dir.file("report.json")), "old\n");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"report.json"});
}

TEST(ReportFile, ARefusedRenameThrowsAndLeavesNoTemporary) {
  TempDir dir;
  fs::create_directories(dir.path() / "report.json" / "inside");
  EXPECT_THROW(write_report_file(dir.path().string(), "report.json", "{}\n"), std::runtime_error);
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"report.json"});
}

TEST(ReportFile, AMissingFolderThrows) {
  TempDir dir;
  EXPECT_THROW(write_report_file(dir.file("missing"), "report.json", "{}\n"), std::runtime_error);
  EXPECT_FALSE(fs::exists(dir.file("missing")));
}

}  // namespace
}  // namespace traindoc::report
