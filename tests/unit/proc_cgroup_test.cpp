// Tests of finding and reading the memory cgroup: /proc/self/cgroup and mountinfo of a v1 hybrid
// machine (recorded here), v2 hosts and containers, Slurm and Docker v1 layouts, memory.* files.
#include "supervisor/proc/cgroup_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace traindoc::supervisor {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TRAINDOC_FIXTURES) + "/proc/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(ProcCgroupTest, RecordedHybrid) {
  ProcCgroups cgroups = parse_proc_cgroup(fixture("cgroup_v1_hybrid.txt"));
  ASSERT_TRUE(cgroups.v1_memory);
  EXPECT_EQ(*cgroups.v1_memory, "/process_api/b5d1094b8b687a429ed95fc949f44ea7");
  ASSERT_TRUE(cgroups.v2);
  EXPECT_EQ(*cgroups.v2, "/");
}

TEST(ProcCgroupTest, CombinedControllersAndDamage) {
  ProcCgroups cgroups = parse_proc_cgroup(fixture("cgroup_v1_slurm.txt"));
  EXPECT_EQ(cgroups.v1_memory, "/slurm/uid_1000/job_42/step_0/task_0");
  EXPECT_FALSE(cgroups.v2);
  cgroups = parse_proc_cgroup("garbage\n3:memory\n4:memory:relative\n5:memory_x:/a\n0::\n");
  EXPECT_FALSE(cgroups.v1_memory);
  EXPECT_FALSE(cgroups.v2);
  // A path may hold ':'.
  cgroups = parse_proc_cgroup("0::/a:b\n");
  EXPECT_EQ(cgroups.v2, "/a:b");
}

TEST(MountInfoTest, RecordedHybrid) {
  std::vector<MountEntry> mounts = parse_mountinfo(fixture("mountinfo_v1_hybrid.txt"));
  ASSERT_GE(mounts.size(), 10u);
  bool memory = false;
  bool unified = false;
  for (const MountEntry& m : mounts) {
    if (m.mount_point == "/sys/fs/cgroup/memory") {
      memory = true;
      EXPECT_EQ(m.fs_type, "cgroup");
      EXPECT_EQ(m.super_options, "rw,memory");
      EXPECT_EQ(m.root, "/");
    }
    if (m.mount_point == "/sys/fs/cgroup/unified") {
      unified = true;
      EXPECT_EQ(m.fs_type, "cgroup2");
    }
  }
  EXPECT_TRUE(memory);
  EXPECT_TRUE(unified);
}

TEST(MountInfoTest, OptionalFieldsAndEscapes) {
  std::vector<MountEntry> mounts = parse_mountinfo(fixture("mountinfo_v1_docker.txt"));
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_EQ(mounts[0].root, "/docker/0123456789ab");
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/cpu set");
  mounts = parse_mountinfo(fixture("mountinfo_v2_host.txt"));
  ASSERT_EQ(mounts.size(), 4u);
  EXPECT_EQ(mounts[1].fs_type, "cgroup2");
  EXPECT_EQ(mounts[1].super_options, "rw,nsdelegate,memory_recursiveprot");
  // No separator, too few fields, a lone backslash at the end.
  mounts = parse_mountinfo(
      "1 2 0:1 / /x rw shared:1 cgroup2 cgroup2 rw\n1 2 3\n"
      "5 6 0:1 / /y\\ rw - tmpfs t rw\n");
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0].mount_point, "/y\\");
}

TEST(CgroupLocationTest, HybridPrefersV1Memory) {
  std::vector<CgroupLocation> found =
      memory_cgroup_candidates(fixture("cgroup_v1_hybrid.txt"), fixture("mountinfo_v1_hybrid.txt"));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].version, 1);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup/memory/process_api/b5d1094b8b687a429ed95fc949f44ea7");
  EXPECT_EQ(found[0].mount_point, "/sys/fs/cgroup/memory");
  EXPECT_FALSE(found[0].outside_mount_root);
  EXPECT_EQ(found[1].version, 2);
  EXPECT_EQ(found[1].dir, "/sys/fs/cgroup/unified");
}

TEST(CgroupLocationTest, V2ContainerWithNamespace) {
  std::vector<CgroupLocation> found = memory_cgroup_candidates(
      fixture("cgroup_v2_container.txt"), fixture("mountinfo_v2_container.txt"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].version, 2);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup");
}

TEST(CgroupLocationTest, V2KubernetesMountRootIsTheCgroup) {
  std::vector<CgroupLocation> found =
      memory_cgroup_candidates(fixture("cgroup_v2_k8s.txt"), fixture("mountinfo_v2_k8s.txt"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup");
  EXPECT_FALSE(found[0].outside_mount_root);
}

TEST(CgroupLocationTest, V2Host) {
  std::vector<CgroupLocation> found =
      memory_cgroup_candidates(fixture("cgroup_v2_host.txt"), fixture("mountinfo_v2_host.txt"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope");
}

TEST(CgroupLocationTest, V1CombinedControllersSlurm) {
  std::vector<CgroupLocation> found =
      memory_cgroup_candidates(fixture("cgroup_v1_slurm.txt"), fixture("mountinfo_v1_slurm.txt"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].version, 1);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup/cpu,memory/slurm/uid_1000/job_42/step_0/task_0");
}

TEST(CgroupLocationTest, V1DockerBindMount) {
  std::vector<CgroupLocation> found =
      memory_cgroup_candidates(fixture("cgroup_v1_docker.txt"), fixture("mountinfo_v1_docker.txt"));
  // The unified line "0::/" has no cgroup2 mount here.
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup/memory");
  EXPECT_FALSE(found[0].outside_mount_root);
}

TEST(CgroupLocationTest, PathOutsideMountRootFallsBackToMount) {
  std::vector<CgroupLocation> found =
      memory_cgroup_candidates("4:memory:/docker/other\n", fixture("mountinfo_v1_docker.txt"));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].dir, "/sys/fs/cgroup/memory");
  EXPECT_TRUE(found[0].outside_mount_root);
}

TEST(CgroupLocationTest, NothingMounted) {
  EXPECT_TRUE(memory_cgroup_candidates(fixture("cgroup_v2_host.txt"), "").empty());
  EXPECT_TRUE(memory_cgroup_candidates("", fixture("mountinfo_v2_host.txt")).empty());
  EXPECT_TRUE(memory_cgroup_candidates(fixture("cgroup_v1_hybrid.txt"),
                                       fixture("mountinfo_v2_container.txt"))
                  .size() == 1);
}

TEST(JoinCgroupPathTest, Cases) {
  EXPECT_EQ(join_cgroup_path("/sys/fs/cgroup", "/", "/"), "/sys/fs/cgroup");
  EXPECT_EQ(join_cgroup_path("/sys/fs/cgroup/", "/", "/a/b/"), "/sys/fs/cgroup/a/b");
  EXPECT_EQ(join_cgroup_path("/m", "/a", "/a/b"), "/m/b");
  EXPECT_EQ(join_cgroup_path("/m", "/a/", "/a"), "/m");
  EXPECT_FALSE(join_cgroup_path("/m", "/a", "/ab"));
  EXPECT_FALSE(join_cgroup_path("/m", "/a", "/b"));
  EXPECT_FALSE(join_cgroup_path("/m", "/", "/../../x"));
  EXPECT_EQ(join_cgroup_path("/m", "/", "/..x"), "/m/..x");
}

TEST(CgroupFilesTest, V2) {
  EXPECT_EQ(parse_cgroup_counter(fixture("v2_memory_current.txt")), 3221225472u);
  EXPECT_EQ(parse_cgroup_counter(fixture("v2_memory_swap_current.txt")), 0u);
  std::optional<MemoryLimit> limit = parse_v2_memory_max(fixture("v2_memory_max_unlimited.txt"));
  ASSERT_TRUE(limit);
  EXPECT_TRUE(limit->unlimited);
  limit = parse_v2_memory_max(fixture("v2_memory_max_8g.txt"));
  ASSERT_TRUE(limit);
  EXPECT_FALSE(limit->unlimited);
  EXPECT_EQ(limit->bytes, 8589934592u);
  EXPECT_FALSE(parse_v2_memory_max("maximum\n"));
  EXPECT_FALSE(parse_v2_memory_max(""));

  CgroupV2Events events = parse_v2_memory_events(fixture("v2_memory_events_oom_kill3.txt"));
  EXPECT_EQ(events.oom_kill, 3u);
  EXPECT_EQ(events.oom, 4u);
  EXPECT_EQ(events.max, 1042u);
  events = parse_v2_memory_events(fixture("v2_memory_events_old.txt"));
  EXPECT_FALSE(events.oom_kill);
  EXPECT_EQ(events.oom, 1u);
  EXPECT_FALSE(parse_v2_memory_events("oom_kill\noom_kill x\n").oom_kill);
}

TEST(CgroupFilesTest, V1) {
  EXPECT_EQ(parse_cgroup_counter(fixture("v1_usage_in_bytes.txt")), 72540160u);
  EXPECT_EQ(parse_cgroup_counter(fixture("v1_max_usage_in_bytes.txt")), 346791936u);
  std::optional<MemoryLimit> limit = parse_v1_memory_limit(fixture("v1_limit_in_bytes.txt"));
  ASSERT_TRUE(limit);
  EXPECT_TRUE(limit->unlimited);
  limit = parse_v1_memory_limit(fixture("v1_limit_unlimited_64k_pages.txt"));
  ASSERT_TRUE(limit);
  EXPECT_TRUE(limit->unlimited);
  limit = parse_v1_memory_limit(fixture("v1_limit_4g.txt"));
  ASSERT_TRUE(limit);
  EXPECT_FALSE(limit->unlimited);
  EXPECT_EQ(limit->bytes, 4294967296u);
  limit = parse_v1_memory_limit("-1");
  ASSERT_TRUE(limit);
  EXPECT_TRUE(limit->unlimited);
  EXPECT_FALSE(parse_v1_memory_limit("-2"));

  CgroupV1OomControl control = parse_v1_oom_control(fixture("v1_oom_control.txt"));
  EXPECT_EQ(control.oom_kill, 0u);
  EXPECT_EQ(control.under_oom, false);
  EXPECT_EQ(control.oom_kill_disable, false);
  control = parse_v1_oom_control(fixture("v1_oom_control_kill2.txt"));
  EXPECT_EQ(control.oom_kill, 2u);
  control = parse_v1_oom_control(fixture("v1_oom_control_old.txt"));
  EXPECT_FALSE(control.oom_kill);
  EXPECT_EQ(control.under_oom, true);
  EXPECT_FALSE(parse_cgroup_counter("12 kB"));
  EXPECT_FALSE(parse_cgroup_counter(""));
}

}  // namespace
}  // namespace traindoc::supervisor
