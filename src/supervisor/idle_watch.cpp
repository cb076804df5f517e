// The idle watch's decisions: how busy each walk found the job, and when that makes a spell.
// Supervisor process, main loop thread.
#include "supervisor/idle_watch.h"

#include <algorithm>

#include "supervisor/collective_text.h"

namespace traindoc::supervisor {
namespace {

// The job is idle while none of its processes uses more than this share of one core and none
// prints: a wait that polls (a store's client, a rendezvous, sleep(0.01) loops) takes 1 to 3 %.
constexpr double kIdleCpuShare = 0.05;
// The share is judged over the walks of the last second at least: the kernel counts CPU time in
// ticks of 10 ms, so one walk of a short --interval could see a poll's wake-up as 2 ticks (10 %
// of a 0.2 s walk) and end the spell.
constexpr int64_t kWindowNs = 1'000'000'000;
// Growth of the job's RSS that counts as work, per second of a walk: faster than the creep of
// processes that wait (lazy allocations, an allocator's pools) adds up to across a job.
constexpr double kGrowthBytesPerSecond = 1 << 20;
// Walks in a row whose growth counts as work.
constexpr int kGrowingWalks = 2;

}  // namespace

IdleWatch::Work IdleWatch::work_of(const std::vector<store::ProcSample>& samples,
                                   const std::set<int>& alive) {
  Work work;
  for (const store::ProcSample& sample : samples) {
    double used = sample.cpu_user_s + sample.cpu_sys_s;
    auto [before, added] = m_cpu_seen.try_emplace(sample.pid, used);
    work.busiest_cpu_s = std::max(work.busiest_cpu_s, added ? used : used - before->second);
    before->second = used;
    work.rss_bytes += sample.rss;
  }
  std::erase_if(m_cpu_seen, [&](const auto& entry) { return !alive.contains(entry.first); });
  return work;
}

double IdleWatch::window_share(int64_t walk_ns, double busiest_cpu_s) {
  // The CPU the processes spent on the stacks asked for them is not theirs.
  bool dumping = m_dump_walks > 0;
  if (dumping) --m_dump_walks;
  m_cpu_window.emplace_back(walk_ns, dumping ? 0.0 : busiest_cpu_s);
  int64_t covered_ns = 0;
  double window_cpu_s = 0;
  for (const auto& [length_ns, cpu_s] : m_cpu_window) {
    covered_ns += length_ns;
    window_cpu_s += cpu_s;
  }
  while (covered_ns - m_cpu_window.front().first >= kWindowNs) {
    covered_ns -= m_cpu_window.front().first;
    window_cpu_s -= m_cpu_window.front().second;
    m_cpu_window.pop_front();
  }
  return window_cpu_s / (static_cast<double>(covered_ns) / 1e9);
}

bool IdleWatch::memory_growing(uint64_t rss_bytes, int64_t walk_ns) {
  // An RSS of 0: the walk measured none.
  if (rss_bytes != 0) {
    bool grew = m_rss_seen != 0 && rss_bytes > m_rss_seen &&
                static_cast<double>(rss_bytes - m_rss_seen) >=
                    kGrowthBytesPerSecond * static_cast<double>(walk_ns) / 1e9;
    m_growing_walks = grew ? m_growing_walks + 1 : 0;
    m_rss_seen = rss_bytes;
  }
  return m_growing_walks >= kGrowingWalks;
}

IdleWatch::Turn IdleWatch::walked(const Walk& walk) {
  int64_t walk_ns =
      m_last_walk_ns == 0 ? m_first_walk_ns : std::max<int64_t>(1, walk.t_ns - m_last_walk_ns);
  m_last_walk_ns = walk.t_ns;
  // A job that starts processes is at work, however short they live: a walk sees none of their
  // CPU, and their parent mostly waits for them.
  bool active = window_share(walk_ns, walk.work.busiest_cpu_s) > kIdleCpuShare ||
                memory_growing(walk.work.rss_bytes, walk_ns) ||
                walk.output_bytes != m_output_seen || walk.processes != m_processes_seen ||
                m_active_ns == 0;
  m_output_seen = walk.output_bytes;
  m_processes_seen = walk.processes;
  Turn turn;
  if (active) {
    turn = {false, m_idle_since_ns != 0, m_idle_since_ns};
    m_idle_since_ns = 0;
    m_active_ns = walk.t_ns;
    return turn;
  }
  if (m_idle_since_ns != 0 || walk.t_ns - m_active_ns < m_stall_ns) return turn;
  m_idle_since_ns = m_active_ns;
  return {true, false, m_active_ns};
}

void IdleWatch::process_ended(const store::ProcessRecord& record) {
  if (record.exit_signal || record.exit_code.value_or(0) != 0) m_last_failure = record;
}

std::string IdleWatch::failure_before(int64_t quiet_since_ns, int64_t run_start_ns) const {
  // One long before the quiet is not its likely cause (a `git describe` that failed at start).
  if (!m_last_failure || m_last_failure->end_ns < quiet_since_ns - m_stall_ns) return "";
  constexpr size_t kCmdlineShown = 60;
  const store::ProcessRecord& p = *m_last_failure;
  std::string program = p.cmdline;
  std::replace_if(
      program.begin(), program.end(), [](char c) { return c >= 0 && c < ' '; }, ' ');
  if (program.size() > kCmdlineShown) {
    size_t cut = kCmdlineShown - 3;
    while (cut > 0 && (static_cast<unsigned char>(program[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
    program = program.substr(0, cut) + "...";
  }
  return "; the last process to fail before it: pid " + std::to_string(p.pid) + " (" + program +
         "), " + end_text(p) + " at +" + seconds_text(p.end_ns - run_start_ns);
}

}  // namespace traindoc::supervisor
