// The order in which the terminal and report.html tell the findings: each root cause with the
// findings it caused (as report.json's `consequences` link them), then those it did not cause.
// Any process; pure.
#pragma once

#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::report {

struct FindingOrder {
  struct Root {
    size_t index;                      // into Diagnosis::findings
    std::vector<size_t> consequences;  // likewise
  };
  std::vector<Root> roots;
  std::vector<size_t> others;  // not caused by a root cause, in the diagnosis's order
};

FindingOrder order_for_reading(const analysis::Diagnosis& diagnosis);

}  // namespace traindoc::report
