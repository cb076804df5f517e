// Gathers the facts the preflight checks read (store/preflight.h): /dev/shm, host memory and
// swap, traindoc's memory cgroup, resource limits, the GPUs, the command line, the Python and
// torch it will run, and the network. Supervisor process, main thread: `traindoc check`, and the
// start of `traindoc run` before its job starts. Starts no process, imports nothing, and waits
// on nothing for long (the resolver, kResolveTimeoutMs); what cannot be read stays empty.
#pragma once

#include <string>
#include <vector>

#include "store/preflight.h"
#include "supervisor/gpu/gpu_sampler.h"

namespace traindoc::supervisor {

// `gpu`: a sampler already loaded (the run's); its process lists are read once more here.
store::PreflightFacts probe_preflight(const std::vector<std::string>& command, GpuSampler& gpu);

}  // namespace traindoc::supervisor
