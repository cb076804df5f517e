// NUL-separated /proc texts: a process's environment (for its rank variables) and its argv.
// Supervisor process, main loop thread, once per process when it is first seen.
#include "supervisor/proc/environ_text.h"

namespace traindoc::supervisor {

EnvironText::EnvironText(std::string_view text) {
  // Offsets are 32-bit; an environment beyond 4 GiB does not exist (ARG_MAX bounds it).
  if (text.size() >= UINT32_MAX / 2) text = text.substr(0, UINT32_MAX / 2);
  m_text.reserve(text.size() + 1);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view entry = text.substr(start, end - start);
    size_t eq = entry.find('=');
    // An entry without '=' is not a variable (a process may scribble over its environ area).
    if (eq != std::string_view::npos && eq > 0) {
      auto base = static_cast<uint32_t>(m_text.size());
      m_text.append(entry);
      m_text.push_back('\0');
      m_entries.push_back({base, static_cast<uint32_t>(eq), base + static_cast<uint32_t>(eq) + 1});
    }
    start = end + 1;
  }
}

const char* EnvironText::find(std::string_view name) const {
  for (const Entry& entry : m_entries) {
    if (std::string_view(m_text).substr(entry.name_offset, entry.name_size) == name) {
      return m_text.c_str() + entry.value_offset;
    }
  }
  return nullptr;
}

common::RankEnv EnvironText::rank_env() const {
  return common::read_rank_env(
      [this](const char* name) -> const char* { return name ? find(name) : nullptr; });
}

std::vector<std::string> parse_cmdline(std::string_view text) {
  std::vector<std::string> argv;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string_view::npos) end = text.size();
    argv.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  while (!argv.empty() && argv.back().empty()) argv.pop_back();
  return argv;
}

std::string join_cmdline(const std::vector<std::string>& argv) {
  std::string joined;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) joined.push_back(' ');
    joined.append(argv[i]);
  }
  return joined;
}

}  // namespace traindoc::supervisor
