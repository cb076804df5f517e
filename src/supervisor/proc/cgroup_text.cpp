// Parsers for finding and reading the memory cgroup, v1 and v2.
// Supervisor process, sampler thread (at start-up for the location, each sample for the files).
#include "supervisor/proc/cgroup_text.h"

#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mount_field(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = field[i + k];
        if (c < '0' || c > '7') {
          octal = false;
          break;
        }
        value = value * 8 + (c - '0');
      }
      if (octal && value < 256) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

bool has_option(std::string_view options, std::string_view wanted) {
  while (!options.empty()) {
    size_t comma = options.find(',');
    std::string_view option = options.substr(0, comma);
    if (option == wanted) return true;
    if (comma == std::string_view::npos) break;
    options.remove_prefix(comma + 1);
  }
  return false;
}

bool has_parent_step(std::string_view path) {
  while (!path.empty()) {
    size_t slash = path.find('/');
    if (path.substr(0, slash) == "..") return true;
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return false;
}

// Flat keyed files ("key value" per line), as memory.events and memory.oom_control.
template <typename OnPair>
void for_each_key_value(std::string_view text, OnPair&& on_pair) {
  std::string_view line;
  while (text::next_line(text, line)) {
    std::string_view key;
    std::string_view value;
    if (!text::next_word(line, key) || !text::next_word(line, value)) continue;
    on_pair(key, text::parse_u64(value));
  }
}

std::optional<CgroupLocation> locate(int version, const std::string& path,
                                     const std::vector<MountEntry>& mounts) {
  const MountEntry* fallback = nullptr;
  for (const MountEntry& mount : mounts) {
    bool matches = version == 2
                       ? mount.fs_type == "cgroup2"
                       : mount.fs_type == "cgroup" && has_option(mount.super_options, "memory");
    if (!matches) continue;
    if (std::optional<std::string> dir = join_cgroup_path(mount.mount_point, mount.root, path)) {
      return CgroupLocation{version, std::move(*dir), mount.mount_point, false};
    }
    if (fallback == nullptr) fallback = &mount;
  }
  if (fallback == nullptr) return std::nullopt;
  return CgroupLocation{version, fallback->mount_point, fallback->mount_point, true};
}

}  // namespace

ProcCgroups parse_proc_cgroup(std::string_view text) {
  ProcCgroups cgroups;
  std::string_view line;
  while (text::next_line(text, line)) {
    size_t first = line.find(':');
    if (first == std::string_view::npos) continue;
    size_t second = line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string_view path = text::trim(line.substr(second + 1));
    if (path.empty() || path.front() != '/') continue;
    if (id == "0" && controllers.empty()) {
      if (!cgroups.v2) cgroups.v2 = std::string(path);
    } else if (has_option(controllers, "memory")) {
      if (!cgroups.v1_memory) cgroups.v1_memory = std::string(path);
    }
  }
  return cgroups;
}

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> mounts;
  std::string_view line;
  while (text::next_line(text, line)) {
    std::string_view word;
    std::string_view rest = line;
    // id, parent id, major:minor
    if (!text::next_word(rest, word) || !text::next_word(rest, word) ||
        !text::next_word(rest, word)) {
      continue;
    }
    std::string_view root;
    std::string_view mount_point;
    std::string_view options;
    if (!text::next_word(rest, root) || !text::next_word(rest, mount_point) ||
        !text::next_word(rest, options)) {
      continue;
    }
    // Optional fields ("shared:1 master:2"), as many as there are, end at a lone "-".
    bool separator = false;
    while (text::next_word(rest, word)) {
      if (word == "-") {
        separator = true;
        break;
      }
    }
    std::string_view fs_type;
    std::string_view source;
    std::string_view super_options;
    if (!separator || !text::next_word(rest, fs_type) || !text::next_word(rest, source)) continue;
    text::next_word(rest, super_options);  // absent on some pseudo filesystems' lines
    mounts.push_back({unescape_mount_field(root), unescape_mount_field(mount_point),
                      std::string(fs_type), std::string(super_options)});
  }
  return mounts;
}

std::optional<std::string> join_cgroup_path(std::string_view mount_point,
                                            std::string_view mount_root,
                                            std::string_view cgroup_path) {
  while (mount_root.size() > 1 && mount_root.back() == '/') mount_root.remove_suffix(1);
  std::string_view relative;
  if (mount_root.empty() || mount_root == "/") {
    relative = cgroup_path;
  } else if (cgroup_path.substr(0, mount_root.size()) == mount_root &&
             (cgroup_path.size() == mount_root.size() || cgroup_path[mount_root.size()] == '/')) {
    relative = cgroup_path.substr(mount_root.size());
  } else {
    return std::nullopt;
  }
  // A path of a cgroup outside our namespace reads "/../x": it is not below this mount.
  if (has_parent_step(relative)) return std::nullopt;
  while (!relative.empty() && relative.back() == '/') relative.remove_suffix(1);
  while (mount_point.size() > 1 && mount_point.back() == '/') mount_point.remove_suffix(1);
  std::string dir(mount_point);
  if (!relative.empty()) {
    if (relative.front() != '/') dir.push_back('/');
    dir.append(relative);
  }
  return dir;
}

std::vector<CgroupLocation> memory_cgroup_candidates(std::string_view proc_cgroup,
                                                     std::string_view mountinfo) {
  std::vector<CgroupLocation> candidates;
  ProcCgroups cgroups = parse_proc_cgroup(proc_cgroup);
  if (!cgroups.v1_memory && !cgroups.v2) return candidates;
  std::vector<MountEntry> mounts = parse_mountinfo(mountinfo);
  if (cgroups.v1_memory) {
    if (auto location = locate(1, *cgroups.v1_memory, mounts)) {
      candidates.push_back(std::move(*location));
    }
  }
  if (cgroups.v2) {
    if (auto location = locate(2, *cgroups.v2, mounts)) candidates.push_back(std::move(*location));
  }
  return candidates;
}

std::optional<uint64_t> parse_cgroup_counter(std::string_view text) {
  return text::parse_u64(text);
}

std::optional<MemoryLimit> parse_v2_memory_max(std::string_view text) {
  text = text::trim(text);
  if (text == "max") return MemoryLimit{true, 0};
  if (std::optional<uint64_t> bytes = text::parse_u64(text)) return MemoryLimit{false, *bytes};
  return std::nullopt;
}

std::optional<MemoryLimit> parse_v1_memory_limit(std::string_view text) {
  // No real limit comes near 2^62 bytes; the "unlimited" value depends on the page size.
  constexpr uint64_t kNoLimitAbove = uint64_t{1} << 62;
  text = text::trim(text);
  if (text == "-1") return MemoryLimit{true, 0};
  std::optional<uint64_t> bytes = text::parse_u64(text);
  if (!bytes) return std::nullopt;
  if (*bytes >= kNoLimitAbove) return MemoryLimit{true, 0};
  return MemoryLimit{false, *bytes};
}

CgroupV2Events parse_v2_memory_events(std::string_view text) {
  CgroupV2Events events;
  for_each_key_value(text, [&](std::string_view key, std::optional<uint64_t> value) {
    if (key == "low") {
      events.low = value;
    } else if (key == "high") {
      events.high = value;
    } else if (key == "max") {
      events.max = value;
    } else if (key == "oom") {
      events.oom = value;
    } else if (key == "oom_kill") {
      events.oom_kill = value;
    }
  });
  return events;
}

CgroupV1OomControl parse_v1_oom_control(std::string_view text) {
  CgroupV1OomControl control;
  for_each_key_value(text, [&](std::string_view key, std::optional<uint64_t> value) {
    if (key == "oom_kill_disable") {
      if (value) control.oom_kill_disable = *value != 0;
    } else if (key == "under_oom") {
      if (value) control.under_oom = *value != 0;
    } else if (key == "oom_kill") {
      control.oom_kill = value;
    }
  });
  return control;
}

}  // namespace traindoc::supervisor
