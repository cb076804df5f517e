// A collective issue in words, from its facts. Supervisor process (the live line) and analysis
// (the finding), both from the same functions, so the two can never tell it differently.
// The words are what users read and tests pin: change them here and only here.
#include "store/collective_words.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "store/signal_words.h"

namespace traindoc::store {
namespace {

constexpr size_t kNamedMembers = 8;  // of a group, in its words
constexpr const char* kOdd = "the odd one: ";

bool compared(IssueField field) {
  return static_cast<int>(field) <= static_cast<int>(IssueField::kListLength);
}

// "12.3 s"
std::string seconds(int64_t ns) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f s", static_cast<double>(ns) / 1e9);
  return text;
}

// Whether the job's ranks of the group's members are known (each part carries its own).
bool named(const CollectiveIssue& issue) {
  return !issue.ranks.empty() && std::all_of(issue.ranks.begin(), issue.ranks.end(),
                                             [](const auto& r) { return r.job_rank >= 0; });
}

// The job's rank of a group rank, or the group rank where the job's are unknown.
int job_rank(const CollectiveIssue& issue, int group_rank) {
  if (!named(issue)) return group_rank;
  for (const CollectiveIssueRank& r : issue.ranks) {
    if (r.group_rank == group_rank) return r.job_rank;
  }
  return group_rank;
}

// "rank 2"; "group rank 1" where the job's ranks of the group are unknown.
std::string rank_text(const CollectiveIssue& issue, int group_rank) {
  return (named(issue) ? "rank " : "group rank ") + std::to_string(job_rank(issue, group_rank));
}

// "rank 0", "ranks 1, 2"
std::string ranks_text(const CollectiveIssue& issue, const std::vector<int>& group_ranks) {
  std::string out = group_ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < group_ranks.size(); ++i) {
    out += (i > 0 ? ", " : "") + std::to_string(job_rank(issue, group_ranks[i]));
  }
  return out;
}

// The group ranks of the parts in `states` (any state when empty), or those marked odd.
std::vector<int> ranks_in(const CollectiveIssue& issue, std::initializer_list<RankState> states,
                          bool odd_only = false) {
  std::vector<int> out;
  for (const CollectiveIssueRank& r : issue.ranks) {
    bool in =
        states.size() == 0 || std::find(states.begin(), states.end(), r.state) != states.end();
    if (in && (!odd_only || r.odd)) out.push_back(r.group_rank);
  }
  return out;
}

// Where the call was made, in words that follow it: "in the default group (2 ranks)", "in the
// group of ranks 1, 2", "from rank 1 to rank 2" (a point-to-point pair), or by the group's
// identity where its members' job ranks are unknown.
std::string where_text(const CollectiveIssue& issue) {
  std::string size = std::to_string(issue.group_size) + " ranks";
  if (issue.default_group && !issue.pair) return "in the default group (" + size + ")";
  if (named(issue) && issue.pair) {
    return "from " + rank_text(issue, 0) + " to " + rank_text(issue, 1);
  }
  if (named(issue)) {
    // A large group by its first members and size.
    std::vector<int> members(std::min<size_t>(issue.group_size, kNamedMembers));
    for (size_t r = 0; r < members.size(); ++r) members[r] = static_cast<int>(r);
    return "in the group of " + ranks_text(issue, members) +
           (static_cast<size_t>(issue.group_size) > members.size() ? ", ... (" + size + ")" : "");
  }
  char id[32];
  snprintf(id, sizeof(id), "%016" PRIx64, issue.group);
  return std::string(issue.pair ? "in pair " : "in group ") + id + " (" + size + ")";
}

// "all_reduce #12", and " at train.py:40" where the place is known.
std::string call_text(const std::string& op, uint64_t number, const std::string& site) {
  return op + " #" + std::to_string(number) + (site.empty() ? "" : " at " + site);
}

const CollectiveIssueRank* first_in(const CollectiveIssue& issue,
                                    std::initializer_list<RankState> states, bool last = false) {
  const CollectiveIssueRank* found = nullptr;
  for (const CollectiveIssueRank& r : issue.ranks) {
    if (std::find(states.begin(), states.end(), r.state) == states.end()) continue;
    found = &r;
    if (!last) break;
  }
  return found;
}

std::string compared_title(const CollectiveIssue& issue) {
  bool order = issue.kind == IssueKind::kOrder;
  std::string parts;
  for (const CollectiveIssueRank& r : issue.ranks) {
    parts += (parts.empty() ? "" : "; ") + rank_text(issue, r.group_rank) + ": " + r.value;
    if (!order && !r.site.empty()) parts += " at " + r.site;
  }
  if (order) {
    return "the ranks' call #" + std::to_string(issue.number) + " " + where_text(issue) +
           " differs (same calls in another order): " + parts;
  }
  return issue.op + " #" + std::to_string(issue.number) + " " + where_text(issue) +
         " has a different " + std::string(to_string(issue.field)) + " across ranks: " + parts;
}

std::string site_title(const CollectiveIssue& issue) {
  std::vector<int> odd = ranks_in(issue, {}, true);
  std::string odd_places;
  std::string other_places;
  for (const CollectiveIssueRank& r : issue.ranks) {
    std::string& places = r.odd || odd.empty() ? odd_places : other_places;
    places += (places.empty() ? "" : "; ") + rank_text(issue, r.group_rank) + " at " + r.site;
  }
  std::string call = issue.op + " #" + std::to_string(issue.number) + " " + where_text(issue);
  std::string out = odd.empty()
                        ? "the ranks made " + call + " from different places (" + odd_places + ")"
                        : ranks_text(issue, odd) + " made " + call +
                              " from another place than the others (" + odd_places + "; " +
                              other_places + ")";
  return out +
         ": a collective in code that not every rank runs (e.g. under `if rank == 0:`) pairs "
         "with the others' next one of the same shape, and its results are silently wrong";
}

std::string deadlock_title(const CollectiveIssue& issue) {
  std::string parts;
  bool all_recv = true;
  bool all_send = true;
  std::vector<int> sorted;
  for (const CollectiveIssueRank& r : issue.ranks) {
    bool receives = r.op == "recv";
    all_recv &= receives;
    all_send &= !receives;
    sorted.push_back(r.job_rank);
    parts += (parts.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r.job_rank) + " " +
             rank_state_text(issue, r) + " (" + r.value + ")";
  }
  std::sort(sorted.begin(), sorted.end());
  std::string who;
  for (size_t i = 0; i < sorted.size(); ++i) {
    who += (i == 0                   ? "rank "
            : i + 1 == sorted.size() ? " and rank "
                                     : ", rank ") +
           std::to_string(sorted[i]);
  }
  return who + " wait for each other in point-to-point calls that cannot complete, for " +
         seconds(issue.quiet_ns) + ": " + parts +
         (all_recv   ? ": a deadlock, each receives before it sends"
          : all_send ? ": a deadlock, each sends before it receives"
                     : ": a deadlock");
}

// Why the others' wait was over: "rank 1 exited 0 without calling it", "rank 0 gave up waiting".
std::string wait_end_text(const CollectiveIssue& issue) {
  std::string who = rank_text(issue, issue.wait_end_rank);
  switch (issue.wait_end) {
    case WaitEnd::kRankEnded:
      for (const CollectiveIssueRank& r : issue.ranks) {
        if (r.group_rank != issue.wait_end_rank || !r.end) continue;
        return who + " " + ended_words(*r.end) + (issue.alone ? "" : " without calling it");
      }
      return who + " ended";
    case WaitEnd::kEndedInIt:
      return who + " ended in it";
    case WaitEnd::kGaveUp:
      return who + " gave up waiting";
    case WaitEnd::kStalled:
      return "no rank of the group moved for " + seconds(issue.quiet_ns);
    case WaitEnd::kNone:
      break;
  }
  return "";
}

constexpr std::initializer_list<RankState> kArrived = {RankState::kWaiting, RankState::kRaised,
                                                       RankState::kIssued, RankState::kReturned};

std::string missing_title(const CollectiveIssue& issue) {
  const CollectiveIssueRank* waited = first_in(issue, kArrived);
  std::string waits = call_text(issue.op, issue.number, waited ? waited->site : "");
  if (issue.sites_differed_at != 0) {
    waits +=
        "; the ranks' call sites first differed at #" + std::to_string(issue.sites_differed_at);
  }
  std::string reason = wait_end_text(issue);
  if (issue.alone && issue.kind == IssueKind::kMissing && issue.op == kDdpBroadcastOp) {
    // The call is DDP's: the job's code made a forward through the model, not a collective.
    std::string arrived = ranks_text(issue, ranks_in(issue, kArrived, true));
    return arrived + " alone ran a forward through the DDP model" +
           (waited && !waited->site.empty() ? " at " + waited->site : "") + ", in code that only " +
           arrived + " runs: DDP's forward broadcast the model's buffers (" +
           call_text(issue.op, issue.number, "") + " " + where_text(issue) +
           "), which the others never make (" + reason + ", " + seconds(issue.waited_ns) +
           " after the call)";
  }
  if (issue.alone && issue.kind == IssueKind::kMissing) {
    std::string arrived = ranks_text(issue, ranks_in(issue, kArrived, true));
    return arrived + " alone made " + waits + " " + where_text(issue) +
           " from a place no other rank calls from: code that only " + arrived +
           " runs (e.g. under `if rank == 0:`); the others never make it (" + reason + ", " +
           seconds(issue.waited_ns) + " after the call)";
  }
  std::string missing;
  std::string last_calls;
  bool someone_waits = false;
  for (const CollectiveIssueRank& r : issue.ranks) {
    someone_waits |= (r.state == RankState::kWaiting || r.state == RankState::kIssued) && !r.end;
    if (r.state != RankState::kNeverCalled) continue;
    std::string who = rank_text(issue, r.group_rank);
    missing += (missing.empty() ? "" : ", ") + who;
    last_calls += "; " + who + "'s last call: " + (r.last_call.empty() ? "none" : r.last_call);
  }
  std::string after = " since " + seconds(issue.waited_ns) + " (" + reason + ")" + last_calls;
  if (issue.pair) {
    // One side of a pair: the other never made the matching send or recv.
    std::string waiter = rank_text(issue, waited ? waited->group_rank : 0);
    return missing + " never made the " + (issue.op == "recv" ? "send to " : "recv from ") +
           waiter + " that " + waiter + (someone_waits ? " waits for" : " made") + " in " + waits +
           after;
  }
  return missing + " never made " + waits + " " + where_text(issue) + ", which the others " +
         (someone_waits ? "wait in" : "made") + after;
}

std::string late_title(const CollectiveIssue& issue) {
  std::string who;
  for (int r : ranks_in(issue, {RankState::kCameLate})) {
    who += (who.empty() ? "" : ", ") + rank_text(issue, r);
  }
  const CollectiveIssueRank* waited = first_in(issue, {RankState::kWaited}, true);
  return who + " made " + call_text(issue.op, issue.number, waited ? waited->site : "") + " " +
         where_text(issue) + " " + seconds(issue.waited_ns) +
         " after the others: a straggler (the same call from the same place, later), not a desync";
}

std::string uneven_title(const CollectiveIssue& issue) {
  if (issue.ranks.size() < 2) return "the ranks ended unevenly";
  std::string left = std::to_string(issue.ranks[0].group_rank);
  std::string failed = std::to_string(issue.ranks[1].group_rank);
  return "rank " + left + " exited normally while rank " + failed + " still trained; rank " +
         failed + " then " + end_words(issue.ranks[1].end.value_or(RankEnd{})) + " " +
         seconds(issue.waited_ns) + " later (world of " + std::to_string(issue.group_size) +
         " ranks)";
}

}  // namespace

std::string end_words(const RankEnd& end) {
  if (end.exit_signal) {
    return "killed by " + signal_words(*end.exit_signal);
  }
  if (end.exit_code) return "exited " + std::to_string(*end.exit_code);
  return "gone";
}

std::string ended_words(const RankEnd& end) {
  bool normal = end.exit_code == 0 && !end.exit_signal;
  return end_words(end) + (end.finished && !normal ? " after its program finished" : "");
}

std::string rank_state_text(const CollectiveIssue& issue, const CollectiveIssueRank& rank) {
  std::string odd = rank.odd ? kOdd : "";
  std::string call = issue.op + " #" + std::to_string(issue.number);
  switch (rank.state) {
    case RankState::kNone:
      return "";
    case RankState::kCalled:
      return "called " + rank.op + " #" + std::to_string(issue.number);
    case RankState::kMade:
      return odd + "made " + call + (rank.odd ? " from another place" : "");
    case RankState::kWaitsIn:
      return "waits in " + rank.op + (rank.op == "recv" ? " from rank " : " to rank ") +
             std::to_string(rank.peer);
    case RankState::kElsewhere:
      return "on another machine";
    case RankState::kNeverCalled:
      return rank.end ? ended_words(*rank.end) + " without calling it" : "never called it";
    case RankState::kNeverCallsFromThere:
      return (rank.end ? ended_words(*rank.end) + "; " : "") + "never calls from there";
    case RankState::kWaiting:
      return odd + "waiting in it";
    case RankState::kRaised:
      return odd + "raised in it";
    case RankState::kIssued:
      return odd + "issued it (it completes later)";
    case RankState::kReturned:
      return odd + "returned from it";
    case RankState::kCameLate:
      return "made it " + seconds(rank.late_ns) + " after the first rank";
    case RankState::kWaited:
      return "waited in it";
    case RankState::kEnded:
      return end_words(rank.end.value_or(RankEnd{}));
  }
  return "";
}

std::string issue_title(const CollectiveIssue& issue) {
  if (!issue.words.empty()) return issue.words;
  if (compared(issue.field)) return compared_title(issue);
  switch (issue.field) {
    case IssueField::kSite:
      return site_title(issue);
    case IssueField::kDeadlock:
      return deadlock_title(issue);
    case IssueField::kLate:
      return late_title(issue);
    case IssueField::kCalls:
      return uneven_title(issue);
    default:
      return missing_title(issue);
  }
}

std::string issue_line(const CollectiveIssue& issue) {
  return std::string(to_string(issue.kind)) + ": " + issue_title(issue);
}

}  // namespace traindoc::store
