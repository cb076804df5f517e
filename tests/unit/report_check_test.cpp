// What `traindoc check` prints (report/check_report.h): the groups, the JSON object and its
// counts, and a holder's command line made safe for the terminal.
#include <gtest/gtest.h>

#include "report/check_report.h"

namespace traindoc::report {
namespace {

using store::PreflightCheck;
using store::PreflightResult;
using store::Verdict;

std::vector<PreflightResult> two_traps() {
  PreflightResult ranks;
  ranks.check = PreflightCheck::kRanksExceedGpus;
  ranks.verdict = Verdict::kWillFail;
  ranks.measured = 8;
  ranks.threshold = 4;
  PreflightResult gpu;
  gpu.check = PreflightCheck::kGpuMemoryTaken;
  gpu.measured = int64_t{30} << 30;
  gpu.total = int64_t{80} << 30;
  gpu.device = 1;
  gpu.pid = 4242;
  gpu.subject = "python \x1b[2Jother.py";
  return {ranks, gpu};
}

TEST(CheckReport, GroupsWillFailThenMayFail) {
  std::string text = render_check(two_traps());
  EXPECT_EQ(text.find("will fail:\n  - 8 ranks on this node but 4 GPU(s) visible"), 0u) << text;
  size_t may = text.find("\nmay fail:\n  - GPU 1 already holds 30.0 GiB of 80.0 GiB");
  ASSERT_NE(may, std::string::npos) << text;
  EXPECT_NE(text.find("[gpu-memory-taken]\n    fix: "), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "the holder's command is printed safe";
  EXPECT_EQ(render_check({}), "traindoc check: nothing found that will or may fail\n");
}

TEST(CheckReport, TheJsonCountsAndNamesEachCheck) {
  store::PreflightFacts facts;
  nlohmann::ordered_json json = check_json(facts, two_traps());
  EXPECT_EQ(json["schema"], "traindoc.check/1");
  EXPECT_EQ(json["will_fail"], 1);
  EXPECT_EQ(json["may_fail"], 1);
  EXPECT_EQ(json["checks"][0]["check"], "ranks-exceed-gpus");
  EXPECT_EQ(json["checks"][0]["verdict"], "will-fail");
  EXPECT_EQ(json["checks"][1]["device"], 1);
  EXPECT_EQ(json["checks"][1]["pid"], 4242);
  EXPECT_TRUE(json["checks"][1]["threshold"].is_null());
  EXPECT_TRUE(json["facts"]["cuda_visible_devices"].is_null());
  EXPECT_EQ(json["facts"]["command"]["launcher"], "none");
  EXPECT_EQ(json["facts"]["command"]["local_ranks"], 1);
  EXPECT_EQ(preflight_line(two_traps()[0]).rfind("check: will fail: 8 ranks on this node", 0), 0u);
}

}  // namespace
}  // namespace traindoc::report
