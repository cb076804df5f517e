// Writes a synthetic run.db of a day-long 8-rank torchrun job into a run folder, through the
// store's own StoreWriter and as the supervisor calls it: each second the samples of every live
// process, the host and the GPUs and the ranks' step counts; every minute the thinning of older
// samples. Then the rank that failed, and the teardown. For bench/day_run.py
// (the size of run.db, `traindoc analyze` on it); benchmark process, not part of the tests.
#include <sys/stat.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "store/store_writer.h"

namespace traindoc::store {
namespace {

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 28'333'334LL * 60 * kSecond;  // a round minute, as the buckets go
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr int kLauncherPid = 1000;
constexpr int kFailingRank = 3;

struct Options {
  std::string run_dir;
  int64_t seconds = 24 * 3600;
  int ranks = 8;
  int workers = 4;  // DataLoader workers per rank, started again each epoch
  int64_t epoch_seconds = 30 * 60;
  int steps_per_second = 2;
  int64_t log_every_seconds = 10;  // a progress line of each rank
};

struct Job {
  std::vector<ProcessRecord> ranks;
  std::vector<ProcessRecord> workers;  // this epoch's
  ProcessRecord launcher;
  int next_pid = 2000;
};

uint64_t ticks_at(int64_t t_ns) {
  return static_cast<uint64_t>((t_ns - kT0) / 10'000'000) + 500'000;
}

ProcessRecord process(int pid, int ppid, int64_t t_ns, const std::string& cmdline) {
  ProcessRecord p;
  p.pid = pid;
  p.ppid = ppid;
  p.start_ticks = ticks_at(t_ns);
  p.start_ns = t_ns;
  p.cmdline = cmdline;
  p.argv0 = cmdline.substr(0, cmdline.find(' '));
  p.agent = true;
  return p;
}

ProcessRecord rank_process(const Options& o, int rank, int pid, int ppid, int64_t t_ns,
                           bool forked) {
  ProcessRecord p = process(pid, ppid, t_ns, "/usr/bin/python3 -u train.py --epochs 100");
  p.rank = rank;
  p.local_rank = rank;
  p.world_size = o.ranks;
  p.rank_source = common::RankSource::kTorch;
  p.forked = forked;
  return p;
}

void end(ProcessRecord& p, int64_t t_ns, std::optional<int> code, std::optional<int> signal) {
  p.exit_code = code;
  p.exit_signal = signal;
  p.end_ns = t_ns;
  p.end_source = EndSource::kParent;
}

void start_workers(const Options& o, Job& job, StoreWriter& writer, int64_t t_ns) {
  for (ProcessRecord& w : job.workers) {
    end(w, t_ns, 0, std::nullopt);
    writer.write_process(w);
  }
  job.workers.clear();
  for (const ProcessRecord& r : job.ranks) {
    for (int k = 0; k < o.workers; ++k) {
      ProcessRecord w = rank_process(o, *r.rank, job.next_pid++, r.pid, t_ns, true);
      w.worker_id = k;
      writer.write_process(w);
      job.workers.push_back(w);
    }
  }
}

ProcSample proc_sample(const ProcessRecord& p, int64_t t_ns, bool slow, uint64_t base) {
  int64_t age_s = (t_ns - p.start_ns) / kSecond;
  ProcSample s;
  s.t_ns = t_ns;
  s.pid = p.pid;
  s.start_ticks = p.start_ticks;
  // Flat, with a little noise: the analysis finds no leak, as in most healthy days.
  s.rss = base + static_cast<uint64_t>((age_s * 7919 + p.pid) % 64) * (uint64_t{1} << 20);
  s.rss_file = base / 8;
  s.threads = p.worker_id ? 4 : 48;
  s.cpu_user_s = static_cast<double>(age_s) * 0.9;
  s.cpu_sys_s = static_cast<double>(age_s) * 0.05;
  if (slow) {
    s.pss = s.rss * 3 / 4;
    s.uss = s.rss / 2;
    s.fds = 64;
    s.fd_limit = 1'048'576;
  }
  return s;
}

CollectiveCall all_reduce(const ProcessRecord& rank, int ranks, uint64_t number, int64_t t_ns) {
  CollectiveCall c;
  c.t_ns = t_ns;
  c.end_ns = t_ns + 40'000'000;
  c.pid = rank.pid;
  c.start_ticks = rank.start_ticks;
  c.group = 0x5eed;
  c.number = number;
  c.group_rank = *rank.rank;
  c.group_size = ranks;
  c.source = "python";
  c.op = "all_reduce";
  c.dtype = "float32";
  c.count = 25'557'032;
  c.tensors = "[25557032] float32";
  c.redop = "sum";
  c.site = "torch/nn/parallel/distributed.py:1139";
  c.step = number;
  return c;
}

// What the supervisor stores of the calls: the first 200 of each rank (docs/collectives.md).
void first_calls(const Options& o, const Job& job, StoreWriter& writer, int64_t t_ns) {
  std::vector<CollectiveCall> calls;
  for (const ProcessRecord& r : job.ranks) {
    for (uint64_t n = 1; n <= 200; ++n) {
      calls.push_back(all_reduce(r, o.ranks, n, t_ns + static_cast<int64_t>(n) * kSecond / 2));
    }
  }
  writer.add_collectives(calls);
}

// ... and the last 64 of each at the end.
void last_calls(const Options& o, const Job& job, StoreWriter& writer, uint64_t steps,
                int64_t t_ns) {
  std::vector<CollectiveCall> calls;
  for (const ProcessRecord& r : job.ranks) {
    for (uint64_t n = steps - 63; n <= steps; ++n) {
      calls.push_back(all_reduce(r, o.ranks, n, t_ns - static_cast<int64_t>(steps - n) * kSecond));
    }
  }
  writer.add_collectives(calls);
}

void devices(const Options& o, const Job& job, StoreWriter& writer) {
  writer.write_gpu_status(true, "NVML of driver 580.65.06, 8 GPU(s)", true);
  for (int i = 0; i < o.ranks; ++i) {
    char bus[32];
    std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", 0x18 + i * 0x10);
    writer.write_gpu_device({i, "GPU-5f1c2b9e-0000-0000-0000-00000000000" + std::to_string(i), bus,
                             "NVIDIA H100 80GB HBM3", 80 * kGiB});
  }
  for (const ProcessRecord& r : job.ranks) {
    writer.write_gpu_process({r.pid + 100'000, r.pid, r.start_ticks, r.start_ns, r.cmdline});
    writer.write_cuda_env({r.pid, r.start_ticks, std::nullopt, "", std::nullopt});
  }
}

void gpu_round(const Job& job, StoreWriter& writer, int64_t t_ns) {
  std::vector<GpuSample> samples;
  std::vector<GpuProcessSample> held;
  for (const ProcessRecord& r : job.ranks) {
    int device = *r.rank;
    uint64_t used = 61 * kGiB + static_cast<uint64_t>((t_ns / kSecond + device) % 97) * (1 << 24);
    GpuSample s;
    s.t_ns = t_ns;
    s.device = device;
    s.memory_used = used + kGiB / 2;
    s.utilization_gpu = 97;
    s.utilization_memory = 41;
    s.temperature_c = 64;
    s.power_mw = 612'000;
    s.throttle_reasons = 0;
    s.ecc_corrected = 0;
    s.ecc_uncorrected = 0;
    samples.push_back(s);
    held.push_back({t_ns, device, r.pid + 100'000, r.pid, r.start_ticks, used, "compute"});
  }
  writer.add_gpu_samples(samples);
  writer.add_gpu_process_samples(held);
}

void host_round(StoreWriter& writer, int64_t t_ns, uint64_t job_rss) {
  HostSample h;
  h.t_ns = t_ns;
  h.mem_total = 2048 * kGiB;
  h.mem_available = h.mem_total - job_rss - 40 * kGiB;
  h.cgroup_version = 2;
  h.cgroup_current = job_rss + 30 * kGiB;
  h.cgroup_oom_kills = 0;
  h.shm_total = 1024 * kGiB;
  h.shm_used = 2 * kGiB;
  writer.add_host_sample(h);
}

// The failing rank's traceback, as torchrun --tee prints it; then its end and the teardown.
void fail(Job& job, StoreWriter& writer, uint64_t& line, int64_t t_ns) {
  const std::string prefix = "[default" + std::to_string(kFailingRank) + "]:";
  std::vector<LogLine> lines;
  for (const char* text :
       {"Traceback (most recent call last):",
        "  File \"/home/user/proj/train.py\", line 212, in <module>", "    main()",
        "  File \"/home/user/proj/train.py\", line 188, in main",
        "    loss = criterion(output, target)",
        "ValueError: Expected input batch_size (12) to match target batch_size (16)."}) {
    lines.push_back({t_ns, "stderr", line++, prefix + text});
  }
  writer.add_log_lines(lines);
  ProcessRecord& failed = job.ranks[kFailingRank];
  end(failed, t_ns + kSecond / 10, 1, std::nullopt);
  int64_t teardown = t_ns + kSecond;
  for (ProcessRecord& r : job.ranks) {
    if (r.pid != failed.pid) end(r, teardown, std::nullopt, 15);
  }
  for (ProcessRecord& w : job.workers) end(w, teardown, std::nullopt, 15);
  end(job.launcher, teardown + kSecond, 1, std::nullopt);
  for (const ProcessRecord& p : job.ranks) writer.write_process(p);
  for (const ProcessRecord& p : job.workers) writer.write_process(p);
  writer.write_process(job.launcher);
}

void write_day(const Options& o) {
  std::filesystem::create_directories(o.run_dir);
  chmod(o.run_dir.c_str(), 0700);
  StoreWriter writer = StoreWriter::open(o.run_dir + "/run.db");
  RunInfo run;
  run.command = {"torchrun",
                 "--nproc_per_node",
                 std::to_string(o.ranks),
                 "--redirects",
                 "2",
                 "--tee",
                 "2",
                 "train.py",
                 "--epochs",
                 "100"};
  run.hostname = "node-17";
  run.version = "bench";
  run.supervisor_pid = 999;
  run.root_pid = kLauncherPid;
  run.start_ns = kT0;
  writer.write_run(run);

  Job job;
  job.launcher = process(kLauncherPid, 999, kT0,
                         "/usr/bin/python3 /usr/bin/torchrun --nproc_per_node " +
                             std::to_string(o.ranks) + " --redirects 2 --tee 2 train.py");
  writer.write_process(job.launcher);
  for (int r = 0; r < o.ranks; ++r) {
    job.ranks.push_back(rank_process(o, r, 1001 + r, kLauncherPid, kT0 + kSecond, false));
    writer.write_process(job.ranks.back());
  }
  devices(o, job, writer);
  first_calls(o, job, writer, kT0 + 20 * kSecond);

  LogStream out{"stdout", 0, 0, 0, {"logs/stdout.log"}, {}};
  LogStream err{"stderr", 0, 0, 0, {"logs/stderr.log"}, {}};
  uint64_t err_line = 1;
  int64_t end_ns = kT0 + o.seconds * kSecond;
  for (int64_t t = kT0 + 2 * kSecond; t < end_ns; t += kSecond) {
    int64_t second = (t - kT0) / kSecond;
    if ((second - 2) % o.epoch_seconds == 0) start_workers(o, job, writer, t);
    bool slow = second % 5 == 1;
    std::vector<ProcSample> samples;
    uint64_t job_rss = 0;
    samples.push_back(proc_sample(job.launcher, t, slow, kGiB / 4));
    for (const ProcessRecord& r : job.ranks) samples.push_back(proc_sample(r, t, slow, 9 * kGiB));
    for (const ProcessRecord& w : job.workers) {
      samples.push_back(proc_sample(w, t, slow, 3 * kGiB / 2));
    }
    for (const ProcSample& s : samples) job_rss += s.rss;
    writer.add_proc_samples(samples);
    host_round(writer, t, job_rss);
    gpu_round(job, writer, t);
    std::vector<StepSample> steps;
    int64_t done = (second - 20) * o.steps_per_second;
    for (const ProcessRecord& r : job.ranks) {
      if (done <= 0) break;
      for (StepKind kind : {StepKind::kOptimizer, StepKind::kBackward, StepKind::kDdpForward}) {
        steps.push_back({t, r.pid, r.start_ticks, kind, done});
      }
    }
    writer.add_step_samples(steps);
    if (second % o.log_every_seconds == 0) {
      std::vector<LogLine> lines;
      for (const ProcessRecord& r : job.ranks) {
        std::string text = "[default" + std::to_string(*r.rank) + "]:epoch " +
                           std::to_string(second / o.epoch_seconds) + " step " +
                           std::to_string(done) + " loss 0.4187 lr 0.000316 38.2 samples/s";
        lines.push_back({t, "stdout", ++out.lines, text});
        out.bytes += text.size() + 1;
      }
      writer.add_log_lines(lines);
    }
    writer.write_log_stream(out);
    writer.write_log_stream(err);
    // The supervisor commits every round; committing each minute writes the same rows, faster.
    if (second % 60 == 0) {
      writer.downsample(t);
      writer.flush();
    }
  }
  uint64_t steps = static_cast<uint64_t>((o.seconds - 20) * o.steps_per_second);
  last_calls(o, job, writer, steps, end_ns);
  fail(job, writer, err_line, end_ns);
  err.lines = err_line - 1;
  err.bytes = 600;
  writer.write_log_stream(err);
  run.end_ns = end_ns + 3 * kSecond;
  run.exit_code = 1;
  writer.write_run(run);
  writer.flush();
}

int64_t number(std::string_view text) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value <= 0) {
    std::fprintf(stderr, "day_run_db: not a positive number: %.*s\n", static_cast<int>(text.size()),
                 text.data());
    std::exit(2);
  }
  return value;
}

}  // namespace
}  // namespace traindoc::store

int main(int argc, char** argv) {
  using traindoc::store::number;
  traindoc::store::Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--seconds") {
      o.seconds = number(value);
    } else if (arg == "--ranks") {
      o.ranks = static_cast<int>(number(value));
    } else if (arg == "--workers") {
      o.workers = static_cast<int>(number(value));
    } else if (arg == "--epoch-seconds") {
      o.epoch_seconds = number(value);
    } else if (o.run_dir.empty() && !arg.starts_with("-")) {
      o.run_dir = arg;
      continue;
    } else {
      std::fprintf(stderr,
                   "usage: day_run_db RUN_FOLDER [--seconds 86400] [--ranks 8] [--workers 4] "
                   "[--epoch-seconds 1800]\n");
      return 2;
    }
    ++i;
  }
  if (o.run_dir.empty() || o.seconds < 60) {
    std::fprintf(stderr, "day_run_db: a run folder and at least 60 seconds are needed\n");
    return 2;
  }
  traindoc::store::write_day(o);
  return 0;
}
