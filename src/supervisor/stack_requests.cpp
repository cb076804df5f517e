// The stack requests of the supervisor's watches: asking, then storing each dump as it completes.
// Supervisor process, main loop thread.
#include "supervisor/stack_requests.h"

#include <unistd.h>

#include <algorithm>

#include "supervisor/proc/process_identity.h"

namespace traindoc::supervisor {

void StackRequests::ask(store::EventKind kind, const std::vector<int>& pids, int64_t now_ns) {
  Request request{kind, {}, now_ns + kWaitNs};
  // At a stop or a time limit, the signal that follows cuts the same waits short.
  bool stopping = kind == store::EventKind::kStackAtStop || kind == store::EventKind::kStackAtLimit;
  for (int pid : pids) {
    if (request.pids.size() == kMax) break;
    DumpRequest asked = m_source.ask(pid, stopping);
    if (asked.asked) request.pids.push_back(pid);
    if (!asked.spared.empty()) m_answered(kind, pid, m_source.spared(pid, asked.spared));
  }
  m_requests.push_back(std::move(request));
}

void StackRequests::collect(int64_t now_ns, bool final) {
  std::erase_if(m_requests, [&](Request& request) {
    std::erase_if(request.pids, [&](int pid) {
      std::optional<std::string> stack = m_source.read(pid);
      if (stack) m_answered(request.kind, pid, *stack);
      return stack.has_value();
    });
    return final || request.pids.empty() || now_ns > request.deadline_ns;
  });
}

bool StackRequests::pending(store::EventKind kind) const {
  return std::any_of(m_requests.begin(), m_requests.end(),
                     [&](const Request& r) { return r.kind == kind; });
}

DumpRequest request_fresh_dump(const std::string& run_dir, int pid, uint64_t start_ticks,
                               bool stopping) {
  if (!runs_below(pid, start_ticks, getpid())) return {};
  unlink((run_dir + "/agent/stack-" + std::to_string(pid) + ".txt").c_str());
  return request_stack_dump(pid, stopping);
}

}  // namespace traindoc::supervisor
