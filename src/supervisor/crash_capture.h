// Completes an agent's crash record with what only the living process can give: its memory map
// and the bytes at the faulting pc. Supervisor process, main loop thread, while the crashed
// process waits in its signal handler.
#pragma once

#include <string>

#include "store/evidence.h"
#include "supervisor/agent_reader.h"

namespace traindoc::supervisor {

// Adds /proc/<pid>/maps, the code at the pc and the Python traceback the agent wrote, if the
// process runs below `ancestor` (the supervisor) with the record's start time: a slot may name
// any pid. Never throws: what cannot be read stays empty.
void complete_crash(AgentCrash& crash, const std::string& run_dir, int ancestor);

}  // namespace traindoc::supervisor
