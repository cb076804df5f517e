// Tests of the agent's crash capture from outside, as the supervisor sees it: every crasher of
// tests/crashers (and CPython) runs without and with LD_PRELOAD=<agent>, while a thread of the
// test plays the supervisor (reads the crash record and /proc/<pid>/maps, then releases the
// process). The death must be the same either way, and the record must describe the crash.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/layout.h"
#include "supervisor/agent_reader.h"

extern char** environ;

namespace traindoc::agent {
namespace {

using common::CrashState;
using common::Slot;
using Clock = std::chrono::steady_clock;

constexpr auto kRunLimit = std::chrono::seconds(20);

std::string crasher(const std::string& name) {
  return std::string(TRAINDOC_CRASHERS_DIR) + "/" + name;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// What the test keeps of a crash record (the record itself holds an atomic: not copyable).
struct Crash {
  uint32_t slot = 0;
  int pid = 0;
  uint32_t state = 0;
  int signo = 0;
  int code = 0;
  int tid = 0;
  uint64_t fault_addr = 0;
  int64_t time_ns = 0;
  int sender_pid = 0;
  uint32_t python_dumped = 0;
  std::string thread_name;
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t fp = 0;
  uint64_t stack_lo = 0;
  uint64_t stack_hi = 0;
  uint64_t rip = 0;  // gregs[REG_RIP] on x86-64
  uint32_t other_crashes = 0;
  std::vector<uint64_t> frames;
  std::string maps;  // /proc/<pid>/maps while the process waited; empty when not read
};

Crash copy_crash(const Slot& slot, uint32_t index) {
  const common::CrashRecord& r = slot.crash;
  Crash c;
  c.slot = index;
  c.pid = slot.pid;
  c.state = r.state.load(std::memory_order_acquire);
  c.signo = r.signo;
  c.code = r.code;
  c.tid = r.tid;
  c.fault_addr = r.fault_addr;
  c.time_ns = r.time_ns;
  c.sender_pid = r.sender_pid;
  c.python_dumped = r.python_dumped;
  c.thread_name.assign(r.thread_name, strnlen(r.thread_name, sizeof(r.thread_name)));
  c.pc = r.pc;
  c.sp = r.sp;
  c.fp = r.fp;
  c.stack_lo = r.stack_lo;
  c.stack_hi = r.stack_hi;
#if defined(__x86_64__)
  c.rip = r.gregs[REG_RIP];
#endif
  c.other_crashes = r.other_crashes;
  uint32_t count = std::min(r.frame_count, common::kCrashFrames);
  c.frames.assign(r.frames, r.frames + count);
  return c;
}

// A run folder with the slots file, mapped as the supervisor maps it.
class RunDir {
 public:
  RunDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "agent-crash-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp");
    m_path = pattern;
    m_reader.emplace(m_path);
    std::string file = m_path + "/" + common::kAgentFileName;
    int fd = open(file.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + file);
    m_base = mmap(nullptr, common::agent_file_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m_base == MAP_FAILED) throw std::runtime_error("cannot map " + file);
  }
  ~RunDir() {
    munmap(m_base, common::agent_file_size());
    m_reader.reset();
    std::filesystem::remove_all(m_path);
  }
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  const std::string& path() const { return m_path; }
  supervisor::AgentReader& reader() { return *m_reader; }

  uint32_t claimed() const {
    auto* header = static_cast<const common::AgentHeader*>(m_base);
    return std::min(header->slots_claimed.load(std::memory_order_acquire), common::kSlotCount);
  }
  Slot* slot(uint32_t index) const { return common::slot_at(m_base, index); }

  // Every slot whose crash record was written (whether or not anyone released it).
  std::vector<Crash> crashes() const {
    std::vector<Crash> out;
    for (uint32_t i = 0; i < claimed(); ++i) {
      if (slot(i)->crash.state.load(std::memory_order_acquire) >=
          static_cast<uint32_t>(CrashState::kWritten)) {
        out.push_back(copy_crash(*slot(i), i));
      }
    }
    return out;
  }

 private:
  std::string m_path;
  std::optional<supervisor::AgentReader> m_reader;
  void* m_base = nullptr;
};

// Plays the supervisor: when a record becomes complete, copies it with the process's maps,
// then sets kReleased and wakes the process's futex.
class FakeSupervisor {
 public:
  explicit FakeSupervisor(RunDir& run) : m_run(run), m_thread([this] { loop(); }) {}
  ~FakeSupervisor() { stop(); }
  FakeSupervisor(const FakeSupervisor&) = delete;
  FakeSupervisor& operator=(const FakeSupervisor&) = delete;

  void stop() {
    m_stop.store(true);
    if (m_thread.joinable()) m_thread.join();
  }
  std::vector<Crash> seen() {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_seen;
  }

 private:
  void loop() {
    while (!m_stop.load()) {
      for (uint32_t i = 0; i < m_run.claimed(); ++i) {
        Slot* slot = m_run.slot(i);
        if (slot->crash.state.load(std::memory_order_acquire) !=
            static_cast<uint32_t>(CrashState::kWritten)) {
          continue;
        }
        Crash crash = copy_crash(*slot, i);
        crash.maps = read_text("/proc/" + std::to_string(slot->pid) + "/maps");
        {
          std::lock_guard<std::mutex> lock(m_mutex);
          m_seen.push_back(crash);
        }
        slot->crash.state.store(static_cast<uint32_t>(CrashState::kReleased),
                                std::memory_order_release);
        syscall(SYS_futex, reinterpret_cast<uint32_t*>(&slot->crash.state), FUTEX_WAKE, INT_MAX,
                nullptr, nullptr, 0);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  RunDir& m_run;
  std::atomic<bool> m_stop{false};
  std::mutex m_mutex;
  std::vector<Crash> m_seen;
  std::thread m_thread;
};

struct Outcome {
  pid_t pid = 0;
  int status = 0;
  bool finished = false;  // false: still running at the limit, killed by the test
  double seconds = 0;
  std::string out;
  std::string err;
};

struct RunOptions {
  bool agent = true;            // LD_PRELOAD the agent
  const RunDir* run = nullptr;  // TRAINDOC_RUN_DIR, when set
  rlim_t core_limit = 0;        // RLIMIT_CORE of the child
  std::string cwd;              // where a core file would go; the run folder by default
};

// fork/exec with only async-signal-safe calls in the child; output captured in files.
Outcome run_process(const std::vector<std::string>& argv, const RunOptions& options) {
  std::string scratch = (std::filesystem::temp_directory_path() / "agent-out-XXXXXX").string();
  if (mkdtemp(scratch.data()) == nullptr) throw std::runtime_error("mkdtemp");
  std::string out_path = scratch + "/stdout";
  std::string err_path = scratch + "/stderr";
  std::string cwd = !options.cwd.empty() ? options.cwd
                    : options.run        ? options.run->path()
                                         : scratch;

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    if (entry.rfind("LD_PRELOAD=", 0) == 0 || entry.rfind("TRAINDOC_RUN_DIR=", 0) == 0 ||
        entry.rfind("PYTHONFAULTHANDLER=", 0) == 0) {
      continue;
    }
    env.push_back(entry);
  }
  if (options.agent) env.push_back(std::string("LD_PRELOAD=") + TRAINDOC_AGENT_PATH);
  if (options.run != nullptr) env.push_back("TRAINDOC_RUN_DIR=" + options.run->path());
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  argp.reserve(args.size() + 1);
  for (auto& arg : args) argp.push_back(arg.data());
  argp.push_back(nullptr);

  Outcome outcome;
  auto start = Clock::now();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork");
  if (pid == 0) {
    rlimit core{options.core_limit, options.core_limit};
    setrlimit(RLIMIT_CORE, &core);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0 || chdir(cwd.c_str()) != 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execve(argp[0], argp.data(), envp.data());
    _exit(127);
  }
  outcome.pid = pid;
  for (;;) {
    pid_t done = waitpid(pid, &outcome.status, WNOHANG);
    if (done == pid) {
      outcome.finished = true;
      break;
    }
    if (Clock::now() - start > kRunLimit) {
      kill(pid, SIGKILL);
      waitpid(pid, &outcome.status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  outcome.out = read_text(out_path);
  outcome.err = read_text(err_path);
  std::filesystem::remove_all(scratch);
  return outcome;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("signal ") + std::to_string(WTERMSIG(status)) +
           (WCOREDUMP(status) ? " (core)" : "");
  }
  return "status " + std::to_string(status);
}

// The same death, signal and core flag included.
void expect_same_death(const Outcome& plain, const Outcome& agent) {
  ASSERT_TRUE(plain.finished);
  ASSERT_TRUE(agent.finished) << "hung under the agent";
  EXPECT_EQ(describe(agent.status), describe(plain.status))
      << "without agent: " << plain.err << "\nwith agent: " << agent.err;
}

// A named function of an ELF file: [value, value + size) in its own addresses.
struct ElfFunction {
  bool found = false;
  bool position_independent = false;
  uint64_t value = 0;
  uint64_t size = 0;
};

ElfFunction find_function(const std::string& path, const std::string& name) {
  ElfFunction fn;
  std::string image = read_text(path);
  if (image.size() < sizeof(Elf64_Ehdr)) return fn;
  const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(image.data());
  if (memcmp(ehdr->e_ident, ELFMAG, SELFMAG) != 0 || ehdr->e_ident[EI_CLASS] != ELFCLASS64) {
    return fn;
  }
  fn.position_independent = ehdr->e_type == ET_DYN;
  if (ehdr->e_shoff + size_t{ehdr->e_shnum} * sizeof(Elf64_Shdr) > image.size()) return fn;
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image.data() + ehdr->e_shoff);
  for (int i = 0; i < ehdr->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_SYMTAB) continue;
    const Elf64_Shdr& strings = sections[sections[i].sh_link];
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(image.data() + sections[i].sh_offset);
    size_t count = sections[i].sh_size / sizeof(Elf64_Sym);
    for (size_t s = 0; s < count; ++s) {
      if (symbols[s].st_name >= strings.sh_size) continue;
      const char* symbol_name = image.data() + strings.sh_offset + symbols[s].st_name;
      if (name == symbol_name && ELF64_ST_TYPE(symbols[s].st_info) == STT_FUNC) {
        fn.found = true;
        fn.value = symbols[s].st_value;
        fn.size = symbols[s].st_size;
        return fn;
      }
    }
  }
  return fn;
}

struct Mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string perms;
  std::string path;
};

std::vector<Mapping> parse_maps(const std::string& text) {
  std::vector<Mapping> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    Mapping m;
    char perms[8] = {};
    unsigned long long start = 0;
    unsigned long long end = 0;
    unsigned long long offset = 0;
    int consumed = 0;
    if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
               &consumed) < 4) {
      continue;
    }
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.perms = perms;
    if (consumed > 0 && static_cast<size_t>(consumed) <= line.size())
      m.path = line.substr(consumed);
    out.push_back(m);
  }
  return out;
}

// Where the crashing process saw an ELF file: its load base and executable ranges.
struct Image {
  bool found = false;
  uint64_t base = 0;
  std::vector<std::pair<uint64_t, uint64_t>> text;
  bool executes(uint64_t addr) const {
    for (auto& [lo, hi] : text) {
      if (addr >= lo && addr < hi) return true;
    }
    return false;
  }
};

Image find_image(const std::string& maps, const std::string& path) {
  Image image;
  std::string real = std::filesystem::canonical(path).string();
  for (const Mapping& m : parse_maps(maps)) {
    if (m.path != real) continue;
    if (!image.found || m.start < image.base) image.base = m.start - m.offset;
    image.found = true;
    if (m.perms.find('x') != std::string::npos) image.text.emplace_back(m.start, m.end);
  }
  return image;
}

// How many frames fall in `function` of the executable; frames after the first are return
// addresses, so the call site is one byte before them.
int frames_in_function(const Crash& crash, const std::string& exe, const std::string& function) {
  ElfFunction fn = find_function(exe, function);
  Image image = find_image(crash.maps, exe);
  if (!fn.found || !image.found) return -1;
  uint64_t bias = fn.position_independent ? image.base : 0;
  int hits = 0;
  for (size_t i = 0; i < crash.frames.size(); ++i) {
    uint64_t addr = crash.frames[i] - (i == 0 ? 0 : 1) - bias;
    if (addr >= fn.value && addr < fn.value + fn.size) ++hits;
  }
  return hits;
}

bool pc_in_function(const Crash& crash, const std::string& exe, const std::string& function) {
  ElfFunction fn = find_function(exe, function);
  Image image = find_image(crash.maps, exe);
  if (!fn.found || !image.found) return false;
  uint64_t addr = crash.pc - (fn.position_independent ? image.base : 0);
  return addr >= fn.value && addr < fn.value + fn.size;
}

// One crasher, run without the agent, then with it under a supervisor.
struct CrashRun {
  Outcome plain;
  Outcome agent;
  std::vector<Crash> crashes;  // as the supervisor saw them
  std::vector<supervisor::AgentRecord> records;
};

// The processes were this test's own children, reaped by now: nothing left to vouch by.
bool kOwnChildren(int, int, uint64_t) {
  return true;
}

CrashRun run_both(const std::vector<std::string>& argv, const RunOptions& options = {}) {
  CrashRun result;
  RunDir run;
  RunOptions plain = options;
  plain.agent = false;
  plain.run = nullptr;
  if (plain.cwd.empty()) plain.cwd = run.path();
  result.plain = run_process(argv, plain);
  RunOptions with = options;
  with.agent = true;
  with.run = &run;
  {
    FakeSupervisor supervisor(run);
    result.agent = run_process(argv, with);
    supervisor.stop();
    result.crashes = supervisor.seen();
  }
  result.records = run.reader().poll(kOwnChildren).records;
  return result;
}

// The checks every native crasher shares: same death, one record, pc and a frame in the
// crasher's named function.
void expect_native_crash(const CrashRun& r, const std::string& exe, const std::string& function,
                         int signo) {
  expect_same_death(r.plain, r.agent);
  ASSERT_TRUE(WIFSIGNALED(r.agent.status));
  EXPECT_EQ(WTERMSIG(r.agent.status), signo);
  ASSERT_EQ(r.crashes.size(), 1u) << "stderr: " << r.agent.err;
  const Crash& c = r.crashes[0];
  EXPECT_EQ(c.pid, r.agent.pid);
  EXPECT_EQ(c.signo, signo);
  EXPECT_GT(c.time_ns, 0);
  EXPECT_GE(c.frames.size(), 3u);
  ASSERT_FALSE(c.frames.empty());
  EXPECT_EQ(c.frames[0], c.pc);
#if defined(__x86_64__)
  EXPECT_EQ(c.rip, c.pc);
#endif
  EXPECT_GE(frames_in_function(c, exe, function), 1) << function << " in no frame";
  if (c.stack_lo != 0) {
    EXPECT_LT(c.stack_lo, c.stack_hi);
  }
}

TEST(AgentCrash, NullDereference) {
  std::string exe = crasher("null_deref");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_null_deref_here", SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  const Crash& c = r.crashes[0];
  EXPECT_EQ(c.code, SEGV_MAPERR);
  EXPECT_LT(c.fault_addr, 4096u);
  EXPECT_EQ(c.tid, c.pid);
  EXPECT_EQ(c.thread_name, "null_deref");
  EXPECT_EQ(c.sender_pid, 0);
  EXPECT_EQ(c.python_dumped, 0u);
  EXPECT_TRUE(pc_in_function(c, exe, "traindoc_test_null_deref_here"));
  EXPECT_TRUE(find_image(c.maps, exe).executes(c.pc));
  EXPECT_GE(c.sp, c.stack_lo);
  EXPECT_LT(c.sp, c.stack_hi);
  EXPECT_NE(c.fp, 0u);
  EXPECT_EQ(c.other_crashes, 0u);
}

TEST(AgentCrash, WildWrite) {
  std::string exe = crasher("wild_write");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_wild_write_here", SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, SEGV_MAPERR);
  EXPECT_EQ(r.crashes[0].fault_addr, 0x600000000123u);
  EXPECT_TRUE(pc_in_function(r.crashes[0], exe, "traindoc_test_wild_write_here"));
}

TEST(AgentCrash, StackOverflowOnTheMainThread) {
  std::string exe = crasher("stack_overflow_main");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_recurse_main_here", SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  const Crash& c = r.crashes[0];
  EXPECT_EQ(c.tid, c.pid);
  EXPECT_GE(c.frames.size(), 64u);
  EXPECT_GE(frames_in_function(c, exe, "traindoc_test_recurse_main_here"), 64);
  // The fault lies just below the stack, next to the stack pointer.
  ASSERT_NE(c.stack_lo, 0u);
  EXPECT_LT(c.fault_addr, c.stack_lo);
  EXPECT_LT(c.stack_lo - c.fault_addr, 65536u);
  uint64_t distance = c.sp > c.fault_addr ? c.sp - c.fault_addr : c.fault_addr - c.sp;
  EXPECT_LT(distance, 4096u);
}

TEST(AgentCrash, StackOverflowInAThreadWithA64KiBStack) {
  std::string exe = crasher("stack_overflow_thread");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_recurse_thread_here", SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  const Crash& c = r.crashes[0];
  EXPECT_NE(c.tid, c.pid);
  ASSERT_NE(c.stack_lo, 0u) << "no stack bounds for a thread made by pthread_create";
  EXPECT_LE(c.stack_hi - c.stack_lo, 128u * 1024);
  EXPECT_LT(c.fault_addr, c.stack_lo);
  EXPECT_LT(c.stack_lo - c.fault_addr, 65536u);
  EXPECT_GE(frames_in_function(c, exe, "traindoc_test_recurse_thread_here"), 64);
}

TEST(AgentCrash, UncaughtCppException) {
  std::string exe = crasher("uncaught_exception");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "_Z24traindoc_test_throw_herev", SIGABRT);
  ASSERT_EQ(r.crashes.size(), 1u);
  const Crash& c = r.crashes[0];
  EXPECT_EQ(c.code, SI_TKILL);
  EXPECT_EQ(c.sender_pid, c.pid);
  EXPECT_EQ(c.fault_addr, 0u);
  EXPECT_TRUE(contains(r.plain.err, "shape mismatch in layer 3"));
  EXPECT_TRUE(contains(r.agent.err, "shape mismatch in layer 3"));
}

TEST(AgentCrash, DoubleFreeCaughtByGlibc) {
  std::string exe = crasher("double_free");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_double_free_here", SIGABRT);
  EXPECT_TRUE(contains(r.plain.err, "free(): double free detected in tcache 2"));
  EXPECT_TRUE(contains(r.agent.err, "free(): double free detected in tcache 2"));
}

TEST(AgentCrash, IntegerDivisionByZero) {
  std::string exe = crasher("div_zero");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_divide_here", SIGFPE);
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, FPE_INTDIV);
  EXPECT_EQ(r.crashes[0].fault_addr, r.crashes[0].pc);
  EXPECT_TRUE(pc_in_function(r.crashes[0], exe, "traindoc_test_divide_here"));
}

TEST(AgentCrash, IllegalInstruction) {
  std::string exe = crasher("illegal_instruction");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_illegal_here", SIGILL);
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, ILL_ILLOPN);
  EXPECT_TRUE(pc_in_function(r.crashes[0], exe, "traindoc_test_illegal_here"));
}

TEST(AgentCrash, BusErrorOnATruncatedFileMapping) {
  std::string exe = crasher("bus_error");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_bus_error_here", SIGBUS);
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, BUS_ADRERR);
  EXPECT_NE(r.crashes[0].fault_addr, 0u);
  EXPECT_TRUE(pc_in_function(r.crashes[0], exe, "traindoc_test_bus_error_here"));
}

TEST(AgentCrash, SignalSentByAProcessKeepsItsSender) {
  std::string exe = crasher("sent_signal");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_send_signal_here", SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, SI_USER);
  EXPECT_EQ(r.crashes[0].sender_pid, r.agent.pid);
  EXPECT_EQ(r.crashes[0].fault_addr, 0u);
}

// A program's handlers of stop signals run as without the agent, which notes each delivery: the
// supervisor then passes on no second copy of a signal the process had already.
TEST(AgentCrash, StopSignalsReachTheProgramsHandlersAndAreNoted) {
  CrashRun r = run_both({crasher("stop_handler")});
  expect_same_death(r.plain, r.agent);
  ASSERT_TRUE(WIFSIGNALED(r.agent.status)) << describe(r.agent.status);
  EXPECT_EQ(WTERMSIG(r.agent.status), SIGINT);
  std::vector<std::pair<int64_t, int64_t>> noted;
  for (const auto& record : r.records) {
    if (record.type == common::RecordType::kStopSignal) noted.emplace_back(record.a, record.b);
  }
  // The last SIGINT met the default action: no handler, nothing noted.
  EXPECT_EQ(noted, (std::vector<std::pair<int64_t, int64_t>>{{SIGTERM, r.agent.pid},
                                                             {SIGHUP, r.agent.pid},
                                                             {SIGINT, r.agent.pid},
                                                             {SIGTERM, r.agent.pid}}));
}

TEST(AgentCrash, ASigkillSentIsNotedByItsSender) {
  CrashRun r = run_both({crasher("self_kill")});
  expect_same_death(r.plain, r.agent);
  ASSERT_TRUE(WIFSIGNALED(r.agent.status));
  EXPECT_EQ(WTERMSIG(r.agent.status), SIGKILL);
  bool noted = std::any_of(r.records.begin(), r.records.end(), [&](const auto& record) {
    return record.type == common::RecordType::kKillSent && record.a == r.agent.pid &&
           record.pid == r.agent.pid;
  });
  EXPECT_TRUE(noted);
}

// The unwinder faults on the damaged frame chain: the capture is abandoned, not the crash.
TEST(AgentCrash, FaultWhileUnwindingADamagedStack) {
  std::string exe = crasher("corrupt_frame");
  CrashRun r = run_both({exe});
  expect_same_death(r.plain, r.agent);
  ASSERT_TRUE(WIFSIGNALED(r.agent.status));
  EXPECT_EQ(WTERMSIG(r.agent.status), SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  const Crash& c = r.crashes[0];
  EXPECT_EQ(c.code, SEGV_MAPERR);
  EXPECT_LT(c.fault_addr, 4096u);
  ASSERT_GE(c.frames.size(), 1u);
  EXPECT_EQ(c.frames[0], c.pc);
  EXPECT_TRUE(pc_in_function(c, exe, "traindoc_test_corrupt_frame_here"));
}

TEST(AgentCrash, Breakpoint) {
  std::string exe = crasher("breakpoint");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_breakpoint_here", SIGTRAP);
}

TEST(AgentCrash, TwoThreadsCrashingAtOnceMakeOneRecord) {
  std::string exe = crasher("two_threads");
  for (int round = 0; round < 3; ++round) {
    CrashRun r = run_both({exe});
    expect_native_crash(r, exe, "traindoc_test_thread_crash_here", SIGSEGV);
    ASSERT_EQ(r.crashes.size(), 1u);
    const Crash& c = r.crashes[0];
    EXPECT_NE(c.tid, c.pid);
    EXPECT_LE(c.other_crashes, 1u);
    EXPECT_LT(r.agent.seconds, 5.0);
  }
}

TEST(AgentCrash, ProgramHandlerRunsSecondWithTheOriginalSiginfo) {
  std::string exe = crasher("own_handler");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_own_handler_crash_here", SIGSEGV);
  EXPECT_TRUE(contains(r.plain.err, "own handler ran"));
  EXPECT_TRUE(contains(r.agent.err, "own handler ran"));
  EXPECT_FALSE(contains(r.agent.err, "wrong siginfo")) << r.agent.err;
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, SEGV_MAPERR);  // ours ran first: the fault, not the re-raise
  bool replaced = false;
  for (const auto& record : r.records) {
    if (record.type == common::RecordType::kHandlerReplaced && record.a == SIGSEGV &&
        record.b != 0) {
      replaced = true;
    }
  }
  EXPECT_TRUE(replaced) << "no kHandlerReplaced record";
}

// A handler that escapes by longjmp leaves the signal mask as the kernel would have (no
// asynchronous signal stays blocked by us), and the program goes on to its real crash.
TEST(AgentCrash, HandlerThatEscapesByLongjmp) {
  std::string exe = crasher("probe_then_crash");
  CrashRun r = run_both({exe});
  expect_same_death(r.plain, r.agent);
  EXPECT_TRUE(contains(r.plain.out, "probe recovered")) << r.plain.out;
  EXPECT_EQ(r.agent.out, r.plain.out);
  // The probe takes the one record: a fault the program survived (the supervisor sees the
  // process go on after it).
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].fault_addr, 16u);
}

TEST(AgentCrash, SigDflSetByTheProgramStillCaptured) {
  std::string exe = crasher("sig_dfl");
  CrashRun r = run_both({exe});
  expect_native_crash(r, exe, "traindoc_test_sig_dfl_crash_here", SIGSEGV);
  ASSERT_EQ(r.crashes.size(), 1u);
  EXPECT_EQ(r.crashes[0].code, SEGV_MAPERR);
}

TEST(AgentCrash, CoreDumpFlagKept) {
  std::string exe = crasher("null_deref");
  RunOptions options;
  options.core_limit = RLIM_INFINITY;
  CrashRun r = run_both({exe}, options);
  expect_same_death(r.plain, r.agent);
  EXPECT_EQ(r.crashes.size(), 1u);
  // With core_pattern "core" the kernel dumps into the run folder; a pipe to a collector
  // (systemd-coredump, apport) may or may not dump: then only the sameness is checked.
  if (WCOREDUMP(r.plain.status)) {
    EXPECT_TRUE(WCOREDUMP(r.agent.status));
  }
  RecordProperty("death", describe(r.agent.status));
}

TEST(AgentCrash, WithoutSupervisorTheProcessStillDiesPromptly) {
  std::string exe = crasher("null_deref");
  RunDir run;
  Outcome plain = run_process({exe}, RunOptions{false, nullptr, 0, run.path()});
  Outcome agent = run_process({exe}, RunOptions{true, &run, 0, run.path()});
  expect_same_death(plain, agent);
  EXPECT_GE(agent.seconds, common::kCrashWaitMs / 1000.0 * 0.9);
  EXPECT_LT(agent.seconds, 1.5 + 0.5);  // the wait, plus a slow machine's start-up
  std::vector<Crash> crashes = run.crashes();
  ASSERT_EQ(crashes.size(), 1u);
  EXPECT_EQ(crashes[0].state, static_cast<uint32_t>(CrashState::kReleased));
  EXPECT_EQ(crashes[0].signo, SIGSEGV);
}

// A signal that comes while the crash is captured (here during the wait for a supervisor that
// never comes) is held until the program's handler has run: the process dies by its crash, as
// without the agent, rather than by the handler of the later signal (a DataLoader worker's
// exit 0 on its parent's SIGTERM).
TEST(AgentCrash, ASignalDuringTheCaptureComesAfterTheProgramsHandler) {
  std::string exe = crasher("stopped_while_crashing");
  RunDir run;
  Outcome plain = run_process({exe}, RunOptions{false, nullptr, 0, run.path()});
  Outcome agent = run_process({exe}, RunOptions{true, &run, 0, run.path()});
  ASSERT_TRUE(WIFSIGNALED(plain.status)) << describe(plain.status);
  EXPECT_EQ(WTERMSIG(plain.status), SIGSEGV);
  expect_same_death(plain, agent);
  EXPECT_TRUE(contains(agent.err, "segv handler ran")) << agent.err;
  EXPECT_GE(agent.seconds, common::kCrashWaitMs / 1000.0 * 0.9);  // the SIGTERM came meanwhile
}

// One that another process sends while the program's handler runs (late, as the capture held
// the process) waits until that handler is done too. Without the agent the handler runs at
// once, and there it is interrupted: the difference is the point.
TEST(AgentCrash, AStopSignalDuringTheProgramsCrashHandlerComesAfterIt) {
  std::string exe = crasher("stopped_while_crashing");
  RunDir run;
  Outcome plain = run_process({exe, "in-handler"}, RunOptions{false, nullptr, 0, run.path()});
  Outcome agent = run_process({exe, "in-handler"}, RunOptions{true, &run, 0, run.path()});
  ASSERT_TRUE(WIFEXITED(plain.status)) << describe(plain.status);
  EXPECT_EQ(WEXITSTATUS(plain.status), 0);
  ASSERT_TRUE(WIFSIGNALED(agent.status)) << describe(agent.status);
  EXPECT_EQ(WTERMSIG(agent.status), SIGSEGV);
  EXPECT_TRUE(contains(agent.err, "segv handler ran")) << agent.err;
}

TEST(AgentCrash, WithoutRunDirTheAgentDoesNothing) {
  RunDir run;
  for (const char* name : {"null_deref", "own_handler", "double_free"}) {
    Outcome plain = run_process({crasher(name)}, RunOptions{false, nullptr, 0, run.path()});
    Outcome agent = run_process({crasher(name)}, RunOptions{true, nullptr, 0, run.path()});
    expect_same_death(plain, agent);
    EXPECT_EQ(agent.err, plain.err);
    EXPECT_LT(agent.seconds, 1.0);
  }
  Outcome churn = run_process({crasher("thread_churn")}, RunOptions{true, nullptr, 0, run.path()});
  EXPECT_TRUE(contains(churn.out, "altstack=0")) << churn.out;
  EXPECT_EQ(run.claimed(), 0u);
}

// Every thread gets an alternate stack, and an exited thread's stack does not stay mapped.
TEST(AgentCrash, ThreadsGetAlternateStacksThatDoNotLeak) {
  RunDir run;
  Outcome plain = run_process({crasher("thread_churn")}, RunOptions{false, nullptr, 0, run.path()});
  Outcome agent = run_process({crasher("thread_churn")}, RunOptions{true, &run, 0, run.path()});
  ASSERT_TRUE(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0);
  ASSERT_TRUE(WIFEXITED(agent.status) && WEXITSTATUS(agent.status) == 0) << agent.err;
  EXPECT_TRUE(contains(plain.out, "altstack=0")) << plain.out;
  EXPECT_TRUE(contains(agent.out, "altstack=1")) << agent.out;
  int plain_maps = 0;
  int agent_maps = 0;
  ASSERT_EQ(sscanf(plain.out.c_str(), "altstack=%*d maps=%d", &plain_maps), 1);
  ASSERT_EQ(sscanf(agent.out.c_str(), "altstack=%*d maps=%d", &agent_maps), 1);
  // The agent's own mappings (library, libgcc_s, slots, cached stacks), not one per thread.
  EXPECT_LT(agent_maps - plain_maps, 100) << plain.out << agent.out;
}

// --- CPython -------------------------------------------------------------------------------

constexpr const char* kPython = "/usr/bin/python3";

// Whether /usr/bin/python3 exports the dump the agent uses (CPython 3.8 to 3.12).
bool python_dumps() {
  static int answer = -1;
  if (answer < 0) {
    answer = 0;
    if (access(kPython, X_OK) == 0) {
      FILE* pipe = popen(
          "/usr/bin/python3 -c 'import sys; print(int((3, 8) <= sys.version_info[:2] < (3, 13)))'",
          "r");
      if (pipe != nullptr) {
        char line[16] = {};
        if (fgets(line, sizeof(line), pipe) != nullptr) answer = line[0] == '1' ? 1 : 0;
        pclose(pipe);
      }
    }
  }
  return answer == 1;
}

struct PythonRun {
  CrashRun run;
  std::vector<std::string> tracebacks;  // agent/python-<pid>.txt of each crash
};

PythonRun run_python(const std::vector<std::string>& args) {
  PythonRun result;
  RunDir run;
  std::vector<std::string> argv{kPython};
  argv.insert(argv.end(), args.begin(), args.end());
  result.run.plain = run_process(argv, RunOptions{false, nullptr, 0, run.path()});
  {
    FakeSupervisor supervisor(run);
    result.run.agent = run_process(argv, RunOptions{true, &run, 0, run.path()});
    supervisor.stop();
    result.run.crashes = supervisor.seen();
  }
  result.run.records = run.reader().poll(kOwnChildren).records;
  for (const Crash& c : result.run.crashes) {
    result.tracebacks.push_back(
        read_text(run.path() + "/agent/python-" + std::to_string(c.pid) + ".txt"));
  }
  return result;
}

TEST(AgentCrashPython, CtypesNullReadDumpsThePythonStack) {
  if (!python_dumps()) GTEST_SKIP() << "no CPython 3.8-3.12 at " << kPython;
  PythonRun p = run_python({"-c", "import ctypes; ctypes.string_at(0)"});
  expect_same_death(p.run.plain, p.run.agent);
  ASSERT_TRUE(WIFSIGNALED(p.run.agent.status));
  EXPECT_EQ(WTERMSIG(p.run.agent.status), SIGSEGV);
  ASSERT_EQ(p.run.crashes.size(), 1u);
  EXPECT_EQ(p.run.crashes[0].signo, SIGSEGV);
  EXPECT_EQ(p.run.crashes[0].python_dumped, 1u);
  EXPECT_GE(p.run.crashes[0].frames.size(), 3u);
  EXPECT_TRUE(contains(p.tracebacks[0], "File \"<string>\"")) << p.tracebacks[0];
  EXPECT_TRUE(contains(p.tracebacks[0], "string_at")) << p.tracebacks[0];
}

TEST(AgentCrashPython, FaulthandlerStillRunsAndPrints) {
  if (!python_dumps()) GTEST_SKIP() << "no CPython 3.8-3.12 at " << kPython;
  PythonRun p = run_python({"-X", "faulthandler", "-c", "import ctypes; ctypes.string_at(0)"});
  expect_same_death(p.run.plain, p.run.agent);
  ASSERT_EQ(p.run.crashes.size(), 1u);
  EXPECT_EQ(p.run.crashes[0].code, SEGV_MAPERR);
  EXPECT_EQ(p.run.crashes[0].python_dumped, 1u);
  EXPECT_TRUE(contains(p.run.plain.err, "Fatal Python error: Segmentation fault"));
  EXPECT_TRUE(contains(p.run.agent.err, "Fatal Python error: Segmentation fault"))
      << p.run.agent.err;
  EXPECT_TRUE(contains(p.tracebacks[0], "File \"<string>\""));
}

TEST(AgentCrashPython, SigDflFromPythonStillCaptured) {
  if (!python_dumps()) GTEST_SKIP() << "no CPython 3.8-3.12 at " << kPython;
  const char* script =
      "import ctypes, signal\n"
      "assert signal.getsignal(signal.SIGSEGV) == signal.SIG_DFL, "
      "signal.getsignal(signal.SIGSEGV)\n"
      "signal.signal(signal.SIGSEGV, signal.SIG_DFL)\n"
      "def crash_in_python_here():\n"
      "    ctypes.string_at(0)\n"
      "crash_in_python_here()\n";
  PythonRun p = run_python({"-c", script});
  expect_same_death(p.run.plain, p.run.agent);
  ASSERT_TRUE(WIFSIGNALED(p.run.agent.status)) << p.run.agent.err;
  ASSERT_EQ(p.run.crashes.size(), 1u);
  EXPECT_EQ(p.run.crashes[0].python_dumped, 1u);
  EXPECT_TRUE(contains(p.tracebacks[0], "crash_in_python_here")) << p.tracebacks[0];
}

TEST(AgentCrashPython, ForkedChildCrashIsItsOwn) {
  if (!python_dumps()) GTEST_SKIP() << "no CPython 3.8-3.12 at " << kPython;
  const char* script =
      "import ctypes, os, signal\n"
      "pid = os.fork()\n"
      "if pid == 0:\n"
      "    def worker_crash_here():\n"
      "        ctypes.string_at(0)\n"
      "    worker_crash_here()\n"
      "_, status = os.waitpid(pid, 0)\n"
      "print('child', os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1)\n";
  PythonRun p = run_python({"-c", script});
  expect_same_death(p.run.plain, p.run.agent);
  EXPECT_EQ(p.run.agent.out, p.run.plain.out);
  EXPECT_TRUE(contains(p.run.agent.out, "child 11")) << p.run.agent.out;
  ASSERT_EQ(p.run.crashes.size(), 1u);
  EXPECT_NE(p.run.crashes[0].pid, p.run.agent.pid);
  EXPECT_EQ(p.run.crashes[0].python_dumped, 1u);
  EXPECT_TRUE(contains(p.tracebacks[0], "worker_crash_here")) << p.tracebacks[0];
}

}  // namespace
}  // namespace traindoc::agent
