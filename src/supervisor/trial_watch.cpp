// The trial watch of `traindoc fit` (trial_watch.h). Supervisor process, main loop thread.
#include "supervisor/trial_watch.h"

#include <algorithm>

namespace traindoc::supervisor {

void TrialWatch::process_started(int world_size) {
  m_world = std::max(m_world, world_size);
}

void TrialWatch::steps_counted(int pid, uint64_t start_ticks, store::StepKind kind, int64_t count) {
  if (kind != store::StepKind::kOptimizer) return;
  int64_t& newest = m_counts[{pid, start_ticks}];
  newest = std::max(newest, count);
}

bool TrialWatch::due() {
  if (m_steps <= 0 || m_told || static_cast<int>(m_counts.size()) < m_world) return false;
  m_told = std::all_of(m_counts.begin(), m_counts.end(),
                       [this](const auto& entry) { return entry.second >= m_steps; });
  return m_told;
}

}  // namespace traindoc::supervisor
