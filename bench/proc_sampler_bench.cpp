// Costs of the supervisor's /proc sampling: one fast and one slow ProcSampler::sample of this
// process (the slow one at several resident sizes and mapping counts), single file reads and
// their parsing, the children walk (by thread count), the host sample, and a whole round over
// 8 child processes.
// Benchmark process (Google Benchmark); not part of the test run.
#include "supervisor/proc/proc_sampler.h"

#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "supervisor/proc/host_sampler.h"
#include "supervisor/proc/proc_files.h"
#include "supervisor/proc/proc_text.h"

namespace traindoc::supervisor {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr int kJobProcesses = 8;
constexpr size_t kJobMiB = 64;

// Memory this process holds while a benchmark runs: `mib` of anonymous memory, every page
// written (resident), and `maps` extra one-page mappings with alternating protections so that
// the kernel cannot merge them (a PyTorch process maps hundreds of libraries).
class Ballast {
 public:
  void hold(size_t mib, int maps) {
    release();
    if (mib > 0) {
      m_size = mib * kMiB;
      m_block = mmap(nullptr, m_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m_block == MAP_FAILED) {
        m_block = nullptr;
        m_size = 0;
      } else {
        std::memset(m_block, 1, m_size);
      }
    }
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < maps; ++i) {
      int prot = i % 2 == 0 ? PROT_READ : PROT_READ | PROT_WRITE;
      void* map =
          mmap(nullptr, static_cast<size_t>(page), prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (map != MAP_FAILED) m_maps.push_back(map);
    }
  }

  void release() {
    if (m_block != nullptr) munmap(m_block, m_size);
    m_block = nullptr;
    m_size = 0;
    long page = sysconf(_SC_PAGESIZE);
    for (void* map : m_maps) munmap(map, static_cast<size_t>(page));
    m_maps.clear();
  }

 private:
  void* m_block = nullptr;
  size_t m_size = 0;
  std::vector<void*> m_maps;
};

Ballast g_ballast;

// kJobProcesses children of this process, each holding kJobMiB resident and sleeping: the
// shape of the 8-process job that bench/supervisor_overhead.py runs under traindoc.
class Job {
 public:
  // Started by the first benchmark that needs it.
  static Job& get() {
    if (g_job == nullptr) g_job = new Job;
    return *g_job;
  }

  static void stop() {
    if (g_job == nullptr) return;
    for (pid_t pid : g_job->m_pids) kill(pid, SIGKILL);
    for (pid_t pid : g_job->m_pids) waitpid(pid, nullptr, 0);
    delete g_job;
    g_job = nullptr;
  }

 private:
  static inline Job* g_job = nullptr;

  Job() {
    for (int i = 0; i < kJobProcesses; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        g_ballast.hold(kJobMiB, 0);
        while (true) pause();
      }
      if (pid > 0) m_pids.push_back(pid);
    }
    // Let every child touch its memory before anything is timed.
    usleep(500'000);
  }

  std::vector<pid_t> m_pids;
};

// The supervisor's walk (supervisor.cpp, walk_and_sample) without the store: children of this
// process, then of each process found, sampling each.
size_t walk(ProcSampler& sampler, bool slow) {
  std::set<int> seen;
  std::vector<int> queue = sampler.children_of(getpid());
  std::vector<store::ProcSample> samples;
  while (!queue.empty()) {
    int pid = queue.back();
    queue.pop_back();
    if (!seen.insert(pid).second) continue;
    std::optional<ProcSnapshot> snapshot = sampler.sample(pid, slow);
    if (!snapshot) continue;
    for (int child : sampler.children_of(pid)) queue.push_back(child);
    samples.push_back(snapshot->sample);
  }
  return samples.size();
}

void BM_SampleFast(benchmark::State& state) {
  ProcSampler sampler;
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(getpid(), false));
}
BENCHMARK(BM_SampleFast);

// smaps_rollup walks every page table entry of the process: its cost grows with the resident
// size and the number of mappings.
void BM_SampleSlow(benchmark::State& state) {
  g_ballast.hold(static_cast<size_t>(state.range(0)), static_cast<int>(state.range(1)));
  ProcSampler sampler;
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(getpid(), true));
  g_ballast.release();
}
BENCHMARK(BM_SampleSlow)
    ->ArgNames({"MiB", "maps"})
    ->Args({0, 0})
    ->Args({256, 0})
    ->Args({1024, 0})
    ->Args({4096, 0})
    ->Args({0, 1000})
    ->Args({0, 4000})
    ->Unit(benchmark::kMicrosecond);

void BM_ReadPidFile(benchmark::State& state, const char* name) {
  ProcFileReader reader;
  for (auto _ : state) benchmark::DoNotOptimize(reader.read_pid_file(getpid(), name));
}
BENCHMARK_CAPTURE(BM_ReadPidFile, stat, "stat");
BENCHMARK_CAPTURE(BM_ReadPidFile, status, "status");
BENCHMARK_CAPTURE(BM_ReadPidFile, smaps_rollup, "smaps_rollup");
BENCHMARK_CAPTURE(BM_ReadPidFile, limits, "limits");
BENCHMARK_CAPTURE(BM_ReadPidFile, cmdline, "cmdline");
BENCHMARK_CAPTURE(BM_ReadPidFile, environ, "environ");

void BM_CountOpenFds(benchmark::State& state) {
  ProcFileReader reader;
  std::string path = "/proc/" + std::to_string(getpid()) + "/fd";
  for (auto _ : state) benchmark::DoNotOptimize(reader.count_dir_entries(path.c_str()));
}
BENCHMARK(BM_CountOpenFds);

std::string own_file(const char* name) {
  ProcFileReader reader;
  return std::string(reader.read_pid_file(getpid(), name).value_or(""));
}

void BM_ParseStat(benchmark::State& state) {
  std::string text = own_file("stat");
  for (auto _ : state) benchmark::DoNotOptimize(parse_proc_stat(text));
}
BENCHMARK(BM_ParseStat);

void BM_ParseStatus(benchmark::State& state) {
  std::string text = own_file("status");
  for (auto _ : state) benchmark::DoNotOptimize(parse_proc_status(text));
}
BENCHMARK(BM_ParseStatus);

void BM_ParseSmapsRollup(benchmark::State& state) {
  std::string text = own_file("smaps_rollup");
  for (auto _ : state) benchmark::DoNotOptimize(parse_smaps_rollup(text));
}
BENCHMARK(BM_ParseSmapsRollup);

void BM_ChildrenOf(benchmark::State& state) {
  Job::get();
  ProcSampler sampler;
  std::vector<int> out;
  for (auto _ : state) {
    sampler.children_of(getpid(), out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["children"] = static_cast<double>(out.size());
}
BENCHMARK(BM_ChildrenOf);

// children_of reads one task/<tid>/children file per thread: a PyTorch rank runs an intra-op
// pool of one thread per core, plus its DataLoader and NCCL threads.
void BM_ChildrenOfThreads(benchmark::State& state) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int64_t i = 1; i < state.range(0); ++i) {
    threads.emplace_back([&stop] {
      while (!stop.load()) usleep(10'000);
    });
  }
  ProcSampler sampler;
  std::vector<int> out;
  for (auto _ : state) {
    sampler.children_of(getpid(), out);
    benchmark::DoNotOptimize(out.data());
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
}
BENCHMARK(BM_ChildrenOfThreads)->ArgName("threads")->Arg(1)->Arg(16)->Arg(64)->Arg(256);

// The fallback where the kernel has no task/<tid>/children files: one stat per process of the
// machine.
void BM_ScanParents(benchmark::State& state) {
  ProcSampler sampler;
  std::vector<PidParent> out;
  for (auto _ : state) {
    sampler.scan_parents(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["processes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_ScanParents)->Unit(benchmark::kMicrosecond);

void BM_HostSample(benchmark::State& state) {
  HostSampler host;
  for (auto _ : state) benchmark::DoNotOptimize(host.sample());
}
BENCHMARK(BM_HostSample);

// One round of the supervisor over the 8-process job: the walk and every sample, fast (every
// interval) or slow (every fifth).
void BM_WalkJob(benchmark::State& state) {
  Job::get();
  ProcSampler sampler;
  bool slow = state.range(0) != 0;
  size_t sampled = 0;
  for (auto _ : state) sampled = walk(sampler, slow);
  state.counters["processes"] = static_cast<double>(sampled);
}
BENCHMARK(BM_WalkJob)->ArgName("slow")->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace traindoc::supervisor

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  traindoc::supervisor::Job::stop();
  return 0;
}
