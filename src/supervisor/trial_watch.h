// The trial watch of `traindoc fit`: a trial has run long enough once every process that trains
// has counted its optimizer steps (as many processes as the job's world size, where ranks tell
// it), or, in a job none of whose processes can count steps (no PyTorch: JAX, TensorFlow, a
// program of its own), once the job's memory has stopped growing for a while it kept working.
// Supervisor process, main loop thread. Given the agent's identities and step counts and each
// walk's memory and CPU; ends nothing itself.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "store/evidence.h"

namespace traindoc::supervisor {

class TrialWatch {
 public:
  // `steps`: the optimizer steps each process that trains runs; 0: never due. `flat_ns`: how
  // long the memory of a job that counts no steps must stay flat, its busiest process working.
  TrialWatch(int64_t steps, int64_t flat_ns) : m_steps(steps), m_flat_ns(flat_ns) {}

  void process_started(int world_size);
  // A step record; a count of 0 is the hook's word that it counts this process's steps.
  void steps_counted(int pid, uint64_t start_ticks, store::StepKind kind, int64_t count);
  // A regular walk at `t_ns`: the job's memory (host RSS and GPU memory, all its processes) and
  // the CPU seconds its busiest process used since the walk before.
  void walked(int64_t t_ns, uint64_t job_bytes, double busiest_cpu_s);

  enum class Due { kNo, kSteps, kFlatMemory };
  // Whether the trial has run long enough, and why: told once.
  Due due();
  int64_t steps() const { return m_steps; }
  int64_t flat_ns() const { return m_flat_ns; }

 private:
  int64_t m_steps;
  int64_t m_flat_ns;
  int m_world = 1;
  bool m_told = false;
  bool m_counting = false;  // some process's steps are counted: they decide
  std::map<std::pair<int, uint64_t>, int64_t> m_counts;  // optimizer steps by process
  // The memory level the flat spell is measured from, when it began, and the last walk.
  std::optional<uint64_t> m_level;
  int64_t m_flat_since_ns = 0;
  int64_t m_walked_ns = 0;
};

}  // namespace traindoc::supervisor
