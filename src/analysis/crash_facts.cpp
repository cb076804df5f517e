// Crash classification. Pure.
// The fault is read from the signal, si_code and the fault address against the memory map, as
// Android's debuggerd does, plus what a training job adds: /dev/shm mappings, stderr messages.
#include "analysis/crash_facts.h"

#include <signal.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "analysis/file_name.h"
#include "analysis/process_texts.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

constexpr uint64_t kNullPage = uint64_t{64} * 1024;  // faults below this are null pointer + offset
constexpr uint64_t kGuardReach =
    uint64_t{1024} * 1024;  // how far below a stack a fault is an overflow
constexpr int64_t kMessageBeforeNs = int64_t{5'000'000'000};
constexpr int64_t kMessageAfterNs = 2'000'000'000;

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, value);
  return text;
}

// The modules a crash is rarely the fault of: the C and C++ runtimes, the loader, the Python
// interpreter and traindoc's agent. Prefixes end at "." or "-", so libdlib or a python_example
// extension still count as user code.
bool is_runtime_module(std::string_view module) {
  constexpr std::string_view kDeleted = " (deleted)";
  if (module.ends_with(kDeleted)) module.remove_suffix(kDeleted.size());
  std::string_view name = module.substr(module.rfind('/') + 1);
  static constexpr std::string_view kPrefixes[] = {
      "libc.so",    "libc-",       "libm.so",     "libm-",
      "libmvec.so", "libpthread.", "libpthread-", "libdl.so",
      "libdl-",     "librt.so",    "librt-",      "ld-",
      "ld64.so",    "libstdc++.",  "libgcc_s.",   "libtraindoc_agent."};
  for (std::string_view prefix : kPrefixes) {
    if (name.starts_with(prefix)) return true;
  }
  // The interpreter: python3.11, libpython3.11.so.1.0, python3.12d ...
  for (std::string_view interpreter : {std::string_view("libpython"), std::string_view("python")}) {
    if (!name.starts_with(interpreter)) continue;
    std::string_view version = name.substr(interpreter.size());
    version = version.substr(0, version.find(".so"));
    if (version.find_first_not_of("0123456789.dmu") == std::string_view::npos) return true;
  }
  return false;
}

// The stderr lines printed around the crash that explain an abort: uncaught C++ exceptions,
// glibc's heap checks, failed assertions.
// Lines that a launcher prefixed with another rank's number are not this process's.
std::vector<const store::LogLine*> abort_messages(const store::Crash& crash,
                                                  const store::Evidence& evidence,
                                                  const ProcessSummary* process) {
  std::vector<const store::LogLine*> out;
  for (const store::LogLine& line : evidence.log_lines) {
    if (!is_error_stream(evidence, line.stream) ||
        line.t_ns < store::shifted_ns(crash.time_ns, -kMessageBeforeNs) ||
        line.t_ns > store::shifted_ns(crash.time_ns, kMessageAfterNs)) {
      continue;
    }
    std::optional<int> prefix_rank = strip_launcher_prefix(line.text).rank;
    if (prefix_rank && process != nullptr && prefix_rank != process->role.local_rank &&
        prefix_rank != process->role.rank) {
      continue;
    }
    const std::string& t = line.text;
    if (t.find("terminate called") != std::string::npos || t.find("what():") != std::string::npos ||
        t.find("Assertion") != std::string::npos || t.find("(): ") != std::string::npos ||
        t.find("double free") != std::string::npos || t.find("corrupted") != std::string::npos) {
      out.push_back(&line);
    }
  }
  return out;
}

const store::HostSample* host_at(const store::Evidence& evidence, int64_t t_ns) {
  const store::HostSample* best = nullptr;
  for (const store::HostSample& sample : evidence.host_samples) {
    if (best == nullptr ||
        store::distance_ns(sample.t_ns, t_ns) < store::distance_ns(best->t_ns, t_ns)) {
      best = &sample;
    }
  }
  return best;
}

std::string cpu_flags(const store::Evidence& evidence) {
  for (const store::Event& event : evidence.events) {
    if (event.kind == store::EventKind::kHostCpu) return " " + event.text + " ";
  }
  return "";
}

void classify_segv(const store::Crash& crash, const std::vector<store::MemoryMapping>& maps,
                   CrashFacts& facts) {
  const store::MemoryMapping* target = store::find_mapping(maps, crash.fault_addr);
  bool near_stack =
      (crash.stack_lo != 0 && crash.fault_addr < crash.stack_lo + 4096 &&
       crash.fault_addr + kGuardReach >= crash.stack_lo) ||
      (crash.sp != 0 && crash.fault_addr <= crash.sp && crash.sp - crash.fault_addr < 65536 &&
       (target == nullptr || target->perms.starts_with("---")));
  if (near_stack) {
    facts.kind = FindingKind::kStackOverflow;
    facts.what = "stack overflow: the thread ran past the end of its stack (fault at " +
                 hex(crash.fault_addr) + ", stack pointer " + hex(crash.sp) + ")";
    facts.fix =
        "Look for unbounded recursion in the blame frame. If the depth is legitimate, give the "
        "thread a larger stack (ulimit -s for the main thread, threading.stack_size() or "
        "pthread_attr_setstacksize for others).";
    return;
  }
  facts.kind = FindingKind::kNativeCrash;
  if (crash.code == SI_KERNEL) {
    // x86-64 reports a non-canonical pointer as a general protection fault, without an address.
    facts.what =
        "general protection fault: a non-canonical or otherwise invalid pointer (the kernel "
        "reports no address)";
    facts.fix =
        "Use after free, a poisoned or uninitialised pointer, or memory corruption. Rerun under "
        "AddressSanitizer or valgrind to find the first bad access.";
  } else if (crash.fault_addr < kNullPage) {
    facts.what = "null pointer dereference (address " + hex(crash.fault_addr) + ")";
    facts.fix =
        "A pointer that was never set, or a failed allocation or lookup whose NULL result was "
        "used. Check the blame frame's pointers; run once with num_workers=0 and under gdb or "
        "with PYTHONFAULTHANDLER=1 to see it again.";
  } else if (crash.code == SEGV_ACCERR && target != nullptr) {
    facts.what = "write to read-only or non-executable memory at " + hex(crash.fault_addr) + " (" +
                 target->perms + " " + (target->path.empty() ? "anonymous" : target->path) + ")";
    facts.fix =
        "A write through a pointer to constant data (a string literal, a read-only mapping) or "
        "a jump to data. Check the blame frame.";
  } else {
    facts.what = "wild pointer: address " + hex(crash.fault_addr) + " is not mapped";
    facts.fix =
        "Use after free, an out-of-bounds index or memory corruption. Rerun under "
        "AddressSanitizer or valgrind to find the first bad access.";
  }
}

void classify_bus(const store::Crash& crash, const std::vector<store::MemoryMapping>& maps,
                  const store::Evidence& evidence, CrashFacts& facts) {
  const store::MemoryMapping* target = store::find_mapping(maps, crash.fault_addr);
  std::string path = target != nullptr ? target->path : "";
  if (path.starts_with("/dev/shm/")) {
    facts.kind = FindingKind::kShmExhausted;
    facts.what = "bus error in shared memory " + path + ": /dev/shm is full";
    if (const store::HostSample* host = host_at(evidence, crash.time_ns);
        host != nullptr && host->shm_total) {
      facts.evidence.push_back(
          "/dev/shm at that time: " + format_bytes(host->shm_used.value_or(0)) + " used of " +
          format_bytes(*host->shm_total));
    }
    facts.fix =
        "DataLoader workers pass batches through /dev/shm. Give the container more: docker run "
        "--shm-size=8g (or --ipc=host); or lower batch size, num_workers or prefetch_factor; "
        "remove stale /dev/shm/torch_* files.";
  } else if (!path.empty() && !path.starts_with("[")) {
    facts.kind = FindingKind::kBusError;
    facts.what = "bus error reading the memory-mapped file " + path +
                 ": the file is shorter than its mapping (truncated or rewritten while in use)";
    facts.fix =
        "Do not truncate or overwrite a file another process has mapped (a dataset or checkpoint "
        "being rewritten); write to a new file and rename it into place.";
  } else {
    facts.kind = FindingKind::kBusError;
    facts.what =
        "bus error at " + hex(crash.fault_addr) +
        (crash.code == BUS_ADRALN ? " (misaligned access)" : " (hardware or mapping fault)");
    facts.fix = "Check the blame frame; if it recurs on one machine only, check its memory.";
  }
}

void classify_ill(const store::Crash& crash, const store::Evidence& evidence, CrashFacts& facts) {
  facts.kind = FindingKind::kIllegalInstruction;
  const std::string& code = crash.code_bytes;
  std::string flags = cpu_flags(evidence);
  if (code.starts_with("0f0b")) {
    facts.what =
        "a trap instruction (ud2): code that must never run was reached (__builtin_trap, "
        "unreachable(), or a failed check compiled as a trap)";
    facts.fix = "Find the check at the blame frame; a debug build prints its message.";
    return;
  }
  std::string needs;
  if (code.starts_with("62")) needs = "avx512f";
  if (code.starts_with("c4") || code.starts_with("c5")) needs = "avx";
  facts.what = "illegal instruction" + (code.empty() ? "" : " (bytes " + code.substr(0, 16) + ")");
  if (!needs.empty() && !flags.empty() && flags.find(" " + needs + " ") == std::string::npos) {
    facts.what += ": an " + needs + " instruction, which this CPU lacks";
  }
  facts.fix =
      "The binary was built for a newer CPU than this one (AVX2/AVX-512 wheels on an old node, "
      "-march=native builds copied between machines). Install a build for this CPU or rebuild "
      "without -march=native.";
}

void classify_abort(const store::Crash& crash, const store::Evidence& evidence,
                    const ProcessSummary* process, CrashFacts& facts) {
  facts.kind = FindingKind::kAbort;
  std::vector<const store::LogLine*> messages = abort_messages(crash, evidence, process);
  std::string said;
  for (const store::LogLine* line : messages) {
    said += (said.empty() ? "" : " / ") + line->text;
    std::vector<SignatureMatch> found = match_line(line->text);
    facts.message_signatures.insert(facts.message_signatures.end(), found.begin(), found.end());
    facts.evidence.push_back("stderr line " + std::to_string(line->number) + ": " + line->text);
  }
  if (said.find("terminate called") != std::string::npos ||
      said.find("what():") != std::string::npos) {
    facts.what = "uncaught C++ exception: " + said;
    facts.fix =
        "An exception escaped native code (often a framework error raised on a background "
        "thread). Its message above says what failed; catch it or fix its cause.";
  } else if (said.find("Assertion") != std::string::npos) {
    facts.what = "assertion failed: " + said;
    facts.fix = "The assertion states the broken assumption; fix the caller that violates it.";
  } else if (!said.empty()) {
    facts.what = "glibc detected heap corruption: " + said;
    facts.fix =
        "Memory was freed twice or written out of bounds earlier; the abort is where glibc "
        "noticed. Rerun under AddressSanitizer or valgrind to find the first bad write.";
  } else {
    facts.what = "abort() called (no message found on stderr)";
    facts.fix = "Check the blame frame and the process's last output in logs/stderr.log.";
  }
}

}  // namespace

int blame_frame(const std::vector<store::NativeFrame>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string& module = frames[i].module;
    if (module.empty() || module[0] == '[' || is_runtime_module(module)) continue;
    return static_cast<int>(i);
  }
  return -1;
}

std::string describe_frame(const store::NativeFrame& frame) {
  std::string module =
      frame.module.empty() ? hex(frame.address) : std::string(file_name(frame.module));
  if (frame.function.empty()) return module + "+" + hex(frame.module_offset);
  std::string out = frame.function + " (" + module + ")";
  if (!frame.file.empty())
    out += " at " + std::string(file_name(frame.file)) + ":" + std::to_string(frame.line);
  return out;
}

std::string innermost_python_frame(const std::string& traceback, bool user_code) {
  // Only the crashing thread's block counts: "Current thread ...", or "Stack ..." when the
  // dump came from a thread CPython does not know. Another thread's line would mislead.
  size_t from = traceback.find("Current thread");
  if (from == std::string::npos) from = traceback.find("Stack (most recent call first)");
  if (from == std::string::npos) return "";
  std::string_view block(traceback);
  block = block.substr(from, block.find("\n\n", from) - from);
  // Innermost first, one `  File "x.py", line 12 in f` per line.
  for (size_t file = block.find("File \""); file != std::string_view::npos;
       file = block.find("File \"", file + 1)) {
    size_t end = block.find('\n', file);
    std::string_view line =
        block.substr(file, end == std::string_view::npos ? std::string_view::npos : end - file);
    std::string_view path = line.substr(6, line.find('"', 6) - 6);
    if (!user_code || !is_library_file(path)) return std::string(line);
  }
  return "";
}

CrashFacts classify_crash(const store::Crash& crash, const RuleContext& context) {
  CrashFacts facts;
  std::vector<store::MemoryMapping> maps = store::parse_maps(crash.maps);
  switch (crash.signo) {
    case SIGSEGV:
      classify_segv(crash, maps, facts);
      break;
    case SIGBUS:
      classify_bus(crash, maps, context.evidence, facts);
      break;
    case SIGILL:
      classify_ill(crash, context.evidence, facts);
      break;
    case SIGABRT:
      classify_abort(crash, context.evidence, context.process(crash.pid, crash.start_ticks), facts);
      break;
    case SIGFPE:
      facts.kind = FindingKind::kFpe;
      facts.what = crash.code == FPE_INTDIV   ? "integer division by zero"
                   : crash.code == FPE_INTOVF ? "integer overflow (INT_MIN / -1)"
                                              : "arithmetic exception";
      facts.fix = "Guard the divisor in the blame frame (an empty batch or a zero count).";
      break;
    default:
      facts.kind = FindingKind::kNativeCrash;
      facts.what = "fatal signal " + std::to_string(crash.signo);
      facts.fix = "Check the blame frame.";
  }
  // A signal sent by another process is not a fault of this one's code.
  bool self_abort = crash.signo == SIGABRT && crash.sender_pid == crash.pid;
  if (crash.code <= 0 && crash.code != SI_KERNEL && crash.sender_pid > 0 && !self_abort) {
    facts.what = "signal sent by process " + std::to_string(crash.sender_pid) + ", not a fault";
  }
  facts.blame = blame_frame(crash.frames);
  facts.python_line = innermost_python_frame(crash.python_traceback, false);
  facts.user_line = innermost_python_frame(crash.python_traceback, true);
  return facts;
}

std::string crash_words(const store::Crash& crash, const CrashFacts& facts) {
  return "died of " + signal_name(crash.signo) + ": " + facts.what;
}

std::string crash_words(const store::Crash& crash) {
  store::Evidence evidence;
  evidence.crashes.push_back(crash);
  std::vector<ProcessSummary> processes;
  ProcessTexts texts(evidence, processes);
  return crash_words(crash, classify_crash(crash, {evidence, processes, texts}));
}

}  // namespace traindoc::analysis
