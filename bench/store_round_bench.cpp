// Cost of the supervisor's store work each interval: 8 process samples, a host sample and the two
// log streams written to run.db, then the commit (SQLite, WAL, synchronous=NORMAL).
// Benchmark process (Google Benchmark); not part of the test run.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "store/store_writer.h"

namespace traindoc::store {
namespace {

constexpr int kJobProcesses = 8;
constexpr int64_t kSecondNs = 1'000'000'000;

// A run.db in a fresh folder under $TMPDIR (or /tmp), removed when the benchmark ends.
class TempRun {
 public:
  TempRun() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/traindoc-bench-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data()) != nullptr) m_dir = buffer.data();
  }
  ~TempRun() {
    std::error_code error;
    if (!m_dir.empty()) std::filesystem::remove_all(m_dir, error);
  }
  std::string db() const { return m_dir + "/run.db"; }

 private:
  std::string m_dir;
};

std::vector<ProcSample> job_samples(int64_t t_ns, int round, bool slow) {
  std::vector<ProcSample> samples;
  for (int i = 0; i < kJobProcesses; ++i) {
    ProcSample s;
    s.t_ns = t_ns;
    s.pid = 1000 + i;
    s.start_ticks = 5000 + static_cast<uint64_t>(i);
    s.rss = (uint64_t{64} << 20) + static_cast<uint64_t>(round) * 4096;
    s.threads = 1;
    s.cpu_user_s = 0.01 * round;
    if (slow) {
      s.pss = s.rss / 2;
      s.uss = s.rss / 4;
      s.fds = 12;
      s.fd_limit = 1024;
    }
    samples.push_back(s);
  }
  return samples;
}

// One interval of the supervisor's loop as it touches the store; every fifth carries the slow
// fields. Sample times advance by a second per round, as in a real run.
void BM_StoreRound(benchmark::State& state) {
  TempRun run;
  StoreWriter writer = StoreWriter::open(run.db());
  int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  LogStream out{"stdout", 0, 0, 0, {"logs/stdout.log"}, {}};
  LogStream err{"stderr", 0, 0, 0, {"logs/stderr.log"}, {}};
  int round = 0;
  for (auto _ : state) {
    t += kSecondNs;
    writer.add_proc_samples(job_samples(t, round, round % 5 == 0));
    HostSample host;
    host.t_ns = t;
    host.mem_total = uint64_t{24} << 30;
    host.mem_available = uint64_t{20} << 30;
    writer.add_host_sample(host);
    out.bytes += 8000;
    out.lines += 100;
    writer.write_log_stream(out);
    writer.write_log_stream(err);
    writer.flush();
    ++round;
  }
}
BENCHMARK(BM_StoreRound)->Unit(benchmark::kMicrosecond);

// The same with downsample() called each round, as the supervisor does once a minute; most calls
// find no bucket to thin.
void BM_StoreRoundDownsample(benchmark::State& state) {
  TempRun run;
  StoreWriter writer = StoreWriter::open(run.db());
  int64_t t = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  int round = 0;
  for (auto _ : state) {
    t += kSecondNs;
    writer.add_proc_samples(job_samples(t, round, round % 5 == 0));
    writer.downsample(t);
    writer.flush();
    ++round;
  }
}
BENCHMARK(BM_StoreRoundDownsample)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace traindoc::store

BENCHMARK_MAIN();
