// NUL-separated /proc texts: a process's environment (for its rank variables) and its argv.
// Supervisor process, main loop thread, once per process when it is first seen.
// Pure and total: any bytes in, lookups or argv out.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/rank_env.h"

namespace traindoc::supervisor {

// The environment of a process as /proc/<pid>/environ gives it: "NAME=value\0" entries.
class EnvironText {
 public:
  EnvironText() = default;
  explicit EnvironText(std::string_view text);

  // The value of the first entry named `name` (getenv's choice among duplicates), NUL-terminated
  // and valid while this object lives; nullptr when unset.
  const char* find(std::string_view name) const;
  size_t size() const { return m_entries.size(); }

  // The rank variables of whichever launcher set them.
  common::RankEnv rank_env() const;

 private:
  struct Entry {
    uint32_t name_offset;
    uint32_t name_size;
    uint32_t value_offset;
  };
  std::string m_text;  // the entries, each ending with a NUL even where the input was cut short
  std::vector<Entry> m_entries;
};

// /proc/<pid>/cmdline: arguments separated by NULs, the last followed by one or not (a process
// may rewrite its argv area). Trailing empty arguments are dropped: setproctitle pads with NULs.
std::vector<std::string> parse_cmdline(std::string_view text);

// argv joined by single spaces, for display and the process record.
std::string join_cmdline(const std::vector<std::string>& argv);

}  // namespace traindoc::supervisor
