// The reading order of findings. Any process; pure.
#include "report/finding_order.h"

namespace traindoc::report {

FindingOrder order_for_reading(const analysis::Diagnosis& d) {
  FindingOrder order;
  std::vector<bool> told(d.findings.size(), false);
  for (size_t i = 0; i < d.findings.size(); ++i) {
    if (!d.findings[i].root_cause) continue;
    told[i] = true;
    FindingOrder::Root root{i, {}};
    for (size_t k : d.findings[i].consequences) {
      if (k >= d.findings.size()) continue;
      told[k] = true;
      root.consequences.push_back(k);
    }
    order.roots.push_back(std::move(root));
  }
  for (size_t i = 0; i < d.findings.size(); ++i) {
    if (!told[i]) order.others.push_back(i);
  }
  return order;
}

}  // namespace traindoc::report
