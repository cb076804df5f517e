// Stack dump texts. Supervisor process, main loop thread.
#include "supervisor/stack_dump_text.h"

#include <charconv>

namespace traindoc::supervisor {
namespace {

// The number at the start of `text` in `base`, after `prefix`; nullopt without one.
std::optional<uint64_t> number_after(std::string_view text, std::string_view prefix, int base) {
  if (!text.starts_with(prefix)) return std::nullopt;
  text.remove_prefix(prefix.size());
  if (base == 16 && text.starts_with("0x")) text.remove_prefix(2);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end == text.data()) return std::nullopt;
  return value;
}

// The line of `text` that starts at `at`, without its newline, and where the next one starts.
std::string_view line_at(std::string_view text, size_t& at) {
  size_t end = text.find('\n', at);
  if (end == std::string_view::npos) end = text.size();
  std::string_view line = text.substr(at, end - at);
  at = end + 1;
  return line;
}

// The Python stacks with the main thread's marked "Current thread", as when it takes the request
// itself, where CPython marked another thread (or none: the thread that took it runs no Python).
std::string mark_main_thread(std::string_view python, uint64_t main_thread) {
  static constexpr std::string_view kCurrent = "Current thread 0x";
  static constexpr std::string_view kOther = "Thread 0x";
  std::string out;
  out.reserve(python.size() + 8);
  size_t at = 0;
  while (at < python.size()) {
    size_t start = at;
    std::string_view line = line_at(python, at);
    bool current = line.starts_with(kCurrent);
    if (current || line.starts_with(kOther)) {
      std::string_view prefix = current ? kCurrent : kOther;
      bool main = number_after(line, prefix.substr(0, prefix.size() - 2), 16) == main_thread;
      out += main ? kCurrent : kOther;
      start += prefix.size();
    }
    out += python.substr(start, std::min(at, python.size()) - start);
  }
  return out;
}

}  // namespace

std::optional<StackDumpText> parse_stack_dump(std::string_view text, int pid) {
  if (text.size() > kStackDumpMaxBytes || !text.ends_with("\nend\n")) return std::nullopt;
  size_t python = text.find("python:\n");
  size_t native = text.find("native:\n", python == std::string_view::npos ? 0 : python);
  if (python == std::string_view::npos || native == std::string_view::npos) return std::nullopt;
  StackDumpText out;
  out.python = std::string(text.substr(python, native - python));
  // "thread: <tid>\nmain thread: 0x<id>\n" come before "python:".
  size_t at = 0;
  std::optional<uint64_t> tid = number_after(line_at(text, at), "thread: ", 10);
  std::optional<uint64_t> main_thread = number_after(line_at(text, at), "main thread: ", 16);
  if (tid && main_thread && *tid != static_cast<uint64_t>(pid)) {
    out.python = mark_main_thread(out.python, *main_thread);
    out.other_thread = true;
    return out;
  }
  at = native + 8;
  while (at < text.size() && out.native.size() < kStackDumpMaxFrames) {
    std::string_view line = line_at(text, at);
    if (line == "end") break;
    out.native.push_back(number_after(line, "", 16).value_or(0));
  }
  return out;
}

}  // namespace traindoc::supervisor
