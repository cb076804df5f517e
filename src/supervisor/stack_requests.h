// The stacks asked for at a moment worth explaining (a stop request, an idle spell, a time limit
// about to run out, a rank missing from a collective): each process's dump is stored as an event
// of that moment's kind once complete, until a deadline. Supervisor process, main loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store/event_kind.h"
#include "supervisor/stack_dumps.h"

namespace traindoc::supervisor {

// The job's processes as the requests reach them.
class StackSource {
 public:
  virtual ~StackSource() = default;
  // Asks `pid` for its stacks; `stopping`: a stop signal follows, which cuts the same waits short.
  virtual DumpRequest ask(int pid, bool stopping) = 0;
  // Its dump once complete, else nullopt.
  virtual std::optional<std::string> read(int pid) = 0;
  // What stands for the stack of `pid`, not asked for it to spare its wait in `call`.
  virtual std::string spared(int pid, const std::string& call) const = 0;
};

class StackRequests {
 public:
  // `answered`: a process's stack (or what stands for it) for an event of `kind`.
  using Answered = std::function<void(store::EventKind kind, int pid, const std::string& text)>;
  StackRequests(StackSource& source, Answered answered)
      : m_source(source), m_answered(std::move(answered)) {}

  // Asks each of `pids` (the first kMax of them) for its stacks at `now_ns`.
  void ask(store::EventKind kind, const std::vector<int>& pids, int64_t now_ns);
  // Stores the dumps complete by now; `final`: the job is over, the rest never come.
  void collect(int64_t now_ns, bool final);
  // Whether stacks of a request of `kind` are still awaited.
  bool pending(store::EventKind kind) const;
  bool empty() const { return m_requests.empty(); }

  // The most processes one request asks, and how long their dumps are waited for.
  static constexpr size_t kMax = 64;
  static constexpr int64_t kWaitNs = 1'500'000'000;

 private:
  struct Request {
    store::EventKind kind;  // one of the stack-at kinds
    std::vector<int> pids;  // those still awaited
    int64_t deadline_ns = 0;
  };
  StackSource& m_source;
  Answered m_answered;
  std::vector<Request> m_requests;
};

// Asks `pid` (started at `start_ticks`) for its stacks once its last dump in `run_dir` is gone,
// so that an earlier dump does not pass for this one; only while it is the job's, below this
// process: the signal that asks is sent by pid.
DumpRequest request_fresh_dump(const std::string& run_dir, int pid, uint64_t start_ticks,
                               bool stopping);

}  // namespace traindoc::supervisor
