// Cost of the log tap's line filter per line: the one pass over the line (worth_keeping) against
// one search of the line per anchor (what the log tap did before), side by side on the same lines;
// and the line splitter's rate on 1 MiB reads of a training log and of short raw lines, past the
// first lines. Benchmark process (Google Benchmark); not part of the test run.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "supervisor/line_splitter.h"
#include "supervisor/log_anchors.h"

namespace traindoc::supervisor {
namespace {

// What a training job prints, most of it progress: 67-byte loss lines (those of
// bench/log_throughput.py), a tqdm bar, a warning, a traceback line.
std::vector<std::string> lines() {
  std::vector<std::string> out;
  for (int i = 0; i < 97; ++i) {
    out.push_back("epoch 3 step " + std::to_string(10000 + i) +
                  " loss 0.4312 acc 0.8791 lr 3.0e-04 grad_norm 1.27 it/s 12.1");
  }
  out.push_back("Epoch 3:  45%|#####     | 4500/10000 [06:12<07:35, 12.08it/s, loss=0.431]");
  out.push_back("UserWarning: The given NumPy array is not writable, and PyTorch does not support");
  out.push_back("  File \"/home/user/proj/train.py\", line 88, in <module>");
  return out;
}

template <bool (*Filter)(std::string_view)>
void BM_Filter(benchmark::State& state) {
  std::vector<std::string> corpus = lines();
  size_t bytes = 0;
  for (const std::string& line : corpus) bytes += line.size();
  for (auto _ : state) {
    int kept = 0;
    for (const std::string& line : corpus) kept += Filter(line);
    benchmark::DoNotOptimize(kept);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(corpus.size()));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}
BENCHMARK(BM_Filter<worth_keeping_by_search>)->Name("BM_SearchPerAnchor");
BENCHMARK(BM_Filter<worth_keeping>)->Name("BM_OnePass");

// 1 MiB reads of the lines above, or of bench/log_throughput.py's raw 16-byte lines.
void BM_SplitReads(benchmark::State& state) {
  std::string read;
  if (state.range(0) == 0) {
    std::vector<std::string> corpus = lines();
    while (read.size() < (size_t{1} << 20)) {
      for (const std::string& line : corpus) read += line + "\n";
    }
  } else {
    for (int i = 0; i < (1 << 16); ++i) read += "0123456789abcde\n";
  }
  LineSplitter splitter;
  std::vector<store::LogLine> cited;
  for (auto _ : state) {
    benchmark::DoNotOptimize(splitter.scan(read, "stdout", 0, cited));
    cited.clear();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(read.size()));
  state.SetLabel(state.range(0) == 0 ? "training log" : "raw 16-byte lines");
}
BENCHMARK(BM_SplitReads)->Arg(0)->Arg(1);

}  // namespace
}  // namespace traindoc::supervisor

BENCHMARK_MAIN();
