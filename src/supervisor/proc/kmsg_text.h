// Parsers of the kernel log as /dev/kmsg gives it, one record per read: the record's header and
// the OOM killer's two records ("oom-kill:constraint=...", "... Killed process N (comm) ...").
// Supervisor process, main loop thread. Pure and total: text in, structs out, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace traindoc::supervisor {

// "6,512,478816483,-;message\n KEY=value\n": the header's fields and the message's first line.
struct KmsgRecord {
  int priority = 0;  // facility * 8 + level
  uint64_t sequence = 0;
  uint64_t usec = 0;  // since boot, on the kernel's clock (CLOCK_MONOTONIC)
  std::string_view message;
};

// The record the OOM killer writes first (Linux >= 4.19): which constraint, which cgroups, who.
struct OomKillContext {
  bool memcg = false;     // constraint=CONSTRAINT_MEMCG: a cgroup's limit, not the machine's memory
  std::string oom_memcg;  // the cgroup whose limit was hit
  std::string task_memcg;  // the killed task's cgroup
  std::string task;
  int pid = 0;
};

// The record that names the killed process: "Memory cgroup out of memory: Killed process 8736
// (python3) total-vm:45264kB, anon-rss:32384kB, file-rss:6396kB, shmem-rss:0kB, ...", or "Out
// of memory: Killed process ..." for the machine (older kernels write "Killed process" alone).
struct OomKilledProcess {
  bool memcg = false;  // told by the message itself ("Memory cgroup out of memory")
  int pid = 0;
  std::string comm;
  std::optional<uint64_t> total_vm;  // bytes
  std::optional<uint64_t> anon_rss;
  std::optional<uint64_t> file_rss;
  std::optional<uint64_t> shmem_rss;
};

// nullopt for a record without the header's four fields and ';'.
std::optional<KmsgRecord> parse_kmsg_record(std::string_view text);
std::optional<OomKillContext> parse_oom_kill_context(std::string_view message);
std::optional<OomKilledProcess> parse_oom_killed_process(std::string_view message);

}  // namespace traindoc::supervisor
