// Parsers of per-process /proc texts (stat, status, smaps_rollup, limits, a thread's syscall) and
// /proc/meminfo.
// Supervisor process, sampler thread. Pure: text in, structs out, no I/O.
#include "supervisor/proc/proc_text.h"

#include <sys/syscall.h>

#include <charconv>
#include <climits>
#include <vector>

#include "supervisor/proc/text_scan.h"

namespace traindoc::supervisor {
namespace {

bool take_int(std::string_view& text, int& value) {
  int64_t wide = 0;
  if (!text::take_i64(text, wide) || wide < INT_MIN || wide > INT_MAX) return false;
  value = static_cast<int>(wide);
  return true;
}

// Fields after the comm are separated by exactly one space; anything else is malformed.
bool skip_space(std::string_view& text) {
  if (text.empty() || text.front() != ' ') return false;
  text.remove_prefix(1);
  return true;
}

bool skip_field(std::string_view& text) {
  if (!skip_space(text)) return false;
  size_t end = 0;
  while (end < text.size() && text[end] != ' ' && text[end] != '\n') ++end;
  if (end == 0) return false;
  text.remove_prefix(end);
  return true;
}

bool skip_fields(std::string_view& text, int count) {
  for (int i = 0; i < count; ++i) {
    if (!skip_field(text)) return false;
  }
  return true;
}

bool field_u64(std::string_view& text, uint64_t& value) {
  return skip_space(text) && text::take_u64(text, value);
}

bool field_int(std::string_view& text, int& value) {
  return skip_space(text) && take_int(text, value);
}

}  // namespace

std::optional<int> parse_pid_name(std::string_view name) {
  std::optional<uint64_t> value = text::parse_u64(name);
  if (!value || *value == 0 || *value > INT_MAX) return std::nullopt;
  return static_cast<int>(*value);
}

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  ProcStat stat;
  std::string_view head = text;
  if (!take_int(head, stat.pid) || head.size() < 2 || head[0] != ' ' || head[1] != '(') {
    return std::nullopt;
  }
  // The comm is whatever the process named itself, ')' and spaces included; the kernel never
  // escapes it, so only the last ')' reliably ends it.
  size_t open = text.size() - head.size() + 2;
  size_t close = text.rfind(')');
  if (close == std::string_view::npos || close < open) return std::nullopt;
  stat.comm.assign(text.substr(open, close - open));

  std::string_view rest = text.substr(close + 1);
  if (rest.size() < 2 || rest[0] != ' ') return std::nullopt;
  stat.state = rest[1];
  rest.remove_prefix(2);
  int ignored_int = 0;
  int64_t num_threads = 0;
  // Fields 4..24: ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  // cutime cstime priority nice num_threads itrealvalue starttime vsize rss.
  if (!field_int(rest, stat.ppid) || !field_int(rest, stat.pgrp) ||
      !field_int(rest, stat.session) || !field_int(rest, ignored_int) ||
      !field_int(rest, ignored_int) || !skip_fields(rest, 5) || !field_u64(rest, stat.utime) ||
      !field_u64(rest, stat.stime) || !skip_fields(rest, 4) || !skip_space(rest) ||
      !text::take_i64(rest, num_threads) || num_threads < 0 || num_threads > INT_MAX ||
      !skip_fields(rest, 1) || !field_u64(rest, stat.starttime) || !skip_fields(rest, 1) ||
      !field_u64(rest, stat.rss_pages)) {
    return std::nullopt;
  }
  stat.num_threads = static_cast<int>(num_threads);
  // Fields 25..27 (rsslim startcode endcode), startstack, 29..51, then the exit code; kernels
  // before 3.5 stop before it.
  int exit_code = 0;
  std::string_view tail = rest;
  if (!skip_fields(tail, 3) || !field_u64(tail, stat.start_stack)) return stat;
  if (skip_fields(tail, 23) && field_int(tail, exit_code)) stat.exit_code = exit_code;
  return stat;
}

ProcStatus parse_proc_status(std::string_view text) {
  ProcStatus status;
  std::string_view line;
  std::string_view key;
  std::string_view value;
  while (text::next_line(text, line)) {
    if (!text::split_key(line, key, value)) continue;
    if (key == "VmRSS") {
      status.vm_rss = text::parse_kb_value(value);
    } else if (key == "VmSwap") {
      status.vm_swap = text::parse_kb_value(value);
    } else if (key == "RssAnon") {
      status.rss_anon = text::parse_kb_value(value);
    } else if (key == "RssFile") {
      status.rss_file = text::parse_kb_value(value);
    } else if (key == "RssShmem") {
      status.rss_shmem = text::parse_kb_value(value);
    } else if (key == "VmHWM") {
      status.vm_hwm = text::parse_kb_value(value);
    } else if (key == "SigCgt") {
      std::string_view hex = text::trim(value);
      uint64_t mask = 0;
      auto [end, error] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
      if (error == std::errc() && end == hex.data() + hex.size() && !hex.empty()) {
        status.caught_signals = mask;
      }
    } else if (key == "Threads") {
      std::optional<uint64_t> threads = text::parse_u64(value);
      if (threads && *threads <= INT_MAX) status.threads = static_cast<int>(*threads);
    }
  }
  return status;
}

SmapsRollup parse_smaps_rollup(std::string_view text) {
  SmapsRollup rollup;
  std::string_view line;
  std::string_view key;
  std::string_view value;
  while (text::next_line(text, line)) {
    // The first line is the address range "... [rollup]": it has no "Key:" form we know.
    if (!text::split_key(line, key, value)) continue;
    if (key == "Rss") {
      rollup.rss = text::parse_kb_value(value);
    } else if (key == "Pss") {
      rollup.pss = text::parse_kb_value(value);
    } else if (key == "Private_Clean") {
      rollup.private_clean = text::parse_kb_value(value);
    } else if (key == "Private_Dirty") {
      rollup.private_dirty = text::parse_kb_value(value);
    } else if (key == "Swap") {
      rollup.swap = text::parse_kb_value(value);
    } else if (key == "SwapPss") {
      rollup.swap_pss = text::parse_kb_value(value);
    }
  }
  return rollup;
}

ProcLimits parse_proc_limits(std::string_view text) {
  constexpr std::string_view kOpenFiles = "Max open files";
  ProcLimits limits;
  std::string_view line;
  while (text::next_line(text, line)) {
    if (line.substr(0, kOpenFiles.size()) != kOpenFiles) continue;
    std::string_view rest = line.substr(kOpenFiles.size());
    std::string_view word;
    auto limit_value = [](std::string_view w) -> std::optional<uint64_t> {
      if (w == "unlimited") return kUnlimited;
      return text::parse_u64(w);
    };
    if (text::next_word(rest, word)) limits.open_files_soft = limit_value(word);
    if (text::next_word(rest, word)) limits.open_files_hard = limit_value(word);
    break;
  }
  return limits;
}

MemInfo parse_meminfo(std::string_view text) {
  MemInfo info;
  std::string_view line;
  std::string_view key;
  std::string_view value;
  while (text::next_line(text, line)) {
    if (!text::split_key(line, key, value)) continue;
    if (key == "MemTotal") {
      info.mem_total = text::parse_kb_value(value);
    } else if (key == "MemAvailable") {
      info.mem_available = text::parse_kb_value(value);
    } else if (key == "SwapTotal") {
      info.swap_total = text::parse_kb_value(value);
    } else if (key == "SwapFree") {
      info.swap_free = text::parse_kb_value(value);
    }
  }
  return info;
}

bool ThreadSyscall::waits_on_stdin() const {
  if (number == SYS_read) return arg0 == 0;
#ifdef SYS_select
  if (number == SYS_select) return arg0 == 1;
#endif
  return number == SYS_pselect6 && arg0 == 1;
}

const char* ThreadSyscall::cut_short_by_signal() const {
  struct Call {
    long number;
    const char* name;
  };
  static constexpr Call kCalls[] = {
#ifdef SYS_poll
      {SYS_poll, "poll"},
#endif
#ifdef SYS_select
      {SYS_select, "select"},
#endif
#ifdef SYS_epoll_wait
      {SYS_epoll_wait, "epoll_wait"},
#endif
#ifdef SYS_pause
      {SYS_pause, "pause"},
#endif
#ifdef SYS_epoll_pwait2
      {SYS_epoll_pwait2, "epoll_pwait2"},
#endif
#ifdef SYS_io_pgetevents
      {SYS_io_pgetevents, "io_pgetevents"},
#endif
      {SYS_ppoll, "ppoll"},
      {SYS_pselect6, "pselect6"},
      {SYS_epoll_pwait, "epoll_pwait"},
      {SYS_nanosleep, "nanosleep"},
      {SYS_clock_nanosleep, "clock_nanosleep"},
      {SYS_rt_sigsuspend, "rt_sigsuspend"},
      {SYS_rt_sigtimedwait, "rt_sigtimedwait"},
      {SYS_io_getevents, "io_getevents"},
      {SYS_semop, "semop"},
      {SYS_semtimedop, "semtimedop"},
      {SYS_msgrcv, "msgrcv"},
      {SYS_msgsnd, "msgsnd"},
      {SYS_connect, "connect"},
      {SYS_accept, "accept"},
      {SYS_accept4, "accept4"},
      {SYS_recvfrom, "recvfrom"},
      {SYS_recvmsg, "recvmsg"},
      {SYS_recvmmsg, "recvmmsg"},
      {SYS_sendto, "sendto"},
      {SYS_sendmsg, "sendmsg"},
      {SYS_sendmmsg, "sendmmsg"},
  };
  for (const Call& call : kCalls) {
    if (call.number == number) return call.name;
  }
  return nullptr;
}

std::optional<ThreadSyscall> parse_thread_syscall(std::string_view text) {
  text = text::trim(text);
  if (text == "running") return ThreadSyscall{};
  int64_t number = 0;
  if (!text::take_i64(text, number)) return std::nullopt;
  ThreadSyscall call{static_cast<long>(number), 0};
  // " 0x1f" each: the arguments (none outside a call), then the stack pointer and the pc.
  std::vector<uint64_t> values;
  while (text.starts_with(" 0x")) {
    text.remove_prefix(3);
    uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    values.push_back(value);
    text.remove_prefix(static_cast<size_t>(end - text.data()));
  }
  if (!text.empty() || values.size() < (number < 0 ? 2u : 3u)) return std::nullopt;
  if (number >= 0) call.arg0 = values.front();
  call.sp = values[values.size() - 2];
  call.pc = values.back();
  return call;
}

}  // namespace traindoc::supervisor
