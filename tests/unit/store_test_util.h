// Helpers for the store's unit tests: a temporary run folder and fully populated records.
// Test process only; each test gets its own folder, removed afterwards.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include "store/evidence.h"

namespace traindoc::store::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "traindoc-store-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    m_path = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::permissions(m_path, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ignored);
    std::filesystem::remove_all(m_path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return m_path; }
  std::string file(const std::string& name) const { return (m_path / name).string(); }

 private:
  std::filesystem::path m_path;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline constexpr int64_t kSecond = 1'000'000'000;
// A round minute in 2023, so that 60 s buckets start at t0.
inline constexpr int64_t kT0 = 28'333'334LL * 60 * kSecond;

inline RunInfo full_run() {
  RunInfo run;
  run.command = {"torchrun", "--nproc_per_node", "4", "train.py", "--name", "dé jà vu", ""};
  run.hostname = "node-17";
  run.version = "0.1.0";
  run.supervisor_pid = 4242;
  run.root_pid = 4243;
  run.start_ns = kT0;
  run.end_ns = kT0 + 90 * kSecond;
  run.exit_code = 1;
  run.exit_signal = 9;
  run.exec_error = "no such file: train.py";
  return run;
}

inline ProcessRecord full_process(int pid) {
  ProcessRecord r;
  r.pid = pid;
  r.ppid = 4243;
  r.start_ticks = 0xF000'0000'0000'0001ULL;  // above INT64_MAX: the bits must survive
  r.start_ns = kT0 + 2 * kSecond;
  r.argv0 = "/usr/bin/python3";
  r.cmdline = "python3 -u train.py --local_rank=1";
  r.rank = 1;
  r.local_rank = 1;
  r.world_size = 4;
  r.node_rank = 0;
  r.rank_source = common::RankSource::kTorch;
  r.agent = true;
  r.forked = true;
  r.end_source = EndSource::kAgentExit;
  r.exit_code = 3;
  r.exit_signal = 6;
  r.core_dumped = true;
  r.end_ns = kT0 + 80 * kSecond;
  r.init_rank = 1;
  r.init_world_size = 8;
  r.worker_id = 2;
  return r;
}

inline ProcSample full_proc_sample(int pid, int64_t t_ns) {
  ProcSample s;
  s.t_ns = t_ns;
  s.pid = pid;
  s.start_ticks = 123456;
  s.rss = 3ULL << 30;
  s.swap = 4096;
  s.pss = 2ULL << 30;
  s.uss = 1ULL << 30;
  s.threads = 37;
  s.fds = 120;
  s.fd_limit = 1024;
  s.cpu_user_s = 12.5;
  s.cpu_sys_s = 0.25;
  s.rss_file = 1ULL << 28;
  return s;
}

inline HostSample full_host_sample(int64_t t_ns) {
  HostSample h;
  h.t_ns = t_ns;
  h.mem_total = 64ULL << 30;
  h.mem_available = 40ULL << 30;
  h.swap_total = 8ULL << 30;
  h.swap_free = 7ULL << 30;
  h.cgroup_version = 2;
  h.cgroup_current = 20ULL << 30;
  h.cgroup_max = 32ULL << 30;
  h.cgroup_oom_kills = 2;
  h.shm_total = 32ULL << 30;
  h.shm_used = 1ULL << 20;
  return h;
}

// A symbolized SIGSEGV: a frame with inlined functions, one outside any file mapping, one with
// no debug info, and values that need all 64 bits.
inline Crash full_crash(int pid, uint64_t start_ticks) {
  Crash c;
  c.pid = pid;
  c.start_ticks = start_ticks;
  c.tid = pid + 3;
  c.thread_name = "pt_autograd_0";
  c.signo = 11;
  c.code = 1;  // SEGV_MAPERR
  c.fault_addr = 0xFFFF'FFFF'FFFF'FFF8ULL;
  c.sender_pid = 0;
  c.time_ns = kT0 + 42 * kSecond;
  c.pc = 0x7F3A'1234'5678ULL;
  c.sp = 0x7FFC'0000'1000ULL;
  c.fp = 0x7FFC'0000'1040ULL;
  c.stack_lo = 0x7FFB'FF80'0000ULL;
  c.stack_hi = 0x7FFC'0000'2000ULL;
  c.other_crashes = 2;
  c.frames = {
      {0x7F3A'1234'5678ULL,
       "/opt/torch/lib/libtorch_cpu.so",
       0x1234'5678ULL,
       "at::native::index_select_out_cpu_(at::Tensor const&, long, at::Tensor const&, "
       "at::Tensor&)",
       0x4C,
       "aten/src/ATen/native/TensorAdvancedIndexing.cpp",
       1234,
       {"c10::TensorImpl::data<float>() const", "at::Tensor::data_ptr<float>() const"}},
      {0x1000, "", 0, "", 0, "", 0, {}},  // in no file mapping
      {0x5555'5566'7788ULL,
       "/usr/bin/python3.11",
       0x1'2788ULL,
       "_PyEval_EvalFrameDefault",
       0x91,
       "",
       0,
       {""}},  // an inlined function whose name is unknown
  };
  c.maps =
      "555555554000-555555556000 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
      "7f3a00000000-7f3a20000000 r-xp 00000000 08:01 456 /opt/torch/lib/libtorch_cpu.so\n";
  c.code_bytes = "0f0b";
  c.python_traceback =
      "Fatal Python error: Segmentation fault\n\nThread 0x00007f3a (most recent call first):\n"
      "  File \"train.py\", line 42 in forward\n";
  c.python_note = "";
  return c;
}

}  // namespace traindoc::store::test
