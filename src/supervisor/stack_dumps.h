// Asks job processes for their stacks and reads what their agents wrote: every thread's Python
// stack and the native stack of the main thread when it took the request (layout.h,
// stack_dump_signal). Supervisor process, main loop thread, while the stall watch holds an issue
// open.
#pragma once

#include <optional>
#include <string>

#include "supervisor/symbolizer.h"

namespace traindoc::supervisor {

struct DumpRequest {
  bool asked = false;
  // Not asked because each thread waits in a call that the signal would cut short: the main
  // thread's call ("clock_nanosleep").
  std::string spared;
};

// Queues the request to a thread of `pid`: the main thread when `stopping` (the stop signal that
// follows cuts its waits short anyway), else one whose wait the handler does not cut short
// (thread_to_interrupt). Not asked when it is gone or does not catch the signal (the default
// action would end it).
DumpRequest request_stack_dump(int pid, bool stopping);

// What stands for the stack of a process not asked for it to spare its wait in `call`; `in_init`:
// the process waits in init_process_group.
std::string spared_stack(const std::string& call, bool in_init);

// The dump of `pid` once complete: the Python stacks as CPython wrote them, the main thread's
// marked "Current thread" whichever thread took the request, then the main thread's native
// frames symbolized with the process's map (read now, while it lives), when it took it. nullopt
// while the agent is still writing (or never will: a process without the agent, or that handles the
// signal).
std::optional<std::string> read_stack_dump(const std::string& run_dir, int pid,
                                           Symbolizer& symbolizer);

}  // namespace traindoc::supervisor
