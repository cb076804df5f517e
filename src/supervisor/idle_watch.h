// The idle watch: a job that uses no CPU, prints nothing and holds no more memory for
// --stall-seconds waits for
// something that may never come (a deadlocked DataLoader worker, a lock, storage, a peer). Told
// once per idle spell; its end is told when the job moves again. Supervisor process, main loop
// thread. Given each walk's samples and the output's size; stores and asks nothing itself.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "store/evidence.h"

namespace traindoc::supervisor {

class IdleWatch {
 public:
  // `walk_ns`: the sampling interval, the length of the first walk.
  IdleWatch(int64_t stall_ns, int64_t walk_ns) : m_stall_ns(stall_ns), m_first_walk_ns(walk_ns) {}

  // What the job's processes did by a walk: the most CPU seconds one used since the last walk
  // (a process new to the watch counts whole), and the memory they hold together (RSS).
  struct Work {
    double busiest_cpu_s = 0;
    uint64_t rss_bytes = 0;
  };
  // From this walk's samples (their CPU so far); `alive`: every process the walk found.
  Work work_of(const std::vector<store::ProcSample>& samples, const std::set<int>& alive);

  // What one walk saw: the job's work, the bytes the job has written so far, and how many
  // processes the job has had.
  struct Walk {
    int64_t t_ns = 0;
    Work work;
    uint64_t output_bytes = 0;
    size_t processes = 0;
  };
  // What a walk changed: the job went idle (quiet for --stall-seconds; `since_ns`: when it last
  // moved), or moved again after an idle spell (`since_ns`: when that spell began).
  struct Turn {
    bool went_idle = false;
    bool resumed = false;
    int64_t since_ns = 0;
  };
  Turn walked(const Walk& walk);

  // Stacks were asked for: the CPU of the next walks is the dumps', not the job's.
  void stacks_asked() { m_dump_walks = kDumpWalks; }
  // A process ended: the latest one to fail is the likely cause of an idle spell after it.
  void process_ended(const store::ProcessRecord& record);
  // Whether the job printed since the last walk while idle: it moved again, though no walk saw it.
  bool printed_while_idle(uint64_t output_bytes) const {
    return m_idle_since_ns != 0 && output_bytes != m_output_seen;
  }
  // "; the last process to fail before it: pid N (cmdline), killed by SIGSEGV at +3.4 s", where
  // it failed at most --stall-seconds before the quiet began at `quiet_since_ns`; else "".
  std::string failure_before(int64_t quiet_since_ns, int64_t run_start_ns) const;

  // The walks after stacks were asked for, in which the dumps' CPU is not the job's.
  static constexpr int kDumpWalks = 2;

 private:
  // The CPU of the walks of the last second at least, as a share of one core.
  double window_share(int64_t walk_ns, double busiest_cpu_s);
  // Whether the job's memory keeps growing fast, at however little CPU (a program filling a list
  // or reading into memory between sleeps, which a wait that never ends does not do): by a MiB a
  // second or more in walks in a row. Growth in one walk alone is no more than a wait ending in an
  // error (a rank that gave up formats it).
  bool memory_growing(uint64_t rss_bytes, int64_t walk_ns);

  int64_t m_stall_ns;
  int64_t m_first_walk_ns;
  std::map<int, double> m_cpu_seen;  // each process's CPU seconds at the last walk
  uint64_t m_output_seen = 0;
  uint64_t m_rss_seen = 0;  // the job's RSS at the last walk that measured it
  int m_growing_walks = 0;  // the walks in a row up to it in which the RSS grew fast
  size_t m_processes_seen = 0;
  int64_t m_active_ns = 0;      // when the job last used CPU, printed, grew or started a process
  int64_t m_idle_since_ns = 0;  // once told idle, when it last moved (0: not idle)
  int m_dump_walks = 0;
  // The walks of the window: each one's length and its busiest process's CPU seconds.
  std::deque<std::pair<int64_t, double>> m_cpu_window;
  int64_t m_last_walk_ns = 0;
  // A job idle after a failure most often waits for what that process was to give (a Pool's
  // lost task, a dead peer).
  std::optional<store::ProcessRecord> m_last_failure;
};

}  // namespace traindoc::supervisor
