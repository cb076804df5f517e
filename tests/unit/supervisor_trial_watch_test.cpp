// The trial watch of traindoc fit: due after the optimizer steps of every process that trains,
// or, where no process counts steps, after its memory stayed flat while the job worked.
#include <gtest/gtest.h>

#include "supervisor/trial_watch.h"

namespace traindoc::supervisor {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr uint64_t kMiB = 1 << 20;
using Due = TrialWatch::Due;

// Walks every 0.25 s from `from_s` to `to_s` at `bytes`, the busiest process using `cpu_share`
// of a core; returns what due() said last.
Due walk(TrialWatch& watch, double from_s, double to_s, uint64_t bytes, double cpu_share = 1) {
  Due last = Due::kNo;
  for (double t = from_s; t <= to_s; t += 0.25) {
    watch.walked(static_cast<int64_t>(t * kS), bytes, 0.25 * cpu_share);
    if (Due due = watch.due(); due != Due::kNo) last = due;
  }
  return last;
}

TEST(TrialWatch, TheStepsOfEveryRankEndATrial) {
  TrialWatch watch(4, 2 * kS);
  watch.process_started(2);
  watch.steps_counted(10, 1, store::StepKind::kOptimizer, 0);
  watch.steps_counted(10, 1, store::StepKind::kOptimizer, 4);
  EXPECT_EQ(watch.due(), Due::kNo);  // rank 1 has not stepped
  watch.steps_counted(11, 1, store::StepKind::kOptimizer, 3);
  EXPECT_EQ(watch.due(), Due::kNo);
  watch.steps_counted(11, 1, store::StepKind::kOptimizer, 4);
  EXPECT_EQ(watch.due(), Due::kSteps);
  EXPECT_EQ(watch.due(), Due::kNo);  // told once
}

TEST(TrialWatch, FlatMemoryEndsATrialWhoseStepsNobodyCounts) {
  TrialWatch watch(4, 2 * kS);
  for (int i = 0; i <= 12; ++i) {  // growing 10 MiB a walk for 3 s
    EXPECT_EQ(walk(watch, i * 0.25, i * 0.25, (280 + 10 * i) * kMiB), Due::kNo);
  }
  EXPECT_EQ(walk(watch, 3.25, 4.5, 400 * kMiB), Due::kNo);
  // A wobble under the tolerance (8 MiB, or 1 %) is flat: 2 s after the last growth.
  EXPECT_EQ(walk(watch, 4.75, 4.75, 405 * kMiB), Due::kNo);
  EXPECT_EQ(walk(watch, 5, 5, 401 * kMiB), Due::kFlatMemory);
}

TEST(TrialWatch, GrowthOrAWaitRestartsTheFlatSpell) {
  TrialWatch watch(4, 2 * kS);
  walk(watch, 0, 1.5, 300 * kMiB);
  EXPECT_EQ(walk(watch, 1.75, 3, 320 * kMiB), Due::kNo);  // grew at 1.75 s
  // Waiting (under a fifth of a core), however long, shows no working memory; working on a busy
  // machine, with less than a core to itself, does.
  EXPECT_EQ(walk(watch, 3.25, 10, 320 * kMiB, 0.1), Due::kNo);
  EXPECT_EQ(walk(watch, 10.25, 11.75, 320 * kMiB, 0.4), Due::kNo);
  EXPECT_EQ(walk(watch, 12, 12, 320 * kMiB, 0.4), Due::kFlatMemory);  // 2 s after the last wait
}

TEST(TrialWatch, AProcessWhoseStepsAreCountedLeavesItToTheSteps) {
  // The hook's first record (a count of 0) comes as it installs, before any step: a PyTorch
  // job preparing its data with flat memory is not ended.
  TrialWatch watch(4, 2 * kS);
  watch.steps_counted(10, 1, store::StepKind::kOptimizer, 0);
  EXPECT_EQ(walk(watch, 0, 30, 300 * kMiB), Due::kNo);
  // Without --steps, never.
  TrialWatch plain(0, 2 * kS);
  EXPECT_EQ(walk(plain, 0, 30, 300 * kMiB), Due::kNo);
  TrialWatch no_flat(4, 0);
  EXPECT_EQ(walk(no_flat, 0, 30, 300 * kMiB), Due::kNo);
}

}  // namespace
}  // namespace traindoc::supervisor
