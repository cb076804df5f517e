// When the walk of the job's processes comes sooner than its interval (growth_pacer.h).
// Supervisor process, main loop thread.
#include "supervisor/proc/growth_pacer.h"

#include <algorithm>

namespace traindoc::supervisor {

GrowthPacer::GrowthPacer(int64_t interval_ns, int64_t tick_ns, double budget)
    : m_interval_ns(interval_ns),
      m_fast_ns(std::max(tick_ns, interval_ns / kSpeedUp)),
      m_budget(budget) {}

void GrowthPacer::walked(int64_t t_ns, const std::vector<store::ProcSample>& samples,
                         int64_t cost_ns) {
  m_cost_ns = cost_ns;
  std::map<std::pair<int, uint64_t>, std::pair<int64_t, uint64_t>> now;
  for (const store::ProcSample& s : samples) {
    // A zombie's sample reads no memory.
    if (s.rss == 0) continue;
    std::pair<int, uint64_t> key{s.pid, s.start_ticks};
    now[key] = {s.t_ns, s.rss};
    auto before = m_last.find(key);
    if (before == m_last.end() || s.t_ns <= before->second.first ||
        s.rss <= before->second.second) {
      continue;
    }
    double seconds = static_cast<double>(s.t_ns - before->second.first) / 1e9;
    if (static_cast<double>(s.rss - before->second.second) / seconds >= kFastBytesPerSecond) {
      m_fast_until_ns = t_ns + kHoldNs;
    }
  }
  m_last = std::move(now);
}

int64_t GrowthPacer::period_ns(int64_t t_ns) const {
  if (t_ns >= m_fast_until_ns || m_fast_ns >= m_interval_ns) return m_interval_ns;
  // A walk of many processes that costs more than the budget allows at the fast period stays
  // at the interval: traindoc must not become what slows the job.
  double share = static_cast<double>(m_cost_ns) / static_cast<double>(m_fast_ns);
  return share > m_budget ? m_interval_ns : m_fast_ns;
}

}  // namespace traindoc::supervisor
