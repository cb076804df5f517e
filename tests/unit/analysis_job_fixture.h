// The evidence of a small torchrun job for analysis tests: a launcher, two ranks, one
// DataLoader worker each, with helpers to end processes and add output lines.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/diagnosis.h"
#include "store/evidence.h"

namespace traindoc::analysis::job {

using store::Evidence;
using store::HostSample;
using store::ProcessRecord;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kGiB = 1024 * kMiB;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kT0 = 1'700'000'000 * kSecond;  // the job's start

constexpr int kLauncher = 1000;
constexpr int kRank0 = 1010;
constexpr int kRank1 = 1011;
constexpr int kWorker0 = 1020;  // worker 0 of rank 0
constexpr int kWorker1 = 1021;  // worker 0 of rank 1

// What a rank prints when its DataLoader worker crashed.
inline const std::string kDataLoaderError =
    "RuntimeError: DataLoader worker (pid 42) is killed by signal: Segmentation fault.";

inline int64_t at(double seconds) {
  return kT0 + static_cast<int64_t>(seconds * 1e9);
}

inline ProcessRecord proc(int pid, int ppid, uint64_t start_ticks, const std::string& cmdline) {
  ProcessRecord p;
  p.pid = pid;
  p.ppid = ppid;
  p.start_ticks = start_ticks;
  p.start_ns = kT0 + static_cast<int64_t>(start_ticks - 500'000) * 10'000'000;
  p.cmdline = cmdline;
  p.argv0 = cmdline.substr(0, cmdline.find(' '));
  p.agent = true;
  return p;
}

inline ProcessRecord ranked(ProcessRecord p, int rank, bool forked = false) {
  p.rank = rank;
  p.local_rank = rank;
  p.world_size = 2;
  p.rank_source = common::RankSource::kTorch;
  p.forked = forked;
  return p;
}

// torchrun --nproc_per_node 2 --redirects 2 --tee 2 train.py, with num_workers=1.
inline Evidence torchrun_job() {
  const std::string launcher =
      "/usr/bin/python3.11 /usr/bin/torchrun --nproc_per_node 2 --redirects 2 --tee 2 train.py "
      "--batch-size 16";
  const std::string rank = "/usr/bin/python3.11 -u train.py --batch-size 16";
  Evidence e;
  e.run.command = {"torchrun", "--nproc_per_node", "2", "train.py"};
  e.run.root_pid = kLauncher;
  e.run.supervisor_pid = 999;
  e.run.start_ns = kT0;
  e.processes = {
      proc(kLauncher, 999, 500'000, launcher),
      ranked(proc(kRank0, kLauncher, 500'100, rank), 0),
      ranked(proc(kRank1, kLauncher, 500'101, rank), 1),
      ranked(proc(kWorker0, kRank0, 500'300, rank), 0, true),
      ranked(proc(kWorker1, kRank1, 500'301, rank), 1, true),
  };
  HostSample h;
  h.t_ns = at(1);
  h.mem_total = 16 * kGiB;
  h.mem_available = 9 * kGiB;
  h.cgroup_version = 1;
  e.host_samples = {h};
  return e;
}

inline ProcessRecord& process(Evidence& e, int pid) {
  for (ProcessRecord& p : e.processes) {
    if (p.pid == pid) return p;
  }
  ADD_FAILURE() << "no process " << pid;
  return e.processes.front();
}

// Starts `worker` through a forkserver of its rank (multiprocessing_context="forkserver"), as
// the agent tells it: the forkserver (pid: the worker's + 10) runs multiprocessing's main with
// the rank's variables, and the worker is its fork.
inline void through_forkserver(Evidence& e, int worker) {
  const std::string server =
      "/usr/bin/python3.11 -B -c from multiprocessing.forkserver import main; main(8, 9)";
  ProcessRecord& w = process(e, worker);
  ProcessRecord forkserver = ranked(proc(worker + 10, w.ppid, w.start_ticks - 50, server), *w.rank);
  w.ppid = forkserver.pid;
  w.cmdline = server;
  e.processes.push_back(forkserver);
}

inline void exited(Evidence& e, int pid, double seconds, int code) {
  ProcessRecord& p = process(e, pid);
  p.exit_code = code;
  p.end_ns = at(seconds);
  p.end_source = store::EndSource::kParent;
}

inline void killed(Evidence& e, int pid, double seconds, int signal) {
  ProcessRecord& p = process(e, pid);
  p.exit_signal = signal;
  p.end_ns = at(seconds);
  p.end_source = store::EndSource::kParent;
}

// `count` children that rank `parent` forked one after another from `seconds` on, 10 ms apart,
// each exiting with `code` 5 ms after its start (a loop of short forks); pids from `first_pid`.
inline std::vector<int> forked_children(Evidence& e, int parent, int first_pid, int count,
                                        double seconds, int code) {
  const ProcessRecord from = process(e, parent);
  std::vector<int> pids;
  for (int i = 0; i < count; ++i) {
    auto ticks = static_cast<uint64_t>(500'000 + seconds * 100 + i);
    e.processes.push_back(
        ranked(proc(first_pid + i, parent, ticks, from.cmdline), from.rank.value_or(0), true));
    exited(e, first_pid + i, seconds + i * 0.01 + 0.005, code);
    pids.push_back(first_pid + i);
  }
  return pids;
}

inline store::LogLine stderr_line(double seconds, uint64_t number, const std::string& text) {
  return {at(seconds), "stderr", number, text};
}

// `texts` printed one after another on stderr at `seconds`, each after `prefix` (a launcher's
// "[default0]:"), numbered on from `number`.
inline void print_lines(Evidence& e, double seconds, uint64_t& number,
                        const std::vector<std::string>& texts, const std::string& prefix = "") {
  for (const std::string& text : texts) {
    e.log_lines.push_back(stderr_line(seconds, number++, prefix + text));
  }
}

// The finding a one-line exception of rank 0 gets, raised at its train.py:52.
inline Finding exception_finding(const std::string& exception) {
  Evidence e = torchrun_job();
  uint64_t number = 1;
  print_lines(e, 2.0, number,
              {"[default0]:Traceback (most recent call last):",
               "[default0]:  File \"/home/user/proj/train.py\", line 52, in <module>",
               "[default0]:    loss.backward()"});
  e.log_lines.push_back(stderr_line(2.0, number++, "[default0]:" + exception));
  exited(e, kRank0, 2.2, 1);
  Diagnosis d = diagnose(e);
  EXPECT_FALSE(d.findings.empty());
  return d.findings.empty() ? Finding{} : d.findings.front();
}

}  // namespace traindoc::analysis::job
