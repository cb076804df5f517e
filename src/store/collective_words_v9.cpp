// The words of schema 9's collective issues, read back into facts. analyze and report, while
// reading a run.db. The words are those the checker wrote up to schema 9 (docs/run-db.md): they
// never change, so this file never needs to follow a rewording of collective_words.cpp.
#include "store/collective_words_v9.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

namespace traindoc::store {
namespace {

constexpr std::string_view kOdd = "the odd one: ";
constexpr std::string_view kFinished = " after its program finished";
constexpr int kMaxSignal = 64;

bool take_prefix(std::string_view& text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return false;
  text.remove_prefix(prefix.size());
  return true;
}

bool take_suffix(std::string_view& text, std::string_view suffix) {
  if (!text.ends_with(suffix)) return false;
  text.remove_suffix(suffix.size());
  return true;
}

std::optional<int> number(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "SIGSEGV" -> 11, as sigabbrev_np names them.
std::optional<int> signal_named(std::string_view name) {
  if (!take_prefix(name, "SIG")) return std::nullopt;
  for (int sig = 1; sig <= kMaxSignal; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  return std::nullopt;
}

// "exited 1", "killed by SIGTERM", "killed by signal 40", "gone", each perhaps followed by
// " after its program finished".
std::optional<RankEnd> end_from_words(std::string_view text) {
  RankEnd end;
  end.finished = take_suffix(text, kFinished);
  if (text == "gone") return end;
  if (take_prefix(text, "exited ")) {
    end.exit_code = number(text);
    return end.exit_code ? std::optional(end) : std::nullopt;
  }
  if (!take_prefix(text, "killed by ")) return std::nullopt;
  end.exit_signal = take_prefix(text, "signal ") ? number(text) : signal_named(text);
  return end.exit_signal ? std::optional(end) : std::nullopt;
}

// "waits in recv from rank 1", "waits in send to rank 0", without "waits in ".
void waits_in(std::string_view text, CollectiveIssueRank& rank) {
  size_t space = text.find(' ');
  rank.state = RankState::kWaitsIn;
  rank.op = std::string(text.substr(0, space));
  size_t at = text.rfind(' ');
  if (at != std::string_view::npos) rank.peer = number(text.substr(at + 1)).value_or(-1);
}

// A state that is one phrase, with no operands.
std::optional<RankState> plain_state(std::string_view text) {
  struct Phrase {
    std::string_view words;
    RankState state;
  };
  static constexpr Phrase kPhrases[] = {
      {"", RankState::kNone},
      {"on another machine", RankState::kElsewhere},
      {"never called it", RankState::kNeverCalled},
      {"waiting in it", RankState::kWaiting},
      {"raised in it", RankState::kRaised},
      {"issued it (it completes later)", RankState::kIssued},
      {"returned from it", RankState::kReturned},
      {"waited in it", RankState::kWaited},
  };
  for (const Phrase& phrase : kPhrases) {
    if (phrase.words == text) return phrase.state;
  }
  return std::nullopt;
}

}  // namespace

void issue_facts_from_words(const std::string& message, CollectiveIssue& issue) {
  size_t cut = message.find(": ");
  issue.words = cut == std::string::npos ? message : message.substr(cut + 2);
  issue.pair = issue.op == "send" || issue.op == "recv";
}

void rank_facts_from_words(const std::string& state, CollectiveIssueRank& rank) {
  std::string_view text = state;
  rank.odd = take_prefix(text, kOdd);
  if (std::optional<RankState> plain = plain_state(text)) {
    rank.state = *plain;
  } else if (text == "called" || take_prefix(text, "called ")) {  // "called" alone: schema 3
    rank.state = RankState::kCalled;
    rank.op = std::string(text.substr(0, text.find(' ')));
  } else if (text.starts_with("made it ")) {
    rank.state = RankState::kCameLate;
    // The value held the lateness, "9.0 s".
    rank.late_ns = std::llround(std::strtod(rank.value.c_str(), nullptr) * 1e9);
    rank.value.clear();
  } else if (text.starts_with("made ")) {
    rank.state = RankState::kMade;
  } else if (take_prefix(text, "waits in ")) {
    waits_in(text, rank);
  } else if (take_suffix(text, " without calling it")) {
    rank.state = RankState::kNeverCalled;
    rank.end = end_from_words(text);
  } else if (take_suffix(text, "never calls from there")) {
    rank.state = RankState::kNeverCallsFromThere;
    if (take_suffix(text, "; ")) rank.end = end_from_words(text);
  } else if (std::optional<RankEnd> end = end_from_words(text)) {
    rank.state = RankState::kEnded;
    rank.end = end;
  } else {
    rank.state = RankState::kNone;
  }
}

}  // namespace traindoc::store
