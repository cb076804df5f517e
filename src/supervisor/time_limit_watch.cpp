// The time-limit watch: when each `timeout` of the job runs out, and the moment before it when
// its programs' stacks are asked for. Supervisor process, main loop thread.
#include "supervisor/time_limit_watch.h"

#include <algorithm>
#include <optional>

#include "store/time_limit.h"

namespace traindoc::supervisor {
namespace {

// How long before a `timeout` sends its signal the stacks are asked for: the dumps must be read
// while the processes still run. Half the limit where that is shorter.
constexpr int64_t kStacksLeadNs = 1'000'000'000;

}  // namespace

void TimeLimitWatch::process_seen(int pid, int64_t start_ns, const std::string& cmdline) {
  std::optional<store::TimeLimit> limit = store::time_limit_of(cmdline);
  if (!limit) return;
  int64_t limit_at = std::max(start_ns, m_run_start_ns) + limit->limit_ns;
  m_watches.push_back({pid, limit_at - std::min(kStacksLeadNs, limit->limit_ns / 2), limit_at});
}

std::vector<int> TimeLimitWatch::due(int64_t t_ns, const std::function<bool(int pid)>& is_live) {
  std::vector<int> out;
  std::erase_if(m_watches, [&](const Watch& watch) {
    if (!is_live(watch.pid) || t_ns >= watch.limit_at_ns) return true;
    if (t_ns < watch.stacks_at_ns) return false;
    out.push_back(watch.pid);
    return true;
  });
  return out;
}

}  // namespace traindoc::supervisor
