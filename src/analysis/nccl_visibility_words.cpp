#include "analysis/nccl_visibility_words.h"

#include "common/layout.h"

namespace traindoc::analysis {

std::string nccl_not_visible_words(const store::Event& event, const store::Evidence& evidence) {
  std::string out = "collectives not visible in pid " + std::to_string(event.pid);
  for (const store::ProcessRecord& p : evidence.processes) {
    // Of the processes that held the pid, the one alive at the event.
    if (p.pid == event.pid && p.rank && p.start_ns <= event.t_ns &&
        (p.end_ns == 0 || event.t_ns <= p.end_ns)) {
      out += " (rank " + std::to_string(*p.rank) + ")";
      break;
    }
  }
  if (event.a == static_cast<int64_t>(common::NcclNotVisible::kNoAudit)) {
    return out +
           ": it loaded NCCL and traindoc saw none of its communicators; NCCL resolved by dlsym "
           "(JAX, TensorFlow, ctypes) is seen only through traindoc's audit library (LD_AUDIT), "
           "which was not active in it (not turned on with TRAINDOC_NCCL_AUDIT=1, LD_AUDIT "
           "removed, or a loader that ignores it): its collectives, if any, were not recorded";
  }
  return out + ": its NCCL calls were not recorded";
}

}  // namespace traindoc::analysis
