// Tests of the log tap's line splitter: the lines cited are the same wherever reads cut the
// output, a progress bar keeps its last redraw, and which lines are cited.
#include "supervisor/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace traindoc::supervisor {
namespace {

// The lines cited of `output` read in pieces cut at `cuts` (offsets, ascending).
std::vector<store::LogLine> split(std::string_view output, const std::vector<size_t>& cuts = {}) {
  LineSplitter splitter;
  std::vector<store::LogLine> cited;
  size_t from = 0;
  for (size_t cut : cuts) {
    splitter.scan(output.substr(from, cut - from), "stderr", 0, cited);
    from = cut;
  }
  splitter.scan(output.substr(from), "stderr", 0, cited);
  splitter.end_partial("stderr", 0, cited);
  return cited;
}

std::vector<std::string> texts(const std::vector<store::LogLine>& lines) {
  std::vector<std::string> out;
  for (const store::LogLine& line : lines) out.push_back(line.text);
  return out;
}

TEST(LineSplitter, CitesTheSameLinesWhereverAReadCutsThem) {
  std::string output = "step 1\r\nstep 2\n\rEpoch 1: 1/2\rEpoch 1: 2/2\rTraceback\r\n\rlast\r";
  std::vector<store::LogLine> whole = split(output);
  EXPECT_EQ(texts(whole), (std::vector<std::string>{"step 1", "step 2", "Traceback", "last"}));
  for (size_t cut = 0; cut <= output.size(); ++cut) {
    EXPECT_EQ(split(output, {cut}), whole) << "cut at " << cut;
    for (size_t second = cut; second <= output.size(); ++second) {
      ASSERT_EQ(split(output, {cut, second}), whole) << "cut at " << cut << " and " << second;
    }
  }
}

// A redraw right at the end of a read, after more than a kept line of text, found by
// fuzz_log_tap: the line kept is the text after it, as when one read holds it all.
TEST(LineSplitter, ARedrawThatEndsAReadAfterALongLineStartsTheLineAgain) {
  std::string output = std::string(5000, 'x') + "\rRuntimeError: last state\n";
  std::vector<store::LogLine> whole = split(output);
  ASSERT_EQ(texts(whole), std::vector<std::string>{"RuntimeError: last state"});
  EXPECT_EQ(split(output, {5001}), whole);
  EXPECT_EQ(split(output, {4096, 5001}), whole);
}

TEST(LineSplitter, KeepsAtMostAKeptLengthOfALine) {
  std::string output = "RuntimeError: " + std::string(10000, 'x') + "\n";
  for (std::vector<size_t> cuts : {std::vector<size_t>{}, {100}, {4096, 4200}}) {
    std::vector<store::LogLine> lines = split(output, cuts);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].text, output.substr(0, 4096));
  }
}

// Past the first lines only those with an anchor are looked at: one hidden by a redraw, or past
// the kept length, is not cited; one after a redraw is.
TEST(LineSplitter, PastTheFirstLinesCitesTheLinesWhoseShownTextHoldsAnAnchor) {
  std::string output;
  for (int i = 1; i <= 100; ++i) output += "step " + std::to_string(i) + "\n";
  output += "plain\nRuntimeError: shown\n\n\r\nTraceback hidden\rprogress 2/2\n";
  output += "progress\rNCCL WARN after a redraw\r\n" + std::string(5000, 'x');
  output += " CUDA error past the kept length\nWARN x\rError\r\nlast RuntimeError\nno newline";
  uint64_t lines = 0;
  std::vector<store::LogLine> expected = cited_by_definition(output, "stderr", 0, lines);
  std::vector<std::string> past_first;
  for (size_t i = 100; i < expected.size(); ++i) past_first.push_back(expected[i].text);
  EXPECT_EQ(past_first, (std::vector<std::string>{"RuntimeError: shown", "NCCL WARN after a redraw",
                                                  "Error", "last RuntimeError"}));
  EXPECT_EQ(lines, 110u);
  EXPECT_EQ(split(output), expected);
  for (size_t cut = 0; cut <= output.size(); ++cut) {
    ASSERT_EQ(split(output, {cut}), expected) << "cut at " << cut;
  }
  for (size_t cut = 0; cut + 700 <= output.size(); cut += 97) {
    ASSERT_EQ(split(output, {cut, cut + 1, cut + 700}), expected) << "cuts at " << cut;
  }
}

TEST(LineSplitter, CitesTheFirstLinesThenThoseThatLookLikeErrors) {
  std::string output;
  for (int i = 1; i <= 120; ++i) output += "step " + std::to_string(i) + "\n";
  output += "RuntimeError: boom\nstep 122";
  LineSplitter splitter;
  std::vector<store::LogLine> cited;
  EXPECT_EQ(splitter.scan(output, "stdout", 7, cited), 121u);
  EXPECT_TRUE(splitter.end_partial("stdout", 8, cited));
  EXPECT_FALSE(splitter.end_partial("stdout", 9, cited));
  EXPECT_EQ(splitter.lines(), 122u);
  ASSERT_EQ(cited.size(), 101u);
  EXPECT_EQ(cited[99].text, "step 100");
  EXPECT_EQ(cited[100].number, 121u);
  EXPECT_EQ(cited[100].text, "RuntimeError: boom");
  EXPECT_EQ(cited[100].t_ns, 7);
  EXPECT_EQ(cited[100].stream, "stdout");
  EXPECT_TRUE(worth_citing(100, "step"));
  EXPECT_FALSE(worth_citing(101, "step"));
  EXPECT_EQ(shown_line("a\rb\r"), "b");
}

}  // namespace
}  // namespace traindoc::supervisor
