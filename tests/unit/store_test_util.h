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
  r.rank_source = "torch";
  r.agent = true;
  r.forked = true;
  r.end_source = EndSource::kAgentExit;
  r.exit_code = 3;
  r.exit_signal = 6;
  r.core_dumped = true;
  r.end_ns = kT0 + 80 * kSecond;
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

}  // namespace traindoc::store::test
