// The trial watch of `traindoc fit` (trial_watch.h). Supervisor process, main loop thread.
#include "supervisor/trial_watch.h"

#include <algorithm>

namespace traindoc::supervisor {
namespace {

// Growth above the level by more than this restarts the flat spell: less is a sample's wobble
// (a buffer freed and taken again), and no more than the headroom a fit keeps.
constexpr uint64_t kFlatToleranceBytes = 8ULL << 20;
constexpr double kFlatToleranceShare = 0.01;
// A walk in which the busiest process used less of a core than this restarts it too: a job that
// waits (a rendezvous, a download) has not shown its working memory yet. Not more: on a machine
// busy with other work (three busy loops beside it on 2 cores) a working process got half a
// core, and its trial was never ended.
constexpr double kBusyShare = 0.2;

}  // namespace

void TrialWatch::process_started(int world_size) {
  m_world = std::max(m_world, world_size);
}

void TrialWatch::steps_counted(int pid, uint64_t start_ticks, store::StepKind kind, int64_t count) {
  m_counting = true;
  if (kind != store::StepKind::kOptimizer || count <= 0) return;
  int64_t& newest = m_counts[{pid, start_ticks}];
  newest = std::max(newest, count);
}

void TrialWatch::walked(int64_t t_ns, uint64_t job_bytes, double busiest_cpu_s) {
  double walk_s = m_walked_ns == 0 ? 0 : static_cast<double>(t_ns - m_walked_ns) / 1e9;
  m_walked_ns = t_ns;
  uint64_t tolerance =
      m_level ? std::max(kFlatToleranceBytes,
                         static_cast<uint64_t>(static_cast<double>(*m_level) * kFlatToleranceShare))
              : 0;
  if (!m_level || job_bytes > *m_level + tolerance || walk_s <= 0 ||
      busiest_cpu_s < kBusyShare * walk_s) {
    m_level = std::max(m_level.value_or(0), job_bytes);
    m_flat_since_ns = t_ns;
  }
}

TrialWatch::Due TrialWatch::due() {
  if (m_steps <= 0 || m_told) return Due::kNo;
  if (!m_counting) {
    m_told = m_flat_ns > 0 && m_walked_ns - m_flat_since_ns >= m_flat_ns;
    return m_told ? Due::kFlatMemory : Due::kNo;
  }
  if (static_cast<int>(m_counts.size()) < m_world) return Due::kNo;
  m_told = std::all_of(m_counts.begin(), m_counts.end(),
                       [this](const auto& entry) { return entry.second >= m_steps; });
  return m_told ? Due::kSteps : Due::kNo;
}

}  // namespace traindoc::supervisor
