// Tests of JobCgroups on built trees: processes of a v2 job in a child cgroup with a limit below
// traindoc's, one that moves there, a v1 hierarchy, and processes whose cgroup cannot be read.
// Also live: this test process's own cgroup.
#include "supervisor/proc/job_cgroups.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;

class FakeTree {
 public:
  explicit FakeTree(const std::string& name)
      : m_root(fs::path(testing::TempDir()) /
               ("traindoc_job_cgroups_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(m_root);
  }
  ~FakeTree() { fs::remove_all(m_root); }

  std::string path(const std::string& relative) const { return (m_root / relative).string(); }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((m_root / relative).parent_path());
    std::ofstream(m_root / relative, std::ios::binary) << text;
  }

 private:
  fs::path m_root;
};

TEST(JobCgroupsTest, V2JobInAChildCgroupAndOneThatMovesThere) {
  FakeTree tree("v2");
  std::string cg = tree.path("cg");
  tree.write("proc/self/mountinfo", "30 22 0:27 / " + cg + " rw - cgroup2 cgroup2 rw\n");
  // traindoc's cgroup /tr has no limit; the job's step below it has 64 MiB.
  tree.write("cg/tr/memory.current", "900000000\n");
  tree.write("cg/tr/memory.max", "max\n");
  tree.write("cg/tr/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  tree.write("cg/tr/step/memory.current", "60000000\n");
  tree.write("cg/tr/step/memory.max", "67108864\n");
  tree.write("cg/tr/step/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
  tree.write("proc/100/cgroup", "0::/tr\n");
  tree.write("proc/101/cgroup", "0::/tr/step\n");
  tree.write("proc/100/statm", "11000 3000 900 1 0 5000 0\n");
  tree.write("proc/101/statm", "11000 3000 900 1 0 5000 0\n");

  JobCgroups cgroups(tree.path("proc"));
  std::optional<store::ProcessCgroup> first = cgroups.observe(100, 7, 10);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, (store::ProcessCgroup{10, 100, 7, 2, "/tr", cg + "/tr"}));
  std::optional<store::ProcessCgroup> other = cgroups.observe(101, 8, 10);
  ASSERT_TRUE(other);
  EXPECT_EQ(other->dir, cg + "/tr/step");
  // Unchanged: nothing to record.
  EXPECT_FALSE(cgroups.observe(100, 7, 20));

  std::vector<store::CgroupSample> samples = cgroups.sample(20);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0], (store::CgroupSample{20, cg + "/tr", 2, 900000000, {}, "", 0}));
  EXPECT_EQ(samples[1],
            (store::CgroupSample{20, cg + "/tr/step", 2, 60000000, 67108864, cg + "/tr/step", 1}));

  // Process 100 moves into the step: a new row, and one cgroup left to read.
  tree.write("proc/100/cgroup", "0::/tr/step\n");
  std::optional<store::ProcessCgroup> moved = cgroups.observe(100, 7, 30);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->t_ns, 30);
  EXPECT_EQ(moved->path, "/tr/step");
  EXPECT_EQ(cgroups.sample(30).size(), 1u);

  // A reading already taken of a cgroup is used as it is.
  CgroupReading known;
  known.current = 5;
  samples = cgroups.sample(40, cg + "/tr/step", &known);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].current, 5u);

  // A pid reused by a new process is observed anew, in the same cgroup.
  EXPECT_TRUE(cgroups.observe(101, 9, 50));
  // An ending process is moved to the root after its memory is gone: not a move.
  tree.write("proc/101/cgroup", "0::/\n");
  tree.write("proc/101/statm", "0 0 0 0 0 0 0\n");
  EXPECT_FALSE(cgroups.observe(101, 9, 55));
  EXPECT_EQ(cgroups.sample(55).size(), 1u);

  // The processes gone are forgotten with their cgroups.
  cgroups.retain({});
  EXPECT_TRUE(cgroups.sample(60).empty());
  // One whose cgroup file is gone records nothing.
  EXPECT_FALSE(cgroups.observe(102, 1, 70));
}

TEST(JobCgroupsTest, V1HierarchyAndCgroupsThatCannotBeRead) {
  FakeTree tree("v1");
  std::string mem = tree.path("memory");
  tree.write("proc/self/mountinfo",
             "34 30 0:31 / " + mem + " rw,relatime - cgroup cgroup rw,memory\n");
  tree.write("memory/job/memory.usage_in_bytes", "1000\n");
  tree.write("memory/job/memory.limit_in_bytes", "9223372036854771712\n");
  tree.write("memory/job/x/memory.usage_in_bytes", "66000000\n");
  tree.write("memory/job/x/memory.limit_in_bytes", "67108864\n");
  tree.write("memory/job/x/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  tree.write("proc/200/cgroup", "5:cpu:/\n4:memory:/job/x\n0::/\n");
  // A cgroup outside the mount (another namespace's "/.." path) and one with no files.
  tree.write("proc/201/cgroup", "4:memory:/gone\n");
  tree.write("proc/202/cgroup", "1:name=systemd:/\n");
  for (const char* pid : {"200", "201", "202"}) {
    tree.write(std::string("proc/") + pid + "/statm", "100 50 10 1 0 40 0\n");
  }

  JobCgroups cgroups(tree.path("proc"));
  std::optional<store::ProcessCgroup> row = cgroups.observe(200, 1, 5);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->version, 1);
  EXPECT_EQ(row->path, "/job/x");
  EXPECT_EQ(row->dir, mem + "/job/x");
  row = cgroups.observe(201, 1, 5);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->version, 0);
  EXPECT_EQ(row->path, "/gone");
  EXPECT_EQ(row->dir, "");
  row = cgroups.observe(202, 1, 5);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->dir, "");
  std::vector<store::CgroupSample> samples = cgroups.sample(6);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0],
            (store::CgroupSample{6, mem + "/job/x", 1, 66000000, 67108864, mem + "/job/x", 2}));
}

TEST(JobCgroupsTest, ThisProcess) {
  JobCgroups cgroups;
  std::optional<store::ProcessCgroup> row = cgroups.observe(getpid(), 1, 1);
  ASSERT_TRUE(row);
  if (row->version == 0) GTEST_SKIP() << "no memory cgroup readable here";
  EXPECT_FALSE(row->dir.empty());
  std::vector<store::CgroupSample> samples = cgroups.sample(2);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_TRUE(samples[0].current);
}

}  // namespace
}  // namespace traindoc::supervisor
