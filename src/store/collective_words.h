// A collective issue in words, made from its facts alone: the line the supervisor prints the
// moment it finds the issue, and the title and evidence lines of the report's finding, which
// are the same words. Plain functions, no state; supervisor (main loop) and analysis alike.
#pragma once

#include <string>
#include <string_view>

#include "store/evidence.h"

namespace traindoc::store {

// The op name of DistributedDataParallel's own broadcast (dist._broadcast_coalesced): of the
// model's buffers in a forward that follows a training one, and of its state when it is built.
inline constexpr std::string_view kDdpBroadcastOp = "broadcast_coalesced";
// The op name of DistributedDataParallel's all-reduce of the gradients in backward.
inline constexpr std::string_view kDdpGradientOp = "ddp_gradient_all_reduce";

// "killed by SIGSEGV", "exited 1", "gone" (no status known).
std::string end_words(const RankEnd& end);
// end_words, and where a failure came after the rank's program had finished, that it came in its
// teardown: "killed by SIGABRT after its program finished".
std::string ended_words(const RankEnd& end);

// A rank's part: "never called it", "killed by SIGABRT without calling it", "the odd one:
// waiting in it", "waits in recv from rank 1", "made it 9.0 s after the first rank", ...
std::string rank_state_text(const CollectiveIssue& issue, const CollectiveIssueRank& rank);

// What happened, without the kind: "rank 1 never made all_reduce #2 at train.py:30 in the default
// group (2 ranks), which the others wait in since 31.0 s (...)". The report's title.
std::string issue_title(const CollectiveIssue& issue);
// The kind, then the title: "collective-missing: rank 1 never made ...". The terminal's line.
std::string issue_line(const CollectiveIssue& issue);

}  // namespace traindoc::store
