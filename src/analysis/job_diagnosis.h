// One diagnosis for a job of several nodes, each watched by a traindoc of its own that wrote a
// node folder (docs/multi-node.md): the nodes' clocks aligned on the collective calls their
// ranks share, each node diagnosed as a run of its own, and the findings of all nodes put in one
// causal order under one root cause. Pure: no I/O.
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "store/evidence.h"

namespace traindoc::analysis {

struct NodeEvidence {
  std::string name;  // the node folder's name; the evidence's run.node says it too
  const store::Evidence* evidence = nullptr;
};

// Each node's clock against the first node's (the first's is {0, 0, 0}). A node that shares no
// returned blocking call with an aligned node stays unaligned, at offset 0.
std::vector<NodeClock> align_clocks(const std::vector<NodeEvidence>& nodes);

// The job's diagnosis: every node's processes, GPUs and findings, times on the first node's
// clock; the earliest failure of its own (not a rank telling of a peer that went) of any node
// is the root cause, and the failures after it on every node its consequences. What the node
// folders cannot tell (a node missing, one cut short, a clock not aligned) is missing evidence.
Diagnosis diagnose_job(const std::vector<NodeEvidence>& nodes);

}  // namespace traindoc::analysis
