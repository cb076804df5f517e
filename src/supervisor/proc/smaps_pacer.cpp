// When each process gets its smaps_rollup read. Supervisor process, main loop thread.
#include "supervisor/proc/smaps_pacer.h"

#include <algorithm>

namespace traindoc::supervisor {
namespace {

constexpr double kPressureBoost = 4;

}  // namespace

SmapsPacer::SmapsPacer(int64_t base_period_ns, int64_t tolerance_ns, double budget)
    : m_base_period_ns(base_period_ns), m_tolerance_ns(tolerance_ns), m_budget(budget) {}

int64_t SmapsPacer::period_ns() const {
  double budget = m_pressure ? m_budget * kPressureBoost : m_budget;
  auto needed = static_cast<int64_t>(static_cast<double>(m_total_cost_ns) / budget);
  return std::max(m_base_period_ns, needed);
}

bool SmapsPacer::due(int pid, uint64_t start_ticks, int64_t now_ns) const {
  auto it = m_last.find({pid, start_ticks});
  return it == m_last.end() || now_ns - it->second.read_ns >= period_ns() - m_tolerance_ns;
}

void SmapsPacer::read(int pid, uint64_t start_ticks, int64_t now_ns, int64_t cost_ns) {
  // A process that held this pid before is gone.
  for (auto it = m_last.lower_bound({pid, 0}); it != m_last.end() && it->first.first == pid;) {
    if (it->first.second == start_ticks) {
      ++it;
      continue;
    }
    m_total_cost_ns -= it->second.cost_ns;
    it = m_last.erase(it);
  }
  Last& last = m_last[{pid, start_ticks}];
  m_total_cost_ns += cost_ns - last.cost_ns;
  last = {now_ns, cost_ns};
}

void SmapsPacer::retain(const std::set<int>& alive) {
  std::erase_if(m_last, [&](const auto& entry) {
    if (alive.contains(entry.first.first)) return false;
    m_total_cost_ns -= entry.second.cost_ns;
    return true;
  });
}

}  // namespace traindoc::supervisor
