// Bounded reads of files a job wrote into the run folder: what a hostile or broken job may put
// there instead (a link, a FIFO, a file that never ends) reads as nothing or as its first bytes,
// at once.
#include "supervisor/file_text.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "store_test_util.h"

namespace traindoc::supervisor {
namespace {

using store::test::TempDir;

TEST(FileText, ReadsAFileUpToItsLimit) {
  TempDir dir;
  std::ofstream(dir.file("a.txt")) << std::string(200000, 'x');
  EXPECT_EQ(read_file_text(dir.file("a.txt"), 1 << 20).size(), 200000u);
  std::string cut = read_file_text(dir.file("a.txt"), 1000);
  EXPECT_GE(cut.size(), 1000u);
  EXPECT_LT(cut.size(), 200000u);
  EXPECT_EQ(read_file_text(dir.file("missing.txt"), 1000), "");
}

TEST(FileText, ALinkAFifoOrADeviceReadsAsNothingWithoutBlocking) {
  TempDir dir;
  std::ofstream(dir.file("secret")) << "another file's words";
  ASSERT_EQ(symlink(dir.file("secret").c_str(), dir.file("link").c_str()), 0);
  EXPECT_EQ(read_file_text(dir.file("link"), 1000), "");
  // No writer ever opens it: a blocking open would wait for one forever.
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_EQ(read_file_text(dir.file("fifo"), 1000), "");
  EXPECT_EQ(read_file_text("/dev/zero", 1000), "");
}

// The files read before a job starts (a Python on PATH, a launcher's script) are often links.
TEST(FileText, AHeadFollowsLinksAndStopsAtItsLimit) {
  TempDir dir;
  std::ofstream(dir.file("script")) << "#!/usr/bin/python3\n" << std::string(5000, 'x');
  ASSERT_EQ(symlink(dir.file("script").c_str(), dir.file("link").c_str()), 0);
  EXPECT_EQ(read_file_head(dir.file("link"), 18), "#!/usr/bin/python3");
  EXPECT_EQ(read_file_head(dir.file("script"), 1 << 20).size(), 5019u);
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  EXPECT_EQ(read_file_head(dir.file("fifo"), 1000), "");
  EXPECT_EQ(read_file_head(dir.file("missing"), 1000), "");
}

}  // namespace
}  // namespace traindoc::supervisor
