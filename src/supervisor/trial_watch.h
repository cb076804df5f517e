// The trial watch of `traindoc fit`: a trial has run long enough once every process that trains
// has counted its optimizer steps (as many processes as the job's world size, where ranks tell
// it). Supervisor process, main loop thread. Given the agent's identities and step counts; ends
// nothing itself.
#pragma once

#include <cstdint>
#include <map>
#include <utility>

#include "store/evidence.h"

namespace traindoc::supervisor {

class TrialWatch {
 public:
  // `steps`: the optimizer steps each process that trains runs; 0: never due.
  explicit TrialWatch(int64_t steps) : m_steps(steps) {}

  void process_started(int world_size);
  void steps_counted(int pid, uint64_t start_ticks, store::StepKind kind, int64_t count);
  // Whether every process that trains has run its steps, once: a trial ends once.
  bool due();
  int64_t steps() const { return m_steps; }

 private:
  int64_t m_steps;
  int m_world = 1;
  bool m_told = false;
  std::map<std::pair<int, uint64_t>, int64_t> m_counts;  // optimizer steps by process
};

}  // namespace traindoc::supervisor
