// Parsers of /dev/kmsg records and of the OOM killer's messages in them.
// Supervisor process, main loop thread.
#include "supervisor/proc/kmsg_text.h"

#include <climits>

#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

bool take_char(std::string_view& text, char c) {
  if (text.empty() || text.front() != c) return false;
  text.remove_prefix(1);
  return true;
}

std::optional<int> as_pid(uint64_t value) {
  if (value == 0 || value > INT_MAX) return std::nullopt;
  return static_cast<int>(value);
}

// "anon-rss:32384kB" anywhere in `text`, in bytes.
std::optional<uint64_t> kb_field(std::string_view text, std::string_view key) {
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    // Whole keys only: "rss:" must not match inside "anon-rss:".
    if (at != 0 && !text::is_space(text[at - 1]) && text[at - 1] != ',') continue;
    std::string_view rest = text.substr(at + key.size());
    uint64_t kb = 0;
    if (!text::take_u64(rest, kb) || !rest.starts_with("kB")) return std::nullopt;
    if (kb > UINT64_MAX / 1024) return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

}  // namespace

std::optional<KmsgRecord> parse_kmsg_record(std::string_view text) {
  KmsgRecord record;
  uint64_t priority = 0;
  if (!text::take_u64(text, priority) || priority > INT_MAX || !take_char(text, ',') ||
      !text::take_u64(text, record.sequence) || !take_char(text, ',') ||
      !text::take_u64(text, record.usec) || !take_char(text, ',')) {
    return std::nullopt;
  }
  record.priority = static_cast<int>(priority);
  // The flags, and any fields a later kernel adds, end at the first ';'.
  size_t semicolon = text.find(';');
  if (semicolon == std::string_view::npos) return std::nullopt;
  text.remove_prefix(semicolon + 1);
  // Dictionary lines (" SUBSYSTEM=...") follow the message after its newline.
  record.message = text.substr(0, text.find('\n'));
  return record;
}

std::optional<OomKillContext> parse_oom_kill_context(std::string_view message) {
  constexpr std::string_view kPrefix = "oom-kill:";
  if (!message.starts_with(kPrefix)) return std::nullopt;
  message.remove_prefix(kPrefix.size());
  OomKillContext context;
  bool has_pid = false;
  while (!message.empty()) {
    size_t comma = message.find(',');
    std::string_view field = message.substr(0, comma);
    message.remove_prefix(comma == std::string_view::npos ? message.size() : comma + 1);
    size_t equals = field.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view key = field.substr(0, equals);
    std::string_view value = field.substr(equals + 1);
    if (key == "constraint") {
      context.memcg = value == "CONSTRAINT_MEMCG";
    } else if (key == "oom_memcg") {
      context.oom_memcg = std::string(value);
    } else if (key == "task_memcg") {
      context.task_memcg = std::string(value);
    } else if (key == "task") {
      context.task = std::string(value);
    } else if (key == "pid") {
      std::optional<uint64_t> pid = text::parse_u64(value);
      std::optional<int> checked = pid ? as_pid(*pid) : std::nullopt;
      if (!checked) return std::nullopt;
      context.pid = *checked;
      has_pid = true;
    }
  }
  if (!has_pid) return std::nullopt;
  return context;
}

std::optional<OomKilledProcess> parse_oom_killed_process(std::string_view message) {
  constexpr std::string_view kKilled = "Killed process ";
  size_t at = message.find(kKilled);
  // At the start (older kernels), or after the reason's "...: ".
  if (at == std::string_view::npos || (at != 0 && !message.substr(0, at).ends_with(": "))) {
    return std::nullopt;
  }
  OomKilledProcess killed;
  killed.memcg = message.substr(0, at).starts_with("Memory cgroup out of memory");
  std::string_view rest = message.substr(at + kKilled.size());
  uint64_t pid = 0;
  if (!text::take_u64(rest, pid) || !as_pid(pid) || !rest.starts_with(" (")) return std::nullopt;
  killed.pid = static_cast<int>(pid);
  rest.remove_prefix(2);
  // A comm may hold ") " itself: it ends at the last ')' before the sizes.
  size_t sizes = rest.find(" total-vm:");
  std::string_view named = rest.substr(0, sizes);
  size_t close = named.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  killed.comm = std::string(named.substr(0, close));
  if (sizes != std::string_view::npos) {
    std::string_view fields = rest.substr(sizes + 1);
    killed.total_vm = kb_field(fields, "total-vm:");
    killed.anon_rss = kb_field(fields, "anon-rss:");
    killed.file_rss = kb_field(fields, "file-rss:");
    killed.shmem_rss = kb_field(fields, "shmem-rss:");
  }
  return killed;
}

}  // namespace traindoc::supervisor
