// Collective issues of a run.db of schema 9 or before, which held their facts only in words:
// those words read back into the facts (collective_facts.h). The store reader's fallback, for a
// row whose schema 10 columns are NULL; analyze and report, never the supervisor.
#pragma once

#include <string>

#include "store/evidence.h"

namespace traindoc::store {

// The issue's sentence, "collective-missing: rank 1 never made ...", kept as its words (the rest
// of the sentence's facts were never stored), and what its op tells.
void issue_facts_from_words(const std::string& message, CollectiveIssue& issue);

// A rank's state in the words those schemas wrote ("never called it", "the odd one: waiting in
// it", "killed by SIGABRT without calling it", "made it 9.0 s after the first rank", ...), and
// its value, which held a late rank's lateness ("9.0 s").
void rank_facts_from_words(const std::string& state, CollectiveIssueRank& rank);

}  // namespace traindoc::store
