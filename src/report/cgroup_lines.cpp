// The job's memory cgroups for report.html's host-memory chart. Any process; pure.
// The supervisor stores the host sampler's reading of traindoc's own cgroup as the job's sample of
// it at the same moment, not read twice: that cgroup's samples agree with the host samples to the
// byte, which is how it is told from the others.
#include "report/cgroup_lines.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "report/chart_series.h"

namespace traindoc::report {
namespace {

// The longest path a label shows whole.
constexpr size_t kPathChars = 48;
// The processes a label names before it counts the rest.
constexpr size_t kNamedProcesses = 2;
// What a shortened path left out.
constexpr std::string_view kCut = "...";
constexpr std::string_view kAbove = ".../";

using ProcessKey = std::pair<int, uint64_t>;

// The cgroup a sample measures: its `current` is the usage of the one whose limit binds.
const std::string& measured(const store::CgroupSample& s) {
  return s.limit_dir.empty() ? s.dir : s.limit_dir;
}

// The path of `ancestor`, a directory at or above `dir` whose path is `path`: the components
// below it taken off; the directory itself where the two do not line up.
std::string path_of(const std::string& ancestor, const std::string& dir, const std::string& path) {
  if (ancestor == dir) return path;
  if (!dir.starts_with(ancestor) || dir[ancestor.size()] != '/') return ancestor;
  std::string below = dir.substr(ancestor.size());
  if (!path.ends_with(below)) return ancestor;
  std::string above = path.substr(0, path.size() - below.size());
  return above.empty() ? "/" : above;
}

// At most `chars` bytes of `text` from its start (or, `from_end`, its end), not splitting a
// UTF-8 character.
std::string cut(const std::string& text, size_t chars, bool from_end) {
  auto continuation = [&](size_t at) {
    return at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80;
  };
  if (!from_end) {
    size_t end = std::min(chars, text.size());
    while (end > 0 && continuation(end)) --end;
    return text.substr(0, end);
  }
  size_t start = text.size() - std::min(chars, text.size());
  while (continuation(start)) ++start;
  return text.substr(start);
}

// "rank 0 (pid 5)", "rank 0 (pid 5) and rank 1 (pid 6)", "a, b and 3 more".
std::string listed(std::vector<std::string> names) {
  if (names.size() > kNamedProcesses + 1) {
    size_t more = names.size() - kNamedProcesses;
    names.resize(kNamedProcesses);
    names.push_back(fmt::format("{} more", more));
  }
  return joined(names);
}

// The samples of one measured cgroup, as they are gathered.
struct Gathered {
  CgroupLine line;
  std::string key;                // the measured directory
  std::vector<std::string> dirs;  // the job's cgroups it measured, first sampled first
  // Each dir's OOM kill counter, lowest and highest: the kills while sampled (a cgroup may have
  // counted some before the run).
  std::map<std::string, std::pair<uint64_t, uint64_t>> kills;
};

// The samples of each cgroup measured other than those the host samples hold, in the order
// first sampled.
std::vector<Gathered> gather(const store::Evidence& e) {
  std::string own = own_cgroup_dir(e);
  // The host samples' cgroup usage is that of the cgroup whose limit binds traindoc's own: a
  // cgroup of the job that this same limit binds (one below it without a limit of its own)
  // measures the same.
  std::set<std::string> own_limits;
  for (const store::CgroupSample& s : e.cgroup_samples) {
    if (!own.empty() && s.dir == own && !s.limit_dir.empty()) own_limits.insert(s.limit_dir);
  }
  std::vector<Gathered> gathered;
  std::map<std::string, size_t> index;
  for (const store::CgroupSample& s : e.cgroup_samples) {
    if (s.dir == own || (!s.limit_dir.empty() && own_limits.contains(s.limit_dir))) continue;
    auto [it, added] = index.try_emplace(measured(s), gathered.size());
    if (added) gathered.push_back({{}, measured(s), {}, {}});
    Gathered& g = gathered[it->second];
    g.line.samples.push_back(&s);
    if (s.current) g.line.peak = std::max(g.line.peak, *s.current);
    if (std::find(g.dirs.begin(), g.dirs.end(), s.dir) == g.dirs.end()) g.dirs.push_back(s.dir);
    if (s.oom_kills) {
      auto counts = g.kills.try_emplace(s.dir, *s.oom_kills, *s.oom_kills).first;
      counts->second = {std::min(counts->second.first, *s.oom_kills),
                        std::max(counts->second.second, *s.oom_kills)};
    }
  }
  return gathered;
}

// Who was in each cgroup, and its path.
struct Memberships {
  const analysis::Diagnosis* diagnosis = nullptr;
  std::map<std::string, std::string> paths;
  std::map<std::string, std::set<ProcessKey>> members;
  std::set<ProcessKey> everyone;

  std::string path_of(const std::string& dir) const {
    auto it = paths.find(dir);
    return it != paths.end() ? it->second : dir;
  }
};

Memberships memberships(const analysis::Diagnosis& d, const store::Evidence& e) {
  Memberships m;
  m.diagnosis = &d;
  for (const store::ProcessCgroup& row : e.process_cgroups) {
    m.everyone.insert({row.pid, row.start_ticks});
    if (row.dir.empty()) continue;
    if (!row.path.empty()) m.paths.try_emplace(row.dir, row.path);
    m.members[row.dir].insert({row.pid, row.start_ticks});
  }
  return m;
}

std::string usage_label(const Gathered& g, const Memberships& m) {
  std::string label = "cgroup " + g.line.name + " usage";
  // Cgroups below the one whose limit binds: theirs is the usage above them.
  std::vector<std::string> below;
  std::set<ProcessKey> in;
  for (const std::string& dir : g.dirs) {
    if (dir != g.key) below.push_back(short_cgroup_path(m.path_of(dir)));
    auto it = m.members.find(dir);
    if (it != m.members.end()) in.insert(it->second.begin(), it->second.end());
  }
  if (!below.empty()) label += ", with " + listed(below) + " in it";
  // Which processes, where the job's were not all in it.
  if (!in.empty() && in.size() < m.everyone.size()) {
    std::vector<std::string> names;
    std::set<ProcessKey> named;
    for (const analysis::ProcessSummary& p : m.diagnosis->processes) {
      ProcessKey key{p.record.pid, p.record.start_ticks};
      if (!in.contains(key)) continue;
      names.push_back(analysis::process_name(p));
      named.insert(key);
    }
    for (const ProcessKey& key : in) {
      if (!named.contains(key)) names.push_back(fmt::format("pid {}", key.first));
    }
    label += " (" + listed(names) + ")";
  }
  if (g.line.oom_kills > 0) {
    label += ", " + analysis::counted(g.line.oom_kills, "OOM kill", "OOM kills");
  }
  return label;
}

}  // namespace

std::string own_cgroup_dir(const store::Evidence& e) {
  std::map<int64_t, const store::HostSample*> host;
  for (const store::HostSample& s : e.host_samples) {
    if (s.cgroup_version != 0 && s.cgroup_current) host.emplace(s.t_ns, &s);
  }
  // Agreements less disagreements: another cgroup agrees only where its own reading, taken a
  // moment later, happens to equal the host's to the byte.
  std::map<std::string, int64_t> score;
  for (const store::CgroupSample& s : e.cgroup_samples) {
    auto it = host.find(s.t_ns);
    if (it == host.end() || !s.current) continue;
    const store::HostSample& h = *it->second;
    bool same = h.cgroup_version == s.version && h.cgroup_current == s.current &&
                h.cgroup_max == s.max && h.cgroup_oom_kills == s.oom_kills;
    score[s.dir] += same ? 1 : -1;
  }
  std::string best;
  int64_t top = 0;
  for (const auto& [dir, n] : score) {
    // A tie is a cgroup below traindoc's that reads its parent's usage (no limit of its own):
    // the parent, the shorter.
    if (n > top || (n == top && n > 0 && dir.size() < best.size())) {
      best = dir;
      top = n;
    }
  }
  if (!best.empty() || host.empty()) return best;
  // Rows thinned to one a minute keep each their own moment (the host's least available memory,
  // a cgroup's highest usage): then the cgroup the job was first seen in, where it starts
  // (traindoc's, unless it moved before the first look), if no sample of it contradicts that.
  const store::ProcessCgroup* first = nullptr;
  for (const store::ProcessCgroup& m : e.process_cgroups) {
    if (!m.dir.empty() && (first == nullptr || m.t_ns < first->t_ns)) first = &m;
  }
  return first != nullptr && !score.contains(first->dir) ? first->dir : std::string();
}

std::string short_cgroup_path(const std::string& path) {
  if (path.size() <= kPathChars) return path;
  std::vector<std::string> parts;
  for (size_t at = 0; at < path.size();) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) parts.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  if (parts.empty()) return cut(path, kPathChars, false);
  std::string tail = parts.back();
  if (kAbove.size() + tail.size() > kPathChars) {
    // A container's 64 hex digits: their start and end tell two apart.
    size_t keep = kPathChars - kAbove.size() - kCut.size();
    std::string both = cut(tail, keep / 2, false);
    both += kCut;
    both += cut(tail, keep - keep / 2, true);
    tail = std::move(both);
  }
  size_t first = parts.size() - 1;
  size_t length = tail.size();
  while (first > 0 && kAbove.size() + parts[first - 1].size() + 1 + length <= kPathChars) {
    length += parts[--first].size() + 1;
  }
  std::string out(first == 0 ? "/" : kAbove);
  for (size_t i = first; i + 1 < parts.size(); ++i) {
    out += parts[i];
    out += '/';
  }
  out += tail;
  return out;
}

std::vector<CgroupLine> job_cgroup_lines(const analysis::Diagnosis& d, const store::Evidence& e) {
  std::vector<Gathered> gathered = gather(e);
  Memberships m = memberships(d, e);
  // Short paths, but whole ones where two would read the same.
  std::vector<std::string> full;
  std::map<std::string, int> uses;
  for (const Gathered& g : gathered) {
    full.push_back(path_of(g.key, g.dirs.front(), m.path_of(g.dirs.front())));
    ++uses[short_cgroup_path(full.back())];
  }
  std::vector<CgroupLine> out;
  for (size_t i = 0; i < gathered.size(); ++i) {
    Gathered& g = gathered[i];
    std::string brief = short_cgroup_path(full[i]);
    g.line.name = uses[brief] > 1 ? full[i] : brief;
    // Capped: a counter that jumped by billions (a damaged run.db) is no count to add up.
    uint64_t kills = 0;
    for (const auto& [dir, counts] : g.kills) {
      kills = std::min<uint64_t>(kills + std::min<uint64_t>(counts.second - counts.first, INT_MAX),
                                 INT_MAX);
    }
    g.line.oom_kills = static_cast<int>(kills);
    g.line.usage_label = usage_label(g, m);
    g.line.limit_label = "cgroup " + g.line.name + " limit";
    out.push_back(std::move(g.line));
  }
  return out;
}

}  // namespace traindoc::report
