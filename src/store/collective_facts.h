// The facts of a collective issue that are names in run.db: its kind, what differs across the
// ranks, why a wait was over, and each rank's state. Written by the supervisor's collective
// checker, read by analysis; adding a value is one line here. The names are the run.db format.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

// X(enumerator, name): the finding kinds the checker files (docs/findings.md).
#define TRAINDOC_COLLECTIVE_ISSUE_KINDS(X) \
  X(kMismatch, "collective-mismatch")      \
  X(kOrder, "collective-order")            \
  X(kMissing, "collective-missing")        \
  X(kUnevenInputs, "uneven-inputs")        \
  X(kPeerExited, "peer-exited")

// X(enumerator, name): what the issue is about. The first ones are a compared field of the call
// (its value is each rank's CollectiveIssueRank::value), the others the shape of the issue.
#define TRAINDOC_COLLECTIVE_FIELDS(X)                                                         \
  X(kOp, "op")                                                                                \
  X(kShape, "shape")                                                                          \
  X(kDtype, "dtype")                                                                          \
  X(kDevice, "device")                                                                        \
  X(kCount, "count")                                                                          \
  X(kRedop, "reduce op")                                                                      \
  X(kRoot, "root")                                                                            \
  X(kListLength, "list length")                                                               \
  X(kSite, "site")         /* the same symmetric call from different places */                \
  X(kDeadlock, "deadlock") /* point-to-point calls that wait for each other */                \
  X(kMissing, "missing")   /* ranks never made the call the others made */                    \
  X(kLate, "late")         /* the ranks a stall named made the call after all: a straggler */ \
  X(kCalls, "calls")       /* uneven inputs: one rank exited normally, another then failed */

// X(enumerator, name): why the others' wait in a call was over (a `missing` issue).
#define TRAINDOC_WAIT_ENDS(X)                                                   \
  X(kNone, "none")                                                              \
  X(kRankEnded, "rank-ended")  /* a missing rank ended (its end: its part's) */ \
  X(kEndedInIt, "ended-in-it") /* a waiting rank ended in the call */           \
  X(kGaveUp, "gave-up")        /* a waiting rank's call raised or returned */   \
  X(kStalled, "stalled")       /* nothing moved for --stall-seconds */

// X(enumerator, name): a rank's part in an issue; operands in CollectiveIssueRank.
#define TRAINDOC_RANK_STATES(X)                                                               \
  X(kNone, "none")                /* nothing known of it */                                   \
  X(kCalled, "called")            /* made the compared call (its op: op) */                   \
  X(kMade, "made")                /* made the call from a place (odd: from another place) */  \
  X(kWaitsIn, "waits-in")         /* waits in a point-to-point call (op) for the rank peer */ \
  X(kElsewhere, "elsewhere")      /* on another machine, watched by the traindoc there */     \
  X(kNeverCalled, "never-called") /* never made the call the others made (end: it ended) */   \
  X(kNeverCallsFromThere, "never-calls-from-there") /* the others' call is not its code */    \
  X(kWaiting, "waiting")                            /* made the call and waits in it */       \
  X(kRaised, "raised")                              /* made the call, which raised */         \
  X(kIssued, "issued")      /* made a call that returns at once and completes later */        \
  X(kReturned, "returned")  /* made the call, which returned */                               \
  X(kCameLate, "came-late") /* made the call late_ns after the first rank */                  \
  X(kWaited, "waited")      /* waited in the call for the late ranks */                       \
  X(kEnded, "ended")        /* ended (end), for uneven inputs */

namespace traindoc::store {

enum class IssueKind : uint8_t {
#define TRAINDOC_FACT_ENUMERATOR(enumerator, name) enumerator,
  TRAINDOC_COLLECTIVE_ISSUE_KINDS(TRAINDOC_FACT_ENUMERATOR)
};
enum class IssueField : uint8_t { TRAINDOC_COLLECTIVE_FIELDS(TRAINDOC_FACT_ENUMERATOR) };
enum class WaitEnd : uint8_t { TRAINDOC_WAIT_ENDS(TRAINDOC_FACT_ENUMERATOR) };
enum class RankState : uint8_t {
  TRAINDOC_RANK_STATES(TRAINDOC_FACT_ENUMERATOR)
#undef TRAINDOC_FACT_ENUMERATOR
};

// Each name, and the value of a name (none for a name of no value: a run.db of another version).
std::string_view to_string(IssueKind kind);
std::optional<IssueKind> issue_kind_named(std::string_view name);
std::span<const IssueKind> all_issue_kinds();
std::string_view to_string(IssueField field);
std::optional<IssueField> issue_field_named(std::string_view name);
std::span<const IssueField> all_issue_fields();
std::string_view to_string(WaitEnd end);
std::optional<WaitEnd> wait_end_named(std::string_view name);
std::span<const WaitEnd> all_wait_ends();
std::string_view to_string(RankState state);
std::optional<RankState> rank_state_named(std::string_view name);
std::span<const RankState> all_rank_states();

}  // namespace traindoc::store
