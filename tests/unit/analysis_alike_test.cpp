// Tests of the grouping of alike findings, through diagnose(): a rank that forks many short
// children failing the same way gets one finding for them, with the count and a few examples;
// the root cause stays a finding of its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "analysis_job_fixture.h"

namespace traindoc::analysis {
namespace {

using namespace job;  // NOLINT(google-build-using-namespace): the shared job fixture

using testing::Contains;
using testing::ElementsAre;
using testing::HasSubstr;
using testing::Not;
using testing::UnorderedElementsAreArray;

std::vector<const Finding*> of_kind(const Diagnosis& d, FindingKind kind) {
  std::vector<const Finding*> out;
  for (const Finding& f : d.findings) {
    if (f.kind == kind) out.push_back(&f);
  }
  return out;
}

// Rank 0 forks 60 children that exit with code 1, then 20 that exit with code 2.
TEST(AlikeFindings, ManyChildrenFailingAlikeAreOneFindingBesideTheRootCause) {
  Evidence e = torchrun_job();
  std::vector<int> ones = forked_children(e, kRank0, 3000, 60, 2.0, 1);
  std::vector<int> twos = forked_children(e, kRank0, 4000, 20, 5.0, 2);
  Diagnosis d = diagnose(e);
  std::vector<const Finding*> exits = of_kind(d, FindingKind::kWorkerExit);
  ASSERT_EQ(exits.size(), 3u);
  // The root cause: the first child's exit, alone and whole.
  const Finding& root = d.findings.front();
  EXPECT_EQ(&root, exits[0]);
  EXPECT_TRUE(root.root_cause);
  EXPECT_FALSE(root.repeats);
  EXPECT_THAT(root.pids, ElementsAre(ones[0]));
  EXPECT_THAT(root.title, Not(HasSubstr("more alike")));
  // Each finding carries its moment: the root cause's exit, a group's first member's.
  EXPECT_EQ(root.t_ns, process(e, ones[0]).end_ns);
  // The other 59 of code 1: one finding, its consequence, naming them all.
  const Finding& rest = *exits[1];
  ASSERT_TRUE(rest.repeats);
  EXPECT_EQ(rest.repeats->count, 59u);
  EXPECT_THAT(rest.pids, UnorderedElementsAreArray(std::vector<int>(ones.begin() + 1, ones.end())));
  EXPECT_THAT(rest.ranks, ElementsAre(0));
  EXPECT_THAT(rest.title, HasSubstr("exited with code 1 (and 58 more alike)"));
  EXPECT_EQ(rest.repeats->first_ns, process(e, ones[1]).end_ns);
  EXPECT_EQ(rest.repeats->last_ns, process(e, ones.back()).end_ns);
  EXPECT_EQ(rest.t_ns, rest.repeats->first_ns);
  // The first three and the last, each naming its process.
  ASSERT_EQ(rest.repeats->examples.size(), 4u);
  EXPECT_THAT(rest.repeats->examples[0].pids, ElementsAre(ones[1]));
  EXPECT_THAT(rest.repeats->examples[2].pids, ElementsAre(ones[3]));
  EXPECT_THAT(rest.repeats->examples[3].pids, ElementsAre(ones.back()));
  EXPECT_THAT(rest.repeats->examples[3].title,
              HasSubstr("(pid " + std::to_string(ones.back()) + ") exited with code 1"));
  EXPECT_EQ(rest.repeats->examples[3].t_ns, rest.repeats->last_ns);
  ASSERT_FALSE(rest.evidence.empty());
  EXPECT_THAT(rest.evidence.front(), HasSubstr("59 alike findings: "));
  EXPECT_THAT(rest.evidence.front(), HasSubstr("; the last, "));
  EXPECT_THAT(rest.evidence.front(), HasSubstr("at +2.6 s"));
  // Another exit code is another cause: a group of its own.
  const Finding& other = *exits[2];
  ASSERT_TRUE(other.repeats);
  EXPECT_EQ(other.repeats->count, 20u);
  EXPECT_THAT(other.pids, UnorderedElementsAreArray(twos));
  EXPECT_THAT(other.title, HasSubstr("exited with code 2 (and 19 more alike)"));
  // Both groups are what the root cause caused, by their index after the grouping.
  std::vector<size_t> caused = root.consequences;
  for (const Finding* group : {&rest, &other}) {
    auto index = static_cast<size_t>(group - d.findings.data());
    EXPECT_NE(std::find(caused.begin(), caused.end(), index), caused.end());
  }
  for (size_t k : caused) EXPECT_LT(k, d.findings.size());
}

// Two alike findings read well one by one: from three on they are grouped.
TEST(AlikeFindings, TwoAlikeAfterTheRootCauseStayApart) {
  Evidence e = torchrun_job();
  forked_children(e, kRank0, 3000, 3, 2.0, 1);
  Diagnosis d = diagnose(e);
  std::vector<const Finding*> exits = of_kind(d, FindingKind::kWorkerExit);
  ASSERT_EQ(exits.size(), 3u);
  for (const Finding* f : exits) {
    EXPECT_FALSE(f->repeats);
    EXPECT_EQ(f->pids.size(), 1u);
  }
}

// Children of two ranks failing alike are one group, with both ranks.
TEST(AlikeFindings, AGroupNamesEveryRankOfItsProcesses) {
  Evidence e = torchrun_job();
  forked_children(e, kRank0, 3000, 5, 2.0, 1);
  forked_children(e, kRank1, 4000, 5, 3.0, 1);
  Diagnosis d = diagnose(e);
  std::vector<const Finding*> exits = of_kind(d, FindingKind::kWorkerExit);
  ASSERT_EQ(exits.size(), 2u);
  ASSERT_TRUE(exits[1]->repeats);
  EXPECT_EQ(exits[1]->repeats->count, 9u);
  EXPECT_THAT(exits[1]->ranks, ElementsAre(0, 1));
}

// Alike warnings before the root cause are not its consequences, those after it are: two
// groups, only the second linked to it.
TEST(AlikeFindings, WhatTheRootCauseCausedIsGroupedApartFromWhatCameBefore) {
  Evidence e = torchrun_job();
  std::vector<int> before = forked_children(e, kRank0, 3000, 4, 2.0, 0);
  std::vector<int> after = forked_children(e, kRank0, 4000, 4, 20.0, 0);
  for (int pid : before) killed(e, pid, 2.5, SIGTERM);
  for (int pid : after) killed(e, pid, 20.5, SIGTERM);
  for (store::ProcessRecord& p : e.processes) {
    if (p.exit_signal) p.exit_code.reset();
  }
  e.crashes = {store::Crash{}};
  e.crashes[0].pid = kRank1;
  e.crashes[0].start_ticks = 500'101;
  e.crashes[0].signo = SIGSEGV;
  e.crashes[0].code = 1;  // SEGV_MAPERR
  e.crashes[0].time_ns = at(10);
  killed(e, kRank1, 10.05, SIGSEGV);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  const Finding& root = d.findings.front();
  EXPECT_TRUE(root.root_cause);
  EXPECT_THAT(root.pids, ElementsAre(kRank1));
  std::map<int, size_t> group_of;  // pid -> index of its finding
  for (size_t i = 0; i < d.findings.size(); ++i) {
    for (int pid : d.findings[i].pids) group_of[pid] = i;
  }
  size_t early = group_of.at(before.front());
  size_t late = group_of.at(after.front());
  ASSERT_NE(early, late);
  for (int pid : before) EXPECT_EQ(group_of.at(pid), early);
  for (int pid : after) EXPECT_EQ(group_of.at(pid), late);
  ASSERT_TRUE(d.findings[early].repeats);
  ASSERT_TRUE(d.findings[late].repeats);
  EXPECT_EQ(d.findings[early].repeats->count, 4u);
  EXPECT_THAT(root.consequences, Contains(late));
  EXPECT_THAT(root.consequences, Not(Contains(early)));
}

TEST(AlikeFindings, AFindingOfItsOwnHasNoRepeats) {
  Evidence e = torchrun_job();
  exited(e, kRank0, 2.0, 1);
  Diagnosis d = diagnose(e);
  ASSERT_FALSE(d.findings.empty());
  for (const Finding& f : d.findings) EXPECT_FALSE(f.repeats);
  EXPECT_THAT(d.findings.front().evidence, Not(testing::IsEmpty()));
}

}  // namespace
}  // namespace traindoc::analysis
