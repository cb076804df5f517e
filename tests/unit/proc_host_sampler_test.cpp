// Tests of HostSampler: live on this machine, and on built trees that stand for a v2 container
// under a limited ancestor, an unlimited v1 cgroup, and a hybrid machine with nothing usable.
#include "supervisor/proc/host_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

namespace traindoc::supervisor {
namespace {

namespace fs = std::filesystem;

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// A fake root: <root>/proc/{meminfo,self/cgroup,self/mountinfo}, cgroup trees under <root>/cg.
class FakeHost {
 public:
  explicit FakeHost(const std::string& name)
      : m_root(fs::path(testing::TempDir()) /
               ("traindoc_host_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(m_root);
    fs::create_directories(m_root / "shm");
    fs::create_directories(m_root / "proc");
    fs::copy_file(fs::path(TRAINDOC_FIXTURES) / "proc" / "meminfo.txt", m_root / "proc/meminfo",
                  fs::copy_options::overwrite_existing);
  }
  ~FakeHost() { fs::remove_all(m_root); }

  const fs::path& root() const { return m_root; }
  void write(const std::string& relative, const std::string& text) {
    write_file(m_root / relative, text);
  }
  HostPaths paths() const { return {(m_root / "proc").string(), (m_root / "shm").string()}; }

 private:
  fs::path m_root;
};

TEST(HostSamplerTest, ThisMachine) {
  HostSampler sampler;
  store::HostSample sample = sampler.sample();
  EXPECT_GT(sample.t_ns, 0);
  EXPECT_GT(sample.mem_total, 0u);
  EXPECT_GT(sample.mem_available, 0u);
  EXPECT_LE(sample.mem_available, sample.mem_total);
  EXPECT_LE(sample.swap_free, sample.swap_total);
  EXPECT_EQ(sample.cgroup_version, sampler.cgroup_version());
  EXPECT_FALSE(sampler.cgroup_note().empty());
  std::cout << "cgroup: " << sampler.cgroup_note() << "\n";
  if (sampler.cgroup_version() == 0) {
    EXPECT_FALSE(sample.cgroup_current);
  } else {
    EXPECT_TRUE(sampler.cgroup_version() == 1 || sampler.cgroup_version() == 2);
    ASSERT_TRUE(sample.cgroup_current);
    EXPECT_GT(*sample.cgroup_current, 0u);
    if (sample.cgroup_max) {
      EXPECT_GT(*sample.cgroup_max, 0u);
    }
  }
  if (fs::exists("/dev/shm")) {
    ASSERT_TRUE(sample.shm_total);
    ASSERT_TRUE(sample.shm_used);
    EXPECT_LE(*sample.shm_used, *sample.shm_total);
  }
}

TEST(HostSamplerTest, V2ContainerUnderALimitedAncestor) {
  FakeHost host("v2");
  std::string cg = (host.root() / "cg").string();
  host.write("proc/self/cgroup", "0::/job/step\n");
  host.write("proc/self/mountinfo", "24 23 0:22 / /dev/shm rw - tmpfs tmpfs rw\n30 22 0:27 / " +
                                        cg +
                                        " rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");
  // The root of a v2 hierarchy has no memory.max; the job's level limits, the step does not.
  host.write("cg/memory.stat", "anon 0\n");
  host.write("cg/job/memory.max", "1073741824\n");
  host.write("cg/job/memory.current", "500000\n");
  host.write("cg/job/step/memory.max", "max\n");
  host.write("cg/job/step/memory.current", "300000\n");
  host.write("cg/job/step/memory.events", "low 0\nhigh 0\nmax 9\noom 3\noom_kill 3\n");

  HostSampler sampler(host.paths());
  EXPECT_EQ(sampler.cgroup_version(), 2);
  EXPECT_EQ(sampler.cgroup_dir(), cg + "/job/step");
  store::HostSample sample = sampler.sample();
  EXPECT_EQ(sample.cgroup_version, 2);
  EXPECT_EQ(sample.mem_total, 24683620ull * 1024);
  EXPECT_EQ(sample.cgroup_max, 1073741824u);
  EXPECT_EQ(sample.cgroup_current, 500000u);  // the usage of the level whose limit binds
  EXPECT_EQ(sample.cgroup_oom_kills, 3u);
  EXPECT_TRUE(sample.shm_total);

  // A tighter limit on the step itself binds first.
  host.write("cg/job/step/memory.max", "400000\n");
  sample = sampler.sample();
  EXPECT_EQ(sample.cgroup_max, 400000u);
  EXPECT_EQ(sample.cgroup_current, 300000u);

  // Files vanishing mid-run leave the fields empty.
  fs::remove(host.root() / "cg/job/step/memory.events");
  fs::remove(host.root() / "cg/job/step/memory.current");
  sample = sampler.sample();
  EXPECT_FALSE(sample.cgroup_oom_kills);
  EXPECT_FALSE(sample.cgroup_current);
  EXPECT_EQ(sample.cgroup_max, 400000u);
}

TEST(HostSamplerTest, V1HybridUnlimited) {
  FakeHost host("v1");
  std::string mem = (host.root() / "memory").string();
  std::string unified = (host.root() / "unified").string();
  host.write("proc/self/cgroup", "5:cpu:/\n4:memory:/a/b\n0::/\n");
  host.write("proc/self/mountinfo", "34 30 0:31 / " + mem +
                                        " rw,relatime - cgroup cgroup rw,memory\n40 30 0:37 / " +
                                        unified + " rw,relatime - cgroup2 cgroup2 rw\n");
  host.write("memory/memory.limit_in_bytes", "9223372036854771712\n");
  host.write("memory/memory.usage_in_bytes", "90000000\n");
  host.write("memory/a/memory.limit_in_bytes", "9223372036854771712\n");
  host.write("memory/a/memory.usage_in_bytes", "800000\n");
  host.write("memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
  host.write("memory/a/b/memory.usage_in_bytes", "700000\n");
  host.write("memory/a/b/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
  host.write("unified/cgroup.controllers", "");

  HostSampler sampler(host.paths());
  EXPECT_EQ(sampler.cgroup_version(), 1);
  EXPECT_EQ(sampler.cgroup_dir(), mem + "/a/b");
  store::HostSample sample = sampler.sample();
  EXPECT_EQ(sample.cgroup_version, 1);
  EXPECT_FALSE(sample.cgroup_max);
  EXPECT_EQ(sample.cgroup_current, 700000u);
  EXPECT_FALSE(sample.cgroup_oom_kills);  // kernels before 4.13

  host.write("memory/a/b/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n");
  host.write("memory/a/memory.limit_in_bytes", "1000000\n");
  sample = sampler.sample();
  EXPECT_EQ(sample.cgroup_oom_kills, 2u);
  EXPECT_EQ(sample.cgroup_max, 1000000u);
  EXPECT_EQ(sample.cgroup_current, 800000u);
}

TEST(HostSamplerTest, NothingUsableSaysWhy) {
  FakeHost host("none");
  host.write("proc/self/cgroup", "4:memory:/gone\n0::/\n");
  host.write("proc/self/mountinfo", "34 30 0:31 / " + (host.root() / "memory").string() +
                                        " rw - cgroup cgroup rw,memory\n40 30 0:37 / " +
                                        (host.root() / "unified").string() +
                                        " rw - cgroup2 cgroup2 rw\n");
  HostSampler sampler(host.paths());
  EXPECT_EQ(sampler.cgroup_version(), 0);
  EXPECT_NE(sampler.cgroup_note().find("memory.usage_in_bytes"), std::string::npos);
  EXPECT_NE(sampler.cgroup_note().find("memory.current"), std::string::npos);
  store::HostSample sample = sampler.sample();
  EXPECT_EQ(sample.cgroup_version, 0);
  EXPECT_FALSE(sample.cgroup_current);
  EXPECT_GT(sample.mem_total, 0u);
}

TEST(HostSamplerTest, ShortOfMemoryUnderAFifthOfTheHostOrTheCgroupLimit) {
  constexpr uint64_t kGiB = 1ull << 30;
  store::HostSample host;
  host.mem_total = 100 * kGiB;
  host.mem_available = 21 * kGiB;
  EXPECT_FALSE(short_of_memory(host));
  host.mem_available = 19 * kGiB;
  EXPECT_TRUE(short_of_memory(host));
  host.mem_available = 50 * kGiB;
  host.cgroup_current = 7 * kGiB;
  EXPECT_FALSE(short_of_memory(host));  // no limit
  host.cgroup_max = 10 * kGiB;
  EXPECT_FALSE(short_of_memory(host));
  host.cgroup_current = 9 * kGiB;
  EXPECT_TRUE(short_of_memory(host));
  host.cgroup_current = 11 * kGiB;  // over the limit, as v1 usage may briefly be
  EXPECT_TRUE(short_of_memory(host));
  EXPECT_FALSE(short_of_memory(store::HostSample{}));  // nothing read
}

TEST(HostSamplerTest, MissingProc) {
  HostSampler sampler({"/nonexistent/traindoc/proc", "/nonexistent/traindoc/shm"});
  EXPECT_EQ(sampler.cgroup_version(), 0);
  EXPECT_FALSE(sampler.cgroup_note().empty());
  store::HostSample sample = sampler.sample();
  EXPECT_EQ(sample.mem_total, 0u);
  EXPECT_FALSE(sample.shm_total);
  EXPECT_FALSE(sample.cgroup_current);
}

}  // namespace
}  // namespace traindoc::supervisor
