// Tests of how the reports tell a group of alike findings (a rank whose 60 forked children all
// exit with code 1): report.json carries the count and the examples, report.html and the
// terminal tell the group once, beside the root cause.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"
#include "report/html_report.h"
#include "report/json_report.h"
#include "report/terminal.h"

namespace traindoc::report {
namespace {

using namespace analysis::job;  // NOLINT(google-build-using-namespace): the shared job fixture
using json = nlohmann::ordered_json;
using testing::HasSubstr;

size_t occurrences(std::string_view text, std::string_view part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) {
    ++n;
  }
  return n;
}

struct ForkedJob {
  Evidence evidence = torchrun_job();
  std::vector<int> children = forked_children(evidence, kRank0, 3000, 60, 2.0, 1);
  analysis::Diagnosis diagnosis = analysis::diagnose(evidence);
};

TEST(AlikeReport, JsonCarriesTheCountAndTheExamples) {
  ForkedJob job;
  json report = to_json(job.diagnosis);
  std::vector<json> exits;
  for (const json& f : report["findings"]) {
    if (f["kind"] == "worker-exit") exits.push_back(f);
  }
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_TRUE(exits[0]["root_cause"].get<bool>());
  EXPECT_FALSE(exits[0].contains("repeated"));
  EXPECT_EQ(exits[0]["pids"], json::array({job.children[0]}));
  const json& repeated = exits[1]["repeated"];
  EXPECT_EQ(repeated["count"], 59);
  EXPECT_EQ(repeated["first_ns"], process(job.evidence, job.children[1]).end_ns);
  EXPECT_EQ(repeated["last_ns"], process(job.evidence, job.children.back()).end_ns);
  ASSERT_EQ(repeated["examples"].size(), 4u);
  EXPECT_EQ(repeated["examples"][0]["pids"], json::array({job.children[1]}));
  EXPECT_EQ(repeated["examples"][3]["pids"], json::array({job.children.back()}));
  EXPECT_EQ(repeated["examples"][3]["time_ns"], repeated["last_ns"]);
  EXPECT_THAT(repeated["examples"][3]["title"].get<std::string>(), HasSubstr("exited with code 1"));
  EXPECT_EQ(exits[1]["pids"].size(), 59u);
}

TEST(AlikeReport, HtmlTellsTheGroupOnceWithItsPidsCut) {
  ForkedJob job;
  std::string html = render_html(job.diagnosis, job.evidence);
  EXPECT_EQ(occurrences(html, "data-kind=\"worker-exit\""), 2u);
  EXPECT_EQ(occurrences(html, "data-repeated=\"59\""), 1u);
  // Told once among the findings (the charts' marker of it, an error, names it again).
  std::string findings = html.substr(0, html.find("<section id=\"charts\">"));
  EXPECT_EQ(occurrences(findings, "(and 58 more alike)"), 1u);
  EXPECT_THAT(html, HasSubstr("pids " + std::to_string(job.children[1]) + ", "));
  EXPECT_THAT(html, HasSubstr(" and 39 more"));
  EXPECT_EQ(occurrences(html, std::to_string(job.children[30])), 1u);  // in the process table
}

TEST(AlikeReport, TerminalTellsTheGroupOnce) {
  ForkedJob job;
  std::string text = render_summary(job.diagnosis, "runs/x", {});
  EXPECT_EQ(occurrences(text, "[worker-exit]"), 2u);
  EXPECT_EQ(occurrences(text, "(and 58 more alike)"), 1u);
  EXPECT_THAT(text, HasSubstr("59 alike findings: "));
}

}  // namespace
}  // namespace traindoc::report
