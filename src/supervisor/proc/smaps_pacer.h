// When each process of the job gets its smaps_rollup read. The read walks the process's page
// tables: tens of milliseconds of the supervisor's CPU per GiB resident (docs/BENCHMARKS.md).
// On a node of large ranks and their DataLoader workers that would cost more than everything
// else traindoc does. Every process is read at the same period: the base one (slow_every
// samples) while the reads are cheap, longer when the processes' last reads add up to more than
// `budget` of one core allows. Under memory pressure the reads matter most (which process grows,
// and whether workers copy their dataset, before the OOM killer ends the job): the budget is
// then four times larger. Supervisor process, main loop thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>

namespace traindoc::supervisor {

class SmapsPacer {
 public:
  // `base_period_ns`: the period when reads are cheap. `tolerance_ns`: how early a read may
  // come (half a sample interval, so that a walk's jitter does not skip a whole round).
  // `budget`: the fraction of one core the reads may take.
  SmapsPacer(int64_t base_period_ns, int64_t tolerance_ns, double budget);

  // Whether the process (pid, start ticks) is due its read at `now_ns`: at its first
  // sighting, then once a period.
  bool due(int pid, uint64_t start_ticks, int64_t now_ns) const;
  // It was read at `now_ns`, which cost `cost_ns` of CPU.
  void read(int pid, uint64_t start_ticks, int64_t now_ns, int64_t cost_ns);
  // Forgets the processes no longer alive; their cost no longer counts.
  void retain(const std::set<int>& alive);
  // Whether the host or the job's memory cgroup is short of memory.
  void set_pressure(bool pressure) { m_pressure = pressure; }

  int64_t period_ns() const;

 private:
  struct Last {
    int64_t read_ns = 0;
    int64_t cost_ns = 0;
  };
  int64_t m_base_period_ns;
  int64_t m_tolerance_ns;
  double m_budget;
  bool m_pressure = false;
  int64_t m_total_cost_ns = 0;  // of every process's last read
  std::map<std::pair<int, uint64_t>, Last> m_last;
};

}  // namespace traindoc::supervisor
