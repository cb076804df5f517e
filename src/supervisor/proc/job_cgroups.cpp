// The memory cgroups of the job's processes: membership and one read of each.
// Supervisor process, main loop thread.
#include "supervisor/proc/job_cgroups.h"

#include <cstdio>

#include "supervisor/proc/cgroup_text.h"

namespace traindoc::supervisor {

JobCgroups::JobCgroups(std::string proc) : m_proc(std::move(proc)) {}

const JobCgroups::Resolved& JobCgroups::resolve(const std::string& text) {
  auto found = m_resolved.find(text);
  if (found != m_resolved.end()) return found->second;
  if (!m_mountinfo) {
    auto mountinfo = m_reader.read((m_proc + "/self/mountinfo").c_str());
    m_mountinfo = mountinfo ? std::string(*mountinfo) : std::string();
  }
  Resolved resolved;
  ProcCgroups cgroups = parse_proc_cgroup(text);
  std::vector<CgroupLocation> candidates = memory_cgroup_candidates(text, *m_mountinfo);
  std::string note;
  if (std::optional<MemoryCgroup> cgroup = MemoryCgroup::open(candidates, note)) {
    resolved.version = cgroup->version();
    resolved.dir = cgroup->dir();
    m_cgroups.try_emplace(resolved.dir, std::move(*cgroup));
  }
  // The path of the hierarchy read, else of the one that holds memory, else the unified one.
  if (resolved.version == 2 || (!cgroups.v1_memory && cgroups.v2)) {
    resolved.path = cgroups.v2.value_or("");
  } else {
    resolved.path = cgroups.v1_memory.value_or("");
  }
  return m_resolved.emplace(text, std::move(resolved)).first->second;
}

std::optional<store::ProcessCgroup> JobCgroups::observe(int pid, uint64_t start_ticks,
                                                        int64_t t_ns) {
  char path[96];
  std::snprintf(path, sizeof path, "%s/%d/cgroup", m_proc.c_str(), pid);
  std::optional<std::string_view> text = m_reader.read(path, ReadUntil::kShortRead);
  if (!text) return std::nullopt;
  Member& member = m_members[pid];
  if (member.start_ticks == start_ticks && member.text == *text) return std::nullopt;
  std::string changed(*text);
  // A process on its way out is moved to the root cgroup (cgroup_exit) after its memory is gone
  // (exit_mm, earlier in do_exit): a change read then is its end, not a move. statm reads all
  // zeros for a process without memory.
  std::snprintf(path, sizeof path, "%s/%d/statm", m_proc.c_str(), pid);
  std::optional<std::string_view> statm = m_reader.read(path, ReadUntil::kShortRead);
  if (!statm || statm->starts_with("0 ")) return std::nullopt;
  member.start_ticks = start_ticks;
  member.text = std::move(changed);
  const Resolved& resolved = resolve(member.text);
  member.dir = resolved.dir;
  return store::ProcessCgroup{t_ns,          pid,         start_ticks, resolved.version,
                              resolved.path, resolved.dir};
}

void JobCgroups::retain(const std::set<int>& alive) {
  for (auto it = m_members.begin(); it != m_members.end();) {
    it = alive.contains(it->first) ? std::next(it) : m_members.erase(it);
  }
}

std::vector<store::CgroupSample> JobCgroups::sample(int64_t t_ns, const std::string& known_dir,
                                                    const CgroupReading* known) {
  std::set<std::string> dirs;
  for (const auto& [pid, member] : m_members) {
    if (!member.dir.empty()) dirs.insert(member.dir);
  }
  std::vector<store::CgroupSample> out;
  for (const std::string& dir : dirs) {
    auto cgroup = m_cgroups.find(dir);
    if (cgroup == m_cgroups.end()) continue;
    CgroupReading reading =
        known != nullptr && dir == known_dir ? *known : cgroup->second.read(m_reader);
    out.push_back({t_ns, dir, cgroup->second.version(), reading.current, reading.max,
                   reading.limit_dir, reading.oom_kills});
  }
  return out;
}

}  // namespace traindoc::supervisor
