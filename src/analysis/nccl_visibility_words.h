// The words for a process whose NCCL calls traindoc could not see (a collectives-not-visible
// event), for the report's missing evidence. Pure.
#pragma once

#include <string>

#include "store/evidence.h"

namespace traindoc::analysis {

// "collectives not visible in pid 4242 (rank 1): ...", the process named by its rank where known.
std::string nccl_not_visible_words(const store::Event& event, const store::Evidence& evidence);

}  // namespace traindoc::analysis
