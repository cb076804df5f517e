// Tests of the NUL-separated /proc texts: environ (rank variables) and cmdline, recorded from
// real processes started with a known environment and argv, and damaged variants.
#include "supervisor/proc/environ_text.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace traindoc::supervisor {
namespace {

using namespace std::string_literals;

std::string fixture(const std::string& name) {
  std::ifstream in(std::string(TRAINDOC_FIXTURES) + "/proc/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

TEST(EnvironTextTest, RecordedTorchrunVariables) {
  EnvironText env(fixture("sleep_environ.txt"));
  EXPECT_EQ(env.size(), 6u);
  ASSERT_NE(env.find("PATH"), nullptr);
  EXPECT_STREQ(env.find("PATH"), "/usr/bin:/bin");
  EXPECT_STREQ(env.find("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env.find("MASTER_PORT"), nullptr);
  EXPECT_EQ(env.find("RAN"), nullptr);
  common::RankEnv rank = env.rank_env();
  EXPECT_EQ(rank.source, common::RankSource::kTorch);
  EXPECT_EQ(rank.rank, 3);
  EXPECT_EQ(rank.local_rank, 1);
  EXPECT_EQ(rank.world_size, 8);
  EXPECT_EQ(rank.node_rank, 0);
}

TEST(EnvironTextTest, AWorldLargerThanItsMachineSpansMachines) {
  EXPECT_TRUE(EnvironText("RANK=1\0LOCAL_RANK=0\0WORLD_SIZE=2\0LOCAL_WORLD_SIZE=1\0"s)
                  .rank_env()
                  .spans_machines());
  EXPECT_FALSE(EnvironText("RANK=1\0LOCAL_RANK=1\0WORLD_SIZE=2\0LOCAL_WORLD_SIZE=2\0"s)
                   .rank_env()
                   .spans_machines());
  EXPECT_FALSE(EnvironText("RANK=1\0WORLD_SIZE=2\0"s).rank_env().spans_machines());
  EXPECT_TRUE(
      EnvironText("OMPI_COMM_WORLD_RANK=3\0OMPI_COMM_WORLD_SIZE=8\0OMPI_COMM_WORLD_LOCAL_SIZE=4\0"s)
          .rank_env()
          .spans_machines());
  EXPECT_TRUE(
      EnvironText("PMI_RANK=0\0PMI_SIZE=4\0MPI_LOCALNRANKS=2\0"s).rank_env().spans_machines());
  EXPECT_TRUE(EnvironText("SLURM_PROCID=0\0SLURM_NTASKS=2\0SLURM_STEP_NUM_NODES=2\0"s)
                  .rank_env()
                  .spans_machines());
  EXPECT_FALSE(EnvironText("SLURM_PROCID=0\0SLURM_NTASKS=2\0SLURM_STEP_NUM_NODES=1\0"s)
                   .rank_env()
                   .spans_machines());
}

TEST(EnvironTextTest, OpenMpiWithoutTrailingNul) {
  EnvironText env("OMPI_COMM_WORLD_RANK=5\0OMPI_COMM_WORLD_LOCAL_RANK=1\0OMPI_COMM_WORLD_SIZE=16"s);
  EXPECT_STREQ(env.find("OMPI_COMM_WORLD_SIZE"), "16");
  common::RankEnv rank = env.rank_env();
  EXPECT_EQ(rank.source, common::RankSource::kOpenMpi);
  EXPECT_EQ(rank.rank, 5);
  EXPECT_EQ(rank.local_rank, 1);
  EXPECT_EQ(rank.world_size, 16);
  EXPECT_EQ(rank.node_rank, -1);
}

TEST(EnvironTextTest, FirstDuplicateWinsAndJunkIsSkipped) {
  EnvironText env("A=1\0garbage\0=novalue\0A=2\0\0\0B=\0C=x=y\0"s);
  EXPECT_STREQ(env.find("A"), "1");
  EXPECT_STREQ(env.find("B"), "");
  EXPECT_STREQ(env.find("C"), "x=y");
  EXPECT_EQ(env.find("garbage"), nullptr);
  EXPECT_EQ(env.find(""), nullptr);
  EXPECT_EQ(env.size(), 4u);
  EXPECT_EQ(env.rank_env().source, common::RankSource::kNone);
}

TEST(EnvironTextTest, Empty) {
  EnvironText env("");
  EXPECT_EQ(env.size(), 0u);
  EXPECT_EQ(env.find("PATH"), nullptr);
  EXPECT_EQ(EnvironText().rank_env().rank, -1);
}

TEST(CmdlineTest, RecordedPython) {
  // The process was started with a trailing "" argument: indistinguishable from setproctitle's
  // padding, so it is dropped.
  std::vector<std::string> argv = parse_cmdline(fixture("python_cmdline.txt"));
  ASSERT_EQ(argv.size(), 5u);
  EXPECT_EQ(argv[0], "python3");
  EXPECT_EQ(argv[1], "-c");
  EXPECT_EQ(argv[2], "import time; time.sleep(30)");
  EXPECT_EQ(argv[3], "--batch-size");
  EXPECT_EQ(argv[4], "16");
  EXPECT_EQ(join_cmdline(argv), "python3 -c import time; time.sleep(30) --batch-size 16");
}

TEST(CmdlineTest, Variants) {
  EXPECT_TRUE(parse_cmdline("").empty());
  EXPECT_EQ(parse_cmdline("a\0b"s), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parse_cmdline("a\0b\0"s), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parse_cmdline("a\0\0b\0"s), (std::vector<std::string>{"a", "", "b"}));
  // setproctitle: one string with spaces, then the rest of the old argv area zeroed.
  EXPECT_EQ(parse_cmdline("pt_main_thread worker 3\0\0\0\0\0"s),
            (std::vector<std::string>{"pt_main_thread worker 3"}));
  EXPECT_TRUE(parse_cmdline("\0\0"s).empty());
  EXPECT_EQ(join_cmdline({"", "x"}), " x");
}

}  // namespace
}  // namespace traindoc::supervisor
