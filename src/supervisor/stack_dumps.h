// Asks job processes for their stacks and reads what their agents wrote: every thread's Python
// stack and the native stack of the main thread (layout.h, stack_dump_signal). Supervisor
// process, main loop thread, while the stall watch holds an issue open.
#pragma once

#include <optional>
#include <string>

#include "supervisor/symbolizer.h"

namespace traindoc::supervisor {

// Queues the request to the process's main thread; false when it is gone or does not catch the
// signal (the default action would end it).
bool request_stack_dump(int pid);

// The dump of `pid` once complete: the Python stacks as CPython wrote them, then the native
// frames symbolized with the process's map (read now, while it lives). nullopt while the agent
// is still writing (or never will: a process without the agent, or that handles the signal).
std::optional<std::string> read_stack_dump(const std::string& run_dir, int pid,
                                           Symbolizer& symbolizer);

}  // namespace traindoc::supervisor
