// Helpers the rules share to name processes. Pure.
#include "analysis/rules.h"

namespace traindoc::analysis {

const ProcessSummary* RuleContext::process(int pid, uint64_t start_ticks) const {
  const ProcessSummary* found = nullptr;
  for (const ProcessSummary& p : processes) {
    if (p.record.pid != pid) continue;
    if (start_ticks != 0 && p.record.start_ticks == start_ticks) return &p;
    found = &p;  // the latest holder of the pid
  }
  return found;
}

std::string RuleContext::name(const ProcessSummary& p) const {
  return describe(p.role) + " (pid " + std::to_string(p.record.pid) + ")";
}

std::vector<int> RuleContext::ranks_of(const ProcessSummary& p) const {
  if (p.role.rank) return {*p.role.rank};
  return {};
}

}  // namespace traindoc::analysis
