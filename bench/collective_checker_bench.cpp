// What the supervisor's collective checker costs: per call it is handed (enter and exit, then
// the check that compares the round), and per check (every 100 ms) while ranks wait. For 8 ranks of
// one machine, and for the 8 ranks on one machine of a job of 32 machines (256 ranks), whose world
// group's calls from elsewhere never arrive: each machine's traindoc checks its own ranks. Each
// rank has 4 DataLoader workers; Google Benchmark.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "supervisor/collective_checker.h"

namespace {

using traindoc::common::CollectiveCall;
using traindoc::common::CollectiveEvent;
using traindoc::common::CollectiveOp;
using traindoc::supervisor::AgentCollective;
using traindoc::supervisor::CollectiveChecker;

constexpr int kRanksHere = 8;
constexpr int kWorkersPerRank = 4;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;

AgentCollective world_call(int rank, int world) {
  AgentCollective out;
  out.pid = 1000 + rank;
  out.start_ticks = 7;
  CollectiveCall& c = out.call;
  c.group = 0xb8a1a236aa22f00bULL;
  c.group_rank = rank;
  c.group_size = world;
  c.peer = -1;
  c.op = static_cast<uint16_t>(CollectiveOp::kAllReduce);
  c.source = static_cast<uint8_t>(traindoc::common::CollectiveSource::kPython);
  c.flags = traindoc::common::kCollectiveDefaultGroup;
  c.dtype = 7;
  c.tensor_count = 1;
  c.ndims[0] = 1;
  c.tensor_dtypes[0] = 7;
  c.dims[0][0] = 25'000'000;
  strncpy(c.site, "torch/nn/parallel/distributed.py", sizeof(c.site) - 1);
  c.line = 1100;
  return out;
}

// The checker of the machine that holds the last kRanksHere ranks of a job of `world`, and one
// call of each of those ranks.
struct Machine {
  CollectiveChecker checker{traindoc::supervisor::CheckerOptions{}};
  std::vector<AgentCollective> calls;

  explicit Machine(int world) {
    int first_here = world - kRanksHere;
    if (first_here > 0) checker.job_spans_machines();
    for (int r = first_here; r < world; ++r) {
      checker.process_started(1000 + r, 7, r, world);
      for (int w = 0; w < kWorkersPerRank; ++w) {
        checker.process_started(5000 + r * kWorkersPerRank + w, 9, r, world, true);
      }
      calls.push_back(world_call(r, world));
    }
  }
};

// One round: each rank here enters and leaves its next all-reduce, then the check that compares
// them (the supervisor checks every 100 ms; a round per check is the most it is asked for).
// range(0): the job's world size. Items: the calls.
void BM_CheckerRound(benchmark::State& state) {
  Machine machine(static_cast<int>(state.range(0)));
  CollectiveChecker& checker = machine.checker;
  std::vector<AgentCollective>& calls = machine.calls;
  uint64_t number = 0;
  int64_t now = kT0;
  for (auto _ : state) {
    ++number;
    for (AgentCollective& c : calls) {
      c.call.number = number;
      c.call.event = static_cast<uint8_t>(CollectiveEvent::kEnter);
      c.call.time_ns = ++now;
      checker.add(c);
    }
    for (AgentCollective& c : calls) {
      c.call.event = static_cast<uint8_t>(CollectiveEvent::kExit);
      c.call.time_ns = ++now;
      checker.add(c);
    }
    benchmark::DoNotOptimize(checker.check(now));
    if (number % 1024 == 0) benchmark::DoNotOptimize(checker.take_calls(false));
  }
  state.SetItemsProcessed(state.iterations() * kRanksHere);
}
BENCHMARK(BM_CheckerRound)->Arg(kRanksHere)->Arg(256);

// One check while half the ranks here wait in an all-reduce that the others have not made
// yet, as most checks of a training job find it.
void BM_CheckerTick(benchmark::State& state) {
  Machine machine(static_cast<int>(state.range(0)));
  int64_t now = kT0;
  for (size_t r = 0; r < machine.calls.size() / 2; ++r) {
    AgentCollective& c = machine.calls[r];
    c.call.number = 1;
    c.call.event = static_cast<uint8_t>(CollectiveEvent::kEnter);
    c.call.time_ns = now;
    machine.checker.add(c);
  }
  for (auto _ : state) benchmark::DoNotOptimize(machine.checker.check(++now));
}
BENCHMARK(BM_CheckerTick)->Arg(kRanksHere)->Arg(256);

}  // namespace

BENCHMARK_MAIN();
