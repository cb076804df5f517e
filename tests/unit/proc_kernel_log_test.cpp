// Tests of KernelLog: a log that cannot be opened is missing evidence, never a failure; records
// missing from the sequence (overwritten before they were read) are counted, fed through a file
// written one record a poll, as /dev/kmsg returns one a read; and, where this process may write
// /dev/kmsg (root), the OOM killer's two records written there are read back as one kill. The
// pid written is above any pid_max, so no real process is named.
#include "supervisor/proc/kernel_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "common/clock.h"

namespace traindoc::supervisor {
namespace {

constexpr int kNoSuchPid = 2'147'000'001;

TEST(KernelLogTest, AnUnreadableLogIsSaidSo) {
  KernelLog log("/nonexistent/kmsg");
  EXPECT_FALSE(log.readable());
  EXPECT_NE(log.note().find("/nonexistent/kmsg"), std::string::npos) << log.note();
  EXPECT_TRUE(log.poll().empty());
}

// A file in place of /dev/kmsg, written one record at a time.
class KmsgFile {
 public:
  KmsgFile() {
    char path[] = "/tmp/traindoc_kmsg_XXXXXX";
    m_fd = mkstemp(path);
    m_path = path;
  }
  ~KmsgFile() {
    close(m_fd);
    unlink(m_path.c_str());
  }
  KmsgFile(const KmsgFile&) = delete;
  KmsgFile& operator=(const KmsgFile&) = delete;

  const std::string& path() const { return m_path; }
  void write_record(uint64_t sequence, const std::string& message) {
    std::string record = "6," + std::to_string(sequence) + ",1000,-;" + message + "\n";
    ASSERT_EQ(write(m_fd, record.data(), record.size()), static_cast<ssize_t>(record.size()));
  }

 private:
  int m_fd = -1;
  std::string m_path;
};

TEST(KernelLogTest, CountsTheRecordsMissingFromTheSequence) {
  KmsgFile file;
  file.write_record(100, "before the open: skipped, never lost");
  KernelLog log(file.path());
  ASSERT_TRUE(log.readable()) << log.note();
  file.write_record(101, "the first read");
  EXPECT_TRUE(log.poll().empty());
  int64_t after_first = common::realtime_ns();
  EXPECT_EQ(log.records_lost(), 0u);
  file.write_record(102, "next");
  log.poll();
  int64_t after_second = common::realtime_ns();
  EXPECT_EQ(log.records_lost(), 0u);
  // 103 to 106 were overwritten; the kill after the gap is still told.
  const std::string pid = std::to_string(kNoSuchPid);
  file.write_record(107, "Out of memory: Killed process " + pid + " (unit_test) total-vm:2048kB");
  std::vector<store::KernelOomKill> kills = log.poll();
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].pid, kNoSuchPid);
  EXPECT_EQ(log.records_lost(), 4u);
  // Written after the last poll that read the log to its end, that of 102.
  EXPECT_GE(log.lost_after_ns(), after_first);
  EXPECT_LE(log.lost_after_ns(), after_second);
  // A gap is counted once; the next one adds to the total.
  file.write_record(108, "next");
  log.poll();
  EXPECT_EQ(log.records_lost(), 4u);
  file.write_record(110, "after 109");
  log.poll();
  EXPECT_EQ(log.records_lost(), 5u);
  EXPECT_GE(log.lost_after_ns(), after_second);
}

TEST(KernelLogTest, ReadsTheKillsWrittenSinceItOpened) {
  KernelLog log;
  int writer = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
  if (!log.readable() || writer < 0) {
    if (writer >= 0) close(writer);
    GTEST_SKIP() << "the kernel log cannot be read and written here: " << log.note();
  }
  const std::string pid = std::to_string(kNoSuchPid);
  // Each write is one record; "<3>" its level.
  const std::string context =
      "<6>oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,"
      "mems_allowed=0,oom_memcg=/t,task_memcg=/t/u,task=unit_test,pid=" +
      pid + ",uid=0\n";
  const std::string killed = "<3>Memory cgroup out of memory: Killed process " + pid +
                             " (unit_test) total-vm:2048kB, anon-rss:1024kB, file-rss:0kB, "
                             "shmem-rss:0kB, UID:0 pgtables:4kB oom_score_adj:0\n";
  ASSERT_EQ(write(writer, context.data(), context.size()), static_cast<ssize_t>(context.size()));
  ASSERT_EQ(write(writer, killed.data(), killed.size()), static_cast<ssize_t>(killed.size()));
  close(writer);
  std::vector<store::KernelOomKill> kills;
  for (const store::KernelOomKill& kill : log.poll()) {
    if (kill.pid == kNoSuchPid) kills.push_back(kill);
  }
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_EQ(kills[0].comm, "unit_test");
  EXPECT_TRUE(kills[0].memcg);
  EXPECT_EQ(kills[0].oom_cgroup, "/t");
  EXPECT_EQ(kills[0].task_cgroup, "/t/u");
  EXPECT_EQ(kills[0].anon_rss, 1024u * 1024);
  EXPECT_GT(kills[0].t_ns, 0);
  // Read once: nothing more until the kernel writes again.
  for (const store::KernelOomKill& kill : log.poll()) EXPECT_NE(kill.pid, kNoSuchPid);
}

}  // namespace
}  // namespace traindoc::supervisor
