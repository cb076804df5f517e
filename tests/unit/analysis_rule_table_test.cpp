// The table of rules (rule_table.cpp) and the words the catalog's entries carry
// (signature_table.h, signature_words.h): the order rules run in, and where a match's words come
// from.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "analysis/known_failure.h"
#include "analysis/rules.h"
#include "analysis/signature_words.h"

namespace traindoc::analysis {
namespace {

using testing::HasSubstr;
using testing::Not;

size_t position(const std::string& name) {
  std::span<const Rule> rules = rule_table();
  auto it = std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.name == name; });
  return static_cast<size_t>(it - rules.begin());
}

TEST(RuleTable, EachRuleOnceInPhaseOrder) {
  std::span<const Rule> rules = rule_table();
  std::set<std::string> names;
  for (size_t i = 0; i < rules.size(); ++i) {
    EXPECT_TRUE(names.insert(rules[i].name).second) << rules[i].name;
    EXPECT_NE(rules[i].run, nullptr) << rules[i].name;
    if (i > 0) {
      EXPECT_LE(rules[i - 1].phase, rules[i].phase) << rules[i].name;
    }
  }
  EXPECT_EQ(rules.size(), 15u);
}

TEST(RuleTable, TheOrderTheRulesRelyOn) {
  EXPECT_LT(position("native_crash"), position("killed"));
  EXPECT_LT(position("stop_request"), position("killed"));
  EXPECT_LT(position("gpu_oom"), position("failed_exit"));
  EXPECT_LT(position("cuda_error"), position("failed_exit"));
  EXPECT_LT(position("failed_exit"), position("memory_leak"));
  EXPECT_LT(position("collectives"), position("idle"));
  // Last: it reads the failures of every rule before it.
  EXPECT_EQ(position("preflight"), rule_table().size() - 1);
}

TEST(SignatureWords, FixedWordsOfTheEntry) {
  SignatureMatch m{"torch.gloo-connect-timeout", FindingKind::kRendezvousTimeout, true, {}};
  std::optional<KnownFailure> f = describe_known({m});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->title, "timed out in init_process_group waiting for the other ranks to connect");
  EXPECT_EQ(f->fix, words::kJoinFix);
}

TEST(SignatureWords, DescriberThenTheEntrysFix) {
  SignatureMatch m{"torch.target-out-of-bounds", FindingKind::kLabelOutOfRange, true, {}};
  std::optional<KnownFailure> f = describe_known({m});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->title, "a target label is outside [0, classes)");
  EXPECT_EQ(f->fix, words::kLabelFix);  // the describer sets one only for a label it knows
}

TEST(SignatureWords, ALabelThatIsAClassIsNotOneToIgnore) {
  SignatureMatch m{
      "torch.target-out-of-bounds", FindingKind::kLabelOutOfRange, true, {{"label", "12"}}};
  std::optional<KnownFailure> f = describe_known({m});
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->title, "target label 12 is outside [0, classes)");
  EXPECT_THAT(f->fix, HasSubstr("too few classes"));
  EXPECT_THAT(f->fix, HasSubstr("the labels are wrong"));
  EXPECT_THAT(f->fix, Not(HasSubstr("ignore_index")));
  // The GPU's assertion names no label: the words of the rule that tells it too.
  EXPECT_EQ(words::label_fix(std::nullopt, std::nullopt, std::nullopt), words::kLabelFix);
}

// The hook's numbers come from run.db, which may hold anything: the words never wrap around.
TEST(SignatureWords, ALabelFixAtTheLimitsOfInt64) {
  std::string fix = words::label_fix(INT64_MAX, INT64_MIN, std::nullopt);
  EXPECT_THAT(fix, HasSubstr("to at least 9223372036854775807)")) << fix;
  EXPECT_THAT(fix, HasSubstr("0..-9223372036854775808")) << fix;
  EXPECT_THAT(fix, Not(HasSubstr("0..9223372036854775807"))) << fix;
}

// The batch's largest label bounds the classes the labels need; equal to the class count, it is
// the mark of labels numbered from 1; a void 255 beside them is to ignore, never a real class.
TEST(SignatureWords, ALabelFixNamesTheLargestLabelOfTheBatch) {
  std::string fix = words::label_fix(5, 3, 9);
  EXPECT_THAT(fix, HasSubstr("Label 5 is beyond the model's 3 classes (0..2), and the batch's "
                             "labels go up to 9: either the model has too few classes"))
      << fix;
  EXPECT_THAT(fix, HasSubstr("to at least 10)")) << fix;
  EXPECT_THAT(fix, Not(HasSubstr("ignore_index"))) << fix;
  fix = words::label_fix(10, 10, 10);
  EXPECT_THAT(fix, HasSubstr("labels numbered from 1 (1..10): subtract 1 from them")) << fix;
  EXPECT_THAT(fix, Not(HasSubstr("1-based labelling gives"))) << fix;
  fix = words::label_fix(19, 19, 255);
  EXPECT_THAT(fix, HasSubstr("to at least 20)")) << fix;
  EXPECT_THAT(fix, HasSubstr("The targets also hold 255")) << fix;
  EXPECT_THAT(fix, HasSubstr("ignore_index=255")) << fix;
  // A largest below the label (the hook left out the ignored one) changes nothing.
  EXPECT_EQ(words::label_fix(5, 3, 2), words::label_fix(5, 3, std::nullopt));
}

TEST(SignatureWords, RefinedKindSpeaksForItself) {
  const char* line =
      "RuntimeError: unable to open shared memory object </torch_38223_3055134446_48> in "
      "read-write mode: Too many open files (24)";
  std::optional<KnownFailure> f = describe_known(match_line(line));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->kind, FindingKind::kFdExhausted);
  EXPECT_EQ(f->fix, words::kFdExhaustedFix);
}

TEST(SignatureWords, SpeedHintIsInfo) {
  for (const SignatureMatch& m :
       match_line("[W reducer.cpp:1298] Warning: find_unused_parameters=True was specified in "
                  "DDP constructor, but did not find any unused parameters in the forward pass.")) {
    if (m.id != "torch.ddp-unused-search-needless") continue;
    KnownFailure f = describe_match(m);
    EXPECT_TRUE(f.info);
    EXPECT_TRUE(f.title.starts_with("DDP looks for unused parameters every step"));
    return;
  }
  FAIL() << "no match";
}

TEST(SignatureWords, NoWordsForAnUnknownId) {
  SignatureMatch m{"no.such-signature", FindingKind::kPythonException, true, {}};
  KnownFailure f = describe_match(m);
  EXPECT_TRUE(f.title.empty());
  EXPECT_TRUE(f.fix.empty());
}

}  // namespace
}  // namespace traindoc::analysis
