// Tests of the text the report carries from the job: what is not UTF-8 becomes U+FFFD, the same
// in JSON (nlohmann's replacing dump) and in HTML (valid_utf8), and what a terminal would act on
// is written out visibly.
#include "report/safe_text.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "report/json_report.h"

namespace traindoc::report {
namespace {

using namespace std::string_literals;

constexpr const char* kReplacement = "\xEF\xBF\xBD";

std::string replaced(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += kReplacement;
  return out;
}

TEST(ValidUtf8, KeepsUtf8AsItIs) {
  for (std::string text :
       {""s, "plain ascii"s, "caf\xC3\xA9"s, "\xE6\x97\xA5\xE6\x9C\xAC"s, "\xF0\x9F\x94\xA5"s,
        "\xEF\xBF\xBF"s, "\xF4\x8F\xBF\xBF"s, "nul \0 inside"s, "\x1b[2J\x7f\xC2\x9B"s}) {
    EXPECT_EQ(valid_utf8(text), text);
  }
}

TEST(ValidUtf8, ReplacesEachLoneByteAndEachCutSequenceOnce) {
  EXPECT_EQ(valid_utf8("caf\xE9"), "caf"s + kReplacement);
  EXPECT_EQ(valid_utf8("\x80\xBF"), replaced(2));          // continuations without a lead
  EXPECT_EQ(valid_utf8("\xC0\x80"), replaced(2));          // overlong NUL: C0 never leads
  EXPECT_EQ(valid_utf8("\xE0\x80\x80"), replaced(3));      // overlong: E0 needs A0..BF next
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), replaced(3));      // a surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), replaced(4));  // past U+10FFFF
  EXPECT_EQ(valid_utf8("\xF5\xFF"), replaced(2));
  // A sequence cut short is one error, and the byte that cut it starts afresh.
  EXPECT_EQ(valid_utf8("\xE6\x97x"), kReplacement + "x"s);
  EXPECT_EQ(valid_utf8("\xF0\x9F\x94"), replaced(1));
  EXPECT_EQ(valid_utf8("\xE6\x97\xC3\xA9"), kReplacement + "\xC3\xA9"s);
}

// report.json (nlohmann's replacing dump) and report.html (valid_utf8) show the same text.
TEST(ValidUtf8, AgreesWithTheJsonDump) {
  std::mt19937 random(7);
  // Bytes around the edges of UTF-8's ranges, so that most strings mix valid and broken parts.
  const unsigned char edges[] = {'a',  0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0,
                                 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED,
                                 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF};
  std::uniform_int_distribution<size_t> pick(0, sizeof edges - 1);
  std::uniform_int_distribution<size_t> length(0, 12);
  for (int n = 0; n < 20000; ++n) {
    std::string text;
    for (size_t i = length(random); i > 0; --i) text += static_cast<char>(edges[pick(random)]);
    nlohmann::ordered_json value = text;
    std::string dumped = json_dump(value);
    EXPECT_EQ(nlohmann::ordered_json::parse(dumped).get<std::string>(), valid_utf8(text))
        << testing::PrintToString(text);
  }
}

TEST(JsonDump, NeverThrowsAndLeavesNothingATerminalWouldActOn) {
  nlohmann::ordered_json value = {{"text", "caf\xE9 \x7f \xC2\x9B[2J \xC2\x85 \xC2\xA0 \x1b"}};
  std::string dumped = json_dump(value);
  EXPECT_EQ(dumped, R"({"text":"caf)"s + kReplacement + R"( \u007f \u009b[2J \u0085 )" +
                        "\xC2\xA0" + R"( \u001b"})");
  EXPECT_EQ(nlohmann::ordered_json::parse(dumped)["text"],
            "caf"s + kReplacement + " \x7f \xC2\x9B[2J \xC2\x85 \xC2\xA0 \x1b");
}

TEST(TerminalSafe, KeepsPrintableTextAndTabs) {
  for (std::string text : {""s, "rank 0 (pid 42): loss=nan\tstep 7"s, "caf\xC3\xA9 \xE6\x97\xA5"s,
                           "\xC2\xA0 no-break space"s, "back\\slash"s}) {
    EXPECT_EQ(terminal_safe(text), text);
  }
}

TEST(TerminalSafe, WritesOutWhatATerminalWouldObey) {
  EXPECT_EQ(terminal_safe("\x1b]0;owned\x07"), "\\x1b]0;owned\\x07");
  EXPECT_EQ(terminal_safe("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(terminal_safe("line\nfake line\rover"), "line\\nfake line\\rover");
  EXPECT_EQ(terminal_safe("nul \0 del \x7f"s), "nul \\x00 del \\x7f");
  // C1 controls: as UTF-8 (CSI, NEL), and as the lone bytes some terminals take for them.
  EXPECT_EQ(terminal_safe("\xC2\x9B[2J \xC2\x85"), "\\u009b[2J \\u0085");
  EXPECT_EQ(terminal_safe("\x9B[2J \x90"), "\\x9b[2J \\x90");
  EXPECT_EQ(terminal_safe("caf\xE9"), "caf\\xe9");
  EXPECT_EQ(terminal_safe("\xE6\x97x"), "\\xe6\\x97x");
}

}  // namespace
}  // namespace traindoc::report
