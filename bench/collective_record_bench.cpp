// What recording one collective costs the job's thread (target: at most 100 ns): the ring append
// alone, the agent's whole entry point (number in its group, clock, append) as the Python hook
// reaches it, and an NCCL call through the agent's interposer against the same call made
// directly, in the real libtraindoc_agent.so loaded on a real slots file and the stand-in
// libnccl. Runs in one process standing in for a job process; Google Benchmark.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "common/collective_ring.h"
#include "supervisor/agent_reader.h"

namespace {

using traindoc::common::CollectiveCall;
using traindoc::common::CollectiveRing;

CollectiveCall typical_call() {
  CollectiveCall call{};
  call.group = 0xb8a1a236aa22f00bULL;
  call.group_size = 8;
  call.op = 1;
  call.event = 1;
  call.source = 1;
  call.dtype = 7;
  call.redop = 0;
  call.peer = -1;
  call.tensor_count = 1;
  call.ndims[0] = 2;
  call.dims[0][0] = 4096;
  call.dims[0][1] = 1024;
  traindoc::common::set_call_site(call, "/home/user/project/train.py", 27);
  call.line = 212;
  return call;
}

void BM_RingAppend(benchmark::State& state) {
  static auto* ring = new CollectiveRing{};
  CollectiveCall call = typical_call();
  for (auto _ : state) {
    traindoc::common::append_collective(*ring, call);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_RingAppend)->Threads(1)->Threads(2);

// The agent, loaded as LD_PRELOAD would load it, on the slots file a supervisor created.
using EnterFn = void (*)(const CollectiveCall*);
using ExitFn = void (*)(const CollectiveCall*);

struct LoadedAgent {
  std::string dir;
  std::unique_ptr<traindoc::supervisor::AgentReader> reader;
  void* handle = nullptr;
  EnterFn enter = nullptr;
  ExitFn leave = nullptr;

  LoadedAgent() {
    char pattern[] = "/tmp/traindoc-bench-XXXXXX";
    dir = mkdtemp(pattern);
    reader = std::make_unique<traindoc::supervisor::AgentReader>(dir);
    setenv("TRAINDOC_RUN_DIR", dir.c_str(), 1);
    handle = dlopen(TRAINDOC_AGENT_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) return;
    enter = reinterpret_cast<EnterFn>(dlsym(handle, "traindoc_collective_enter"));
    leave = reinterpret_cast<ExitFn>(dlsym(handle, "traindoc_collective_exit"));
  }
  ~LoadedAgent() { std::filesystem::remove_all(dir); }
};

LoadedAgent& agent() {
  static LoadedAgent loaded;
  return loaded;
}

// One collective as the hook records it: the enter record before the call, the exit after.
void BM_AgentEnterAndExit(benchmark::State& state) {
  LoadedAgent& loaded = agent();
  if (loaded.enter == nullptr) {
    state.SkipWithError("the agent did not load");
    return;
  }
  CollectiveCall call = typical_call();
  for (auto _ : state) {
    loaded.enter(&call);
    loaded.leave(&call);
  }
}
BENCHMARK(BM_AgentEnterAndExit);

// NCCL's C ABI for the calls below (the stand-in libnccl has it exactly).
struct NcclUniqueId {
  char internal[128];
};
using InitRankFn = int (*)(void**, int, NcclUniqueId, int);
using AllReduceFn = int (*)(const void*, void*, size_t, int, int, void*, void*);

// The stand-in libnccl after the agent, in the global scope (a program linked with NCCL), and a
// one-rank communicator made through the agent, which registers it.
struct LoadedNccl {
  AllReduceFn interposed = nullptr;
  AllReduceFn direct = nullptr;
  void* comm = nullptr;

  LoadedNccl() {
    LoadedAgent& loaded = agent();
    void* nccl = dlopen(TRAINDOC_FAKE_NCCL_PATH, RTLD_NOW | RTLD_GLOBAL);
    if (loaded.handle == nullptr || nccl == nullptr) return;
    auto init = reinterpret_cast<InitRankFn>(dlsym(loaded.handle, "ncclCommInitRank"));
    if (init == nullptr || init(&comm, 1, NcclUniqueId{}, 0) != 0) return;
    interposed = reinterpret_cast<AllReduceFn>(dlsym(loaded.handle, "ncclAllReduce"));
    direct = reinterpret_cast<AllReduceFn>(dlsym(nccl, "ncclAllReduce"));
  }
};

// One ncclAllReduce of 4096 x 1024 float32 (sum): `interposed` through the agent's entry point
// (record, then the real function looked up for its caller), else the stand-in alone.
void BM_NcclAllReduce(benchmark::State& state) {
  static LoadedNccl nccl;
  AllReduceFn all_reduce = state.range(0) != 0 ? nccl.interposed : nccl.direct;
  if (all_reduce == nullptr) {
    state.SkipWithError("the agent or the stand-in libnccl did not load");
    return;
  }
  float buffer[1];
  for (auto _ : state) {
    if (all_reduce(buffer, buffer, 4096 * 1024, 7, 0, nccl.comm, nullptr) != 0) {
      state.SkipWithError("ncclAllReduce failed");
      return;
    }
  }
}
BENCHMARK(BM_NcclAllReduce)->ArgName("interposed")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
