// A collective issue's facts: their names read back, each rank state in words, and the words of
// schema 9 read back into the same facts.
#include <gtest/gtest.h>

#include <csignal>
#include <set>
#include <string>

#include "store/collective_facts.h"
#include "store/collective_words.h"
#include "store/collective_words_v9.h"

namespace traindoc::store {
namespace {

template <typename Enum, typename Named>
void expect_names_read_back(std::span<const Enum> values, Named named) {
  std::set<std::string_view> names;
  for (Enum value : values) {
    EXPECT_TRUE(names.insert(to_string(value)).second) << to_string(value);
    EXPECT_EQ(named(to_string(value)), value);
  }
  EXPECT_EQ(named("no such name"), std::nullopt);
}

TEST(CollectiveFacts, NamesAreUniqueAndReadBack) {
  expect_names_read_back(all_issue_kinds(), issue_kind_named);
  expect_names_read_back(all_issue_fields(), issue_field_named);
  expect_names_read_back(all_wait_ends(), wait_end_named);
  expect_names_read_back(all_rank_states(), rank_state_named);
  EXPECT_EQ(to_string(IssueField::kRedop), "reduce op");  // the run.db names of schema 3
  EXPECT_EQ(to_string(IssueKind::kMissing), "collective-missing");
}

TEST(CollectiveWords, AnEndInWords) {
  EXPECT_EQ(end_words({.exit_code = 3}), "exited 3");
  EXPECT_EQ(end_words({.exit_signal = SIGSEGV}), "killed by SIGSEGV");
  EXPECT_EQ(end_words({}), "gone");
  EXPECT_EQ(ended_words({.exit_signal = SIGABRT, .finished = true}),
            "killed by SIGABRT after its program finished");
  EXPECT_EQ(ended_words({.exit_code = 0, .finished = true}), "exited 0");
}

// Every state the checker writes, in the words schema 9 stored, reads back into facts that say
// the same words again: old files read as the checker meant them.
TEST(CollectiveWords, TheWordsOfSchema9ReadBackIntoTheSameFacts) {
  CollectiveIssue issue;
  issue.op = "all_reduce";
  issue.number = 4;
  for (const char* words : {"",
                            "called all_reduce #4",
                            "made all_reduce #4",
                            "the odd one: made all_reduce #4 from another place",
                            "waits in recv from rank 2",
                            "waits in send to rank 0",
                            "on another machine",
                            "never called it",
                            "exited 0 without calling it",
                            "killed by SIGABRT after its program finished without calling it",
                            "never calls from there",
                            "killed by SIGTERM; never calls from there",
                            "waiting in it",
                            "the odd one: waiting in it",
                            "raised in it",
                            "issued it (it completes later)",
                            "the odd one: returned from it",
                            "waited in it",
                            "exited 1",
                            "killed by signal 40",
                            "gone"}) {
    CollectiveIssueRank rank;
    rank_facts_from_words(words, rank);
    EXPECT_EQ(rank_state_text(issue, rank), words);
  }
  CollectiveIssueRank late;
  late.value = "9.0 s";
  rank_facts_from_words("made it 9.0 s after the first rank", late);
  EXPECT_EQ(late.state, RankState::kCameLate);
  EXPECT_EQ(late.late_ns, 9'000'000'000);
  EXPECT_EQ(late.value, "");
  EXPECT_EQ(rank_state_text(issue, late), "made it 9.0 s after the first rank");
}

// A title is made from the facts, or is the words an older file held.
TEST(CollectiveWords, TheLineIsTheKindThenTheTitle) {
  CollectiveIssue issue;
  issue.kind = IssueKind::kUnevenInputs;
  issue.field = IssueField::kCalls;
  issue.group_size = 2;
  issue.waited_ns = 2'000'000'000;
  issue.ranks = {{.group_rank = 0, .state = RankState::kEnded, .end = RankEnd{.exit_code = 0}},
                 {.group_rank = 1, .state = RankState::kEnded, .end = RankEnd{.exit_code = 1}}};
  EXPECT_EQ(issue_line(issue),
            "uneven-inputs: rank 0 exited normally while rank 1 still trained; rank 1 then "
            "exited 1 2.0 s later (world of 2 ranks)");
  issue_facts_from_words("uneven-inputs: as an old traindoc said it", issue);
  EXPECT_EQ(issue_title(issue), "as an old traindoc said it");
}

}  // namespace
}  // namespace traindoc::store
