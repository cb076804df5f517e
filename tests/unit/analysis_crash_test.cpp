// Tests of the crash classification: a crash record read against the process's memory map, its
// stderr and the host samples (classify_crash), the blame frame, frame descriptions and the
// Python line of the crashing thread. Synthetic records shaped like those of a python3.11 job.
#include "analysis/crash_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

namespace traindoc::analysis {
namespace {

using store::Crash;
using store::Evidence;
using store::NativeFrame;
using testing::HasSubstr;
using testing::Not;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kCrashNs = 1'700'000'100 * kSecond;
constexpr int kPid = 4242;

// /proc/<pid>/maps of a python3.11 process running PyTorch with a user library, a DataLoader
// shared-memory segment, a memory-mapped dataset and one extra thread (its guard page below).
const char* const kMaps =
    "55d0c6a00000-55d0c6a6e000 r--p 00000000 08:01 1312345                    "
    "/usr/bin/python3.11\n"
    "55d0c6a6e000-55d0c6d4a000 r-xp 0006e000 08:01 1312345                    "
    "/usr/bin/python3.11\n"
    "55d0c6d4a000-55d0c6f9f000 r--p 0034a000 08:01 1312345                    "
    "/usr/bin/python3.11\n"
    "55d0c6fa3000-55d0c7036000 rw-p 005a2000 08:01 1312345                    "
    "/usr/bin/python3.11\n"
    "55d0c8b1e000-55d0c8f7a000 rw-p 00000000 00:00 0                          [heap]\n"
    "7f2b10000000-7f2b10021000 rw-p 00000000 00:00 0 \n"
    "7f2b14000000-7f2b18000000 rw-s 00000000 00:1a 4242                       "
    "/dev/shm/torch_123\n"
    "7f2b18000000-7f2b18400000 rw-s 00000000 00:1a 4243                       "
    "/dev/shm/torch_4242_1938274 (deleted)\n"
    "7f2b1c5f0000-7f2b1c5f1000 ---p 00000000 00:00 0 \n"
    "7f2b1c5f1000-7f2b1cdf1000 rw-p 00000000 00:00 0 \n"
    "7f2b20000000-7f2b20800000 r--s 00000000 08:01 2233445                    "
    "/data/cityscapes/train.bin\n"
    "7f2b2a400000-7f2b2b9c0000 r--p 00000000 08:01 1400001                    "
    "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so\n"
    "7f2b2b9c0000-7f2b3a5e0000 r-xp 015c0000 08:01 1400001                    "
    "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so\n"
    "7f2b3a5e0000-7f2b3d000000 r--p 101e0000 08:01 1400001                    "
    "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so\n"
    "7f2b3e200000-7f2b3e228000 r--p 00000000 08:01 1311111                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f2b3e228000-7f2b3e3bd000 r-xp 00028000 08:01 1311111                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f2b3e3bd000-7f2b3e415000 r--p 001bd000 08:01 1311111                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f2b3e419000-7f2b3e41b000 rw-p 00218000 08:01 1311111                    "
    "/usr/lib/x86_64-linux-gnu/libc.so.6\n"
    "7f2b3e500000-7f2b3e502000 r--p 00000000 08:01 1500001                    "
    "/opt/traindoc/lib/libtraindoc_agent.so\n"
    "7f2b3e502000-7f2b3e520000 r-xp 00002000 08:01 1500001                    "
    "/opt/traindoc/lib/libtraindoc_agent.so\n"
    "7f2b3e600000-7f2b3e601000 r--p 00000000 08:01 1600001                    "
    "/home/user/proj/build/libaugment.so\n"
    "7f2b3e601000-7f2b3e610000 r-xp 00001000 08:01 1600001                    "
    "/home/user/proj/build/libaugment.so\n"
    "7f2b3e700000-7f2b3e702000 r--p 00000000 08:01 1311100                    "
    "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
    "7f2b3e702000-7f2b3e72c000 r-xp 00002000 08:01 1311100                    "
    "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2\n"
    "7ffd4a1e0000-7ffd4a201000 rw-p 00000000 00:00 0                          [stack]\n"
    "7ffd4a3f0000-7ffd4a3f4000 r--p 00000000 00:00 0                          [vvar]\n"
    "7ffd4a3f4000-7ffd4a3f6000 r-xp 00000000 00:00 0                          [vdso]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

// The main thread's stack as pthread_getattr_np reports it (8 MiB below the top of [stack]).
constexpr uint64_t kMainStackHi = 0x7ffd4a201000;
constexpr uint64_t kMainStackLo = kMainStackHi - 8 * kMiB;
constexpr uint64_t kMainSp = 0x7ffd4a1ff8a0;
// The extra thread: guard page 7f2b1c5f0000-7f2b1c5f1000, stack above it.
constexpr uint64_t kThreadGuard = 0x7f2b1c5f0000;
constexpr uint64_t kThreadStackLo = 0x7f2b1c5f1000;
constexpr uint64_t kThreadStackHi = 0x7f2b1cdf1000;

const char* const kCpuFlagsNoAvx512 =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc "
    "cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes "
    "xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch fsgsbase bmi1 avx2 smep bmi2 "
    "erms invpcid rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves arat umip";
const char* const kCpuFlagsAvx512 =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc pni pclmulqdq ssse3 fma cx16 pcid "
    "sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand fsgsbase bmi1 avx2 smep bmi2 "
    "erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni "
    "avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512vbmi umip";
// A CPU from before AVX (Westmere).
const char* const kCpuFlagsNoAvx =
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2 ht syscall nx pdpe1gb rdtscp lm constant_tsc pni pclmulqdq ssse3 cx16 sse4_1 "
    "sse4_2 popcnt aes lahf_lm";

NativeFrame frame(uint64_t address, const std::string& module, uint64_t load_base,
                  const std::string& function = "", const std::string& file = "", int line = 0) {
  NativeFrame f;
  f.address = address;
  f.module = module;
  f.module_offset = module.empty() ? 0 : address - load_base;
  f.function = function;
  f.file = file;
  f.line = line;
  return f;
}

const std::string kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const std::string kLdLinux = "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
const std::string kLibstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
const std::string kLibgcc = "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1";
const std::string kPython = "/usr/bin/python3.11";
const std::string kLibpython = "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0";
const std::string kTorch = "/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so";
const std::string kAgent = "/opt/traindoc/lib/libtraindoc_agent.so";
const std::string kUserLib = "/home/user/proj/build/libaugment.so";

// A native stack that crashed in libc's memmove called from the user's library, called by
// PyTorch, called by the interpreter.
std::vector<NativeFrame> user_stack() {
  return {
      frame(0x7f2b3e39dabc, kLibc, 0x7f2b3e200000, "__memmove_avx_unaligned_erms"),
      frame(0x7f2b3e6012f4, kUserLib, 0x7f2b3e600000, "augment::flip_rows(float*, int)",
            "/home/user/proj/src/augment.cpp", 42),
      frame(0x7f2b2c1d3e40, kTorch, 0x7f2b2a400000, "at::native::(anonymous namespace)::apply"),
      frame(0x55d0c6b2f1a0, kPython, 0x55d0c6a00000, "_PyEval_EvalFrameDefault"),
  };
}

Crash base_crash(int signo, int code, uint64_t fault_addr) {
  Crash c;
  c.pid = kPid;
  c.start_ticks = 987654;
  c.tid = kPid;
  c.thread_name = "python3";
  c.signo = signo;
  c.code = code;
  c.fault_addr = fault_addr;
  c.time_ns = kCrashNs;
  c.pc = 0x7f2b3e39dabc;
  c.sp = kMainSp;
  c.fp = kMainSp + 0x40;
  c.stack_lo = kMainStackLo;
  c.stack_hi = kMainStackHi;
  c.frames = user_stack();
  c.maps = kMaps;
  return c;
}

store::LogLine log(int64_t t_ns, const std::string& stream, uint64_t number,
                   const std::string& text) {
  return {t_ns, stream, number, text};
}

store::HostSample host(int64_t t_ns, uint64_t shm_used, uint64_t shm_total) {
  store::HostSample h;
  h.t_ns = t_ns;
  h.mem_total = 16ull << 30;
  h.mem_available = 9ull << 30;
  h.shm_used = shm_used;
  h.shm_total = shm_total;
  return h;
}

class ClassifyCrash : public testing::Test {
 protected:
  CrashFacts classify(const Crash& crash) {
    ProcessTexts texts(m_evidence, m_processes);
    RuleContext context{m_evidence, m_processes, texts};
    return classify_crash(crash, context);
  }

  void cpu_flags(const std::string& flags) {
    m_evidence.events.push_back({1, store::EventKind::kHostCpu, 0, flags});
  }

  Evidence m_evidence;
  std::vector<ProcessSummary> m_processes;
};

// --- SIGSEGV -------------------------------------------------------------------------------

TEST_F(ClassifyCrash, NullPointerAtZero) {
  CrashFacts facts = classify(base_crash(SIGSEGV, SEGV_MAPERR, 0x0));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, HasSubstr("null pointer"));
  EXPECT_THAT(facts.what, HasSubstr("0x0"));
  EXPECT_FALSE(facts.fix.empty());
  EXPECT_EQ(facts.blame, 1);  // libaugment.so, past libc's memmove
}

TEST_F(ClassifyCrash, NullPointerPlusFieldOffset) {
  // p->field with p == NULL: the fault address is the field's offset.
  CrashFacts facts = classify(base_crash(SIGSEGV, SEGV_MAPERR, 0x18));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, HasSubstr("null pointer"));
  EXPECT_THAT(facts.what, HasSubstr("0x18"));
}

TEST_F(ClassifyCrash, WildPointerAtUnmappedHighAddress) {
  // Between the extra thread's stack and the dataset mapping: nothing is mapped there.
  CrashFacts facts = classify(base_crash(SIGSEGV, SEGV_MAPERR, 0x7f2b1e000010));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, HasSubstr("wild pointer"));
  EXPECT_THAT(facts.what, HasSubstr("0x7f2b1e000010"));
  EXPECT_THAT(facts.what, Not(HasSubstr("null")));
  EXPECT_THAT(facts.fix, HasSubstr("AddressSanitizer"));
}

TEST_F(ClassifyCrash, WriteToReadOnlyDataMapping) {
  // A write into libtorch_cpu.so's read-only data (a string literal).
  CrashFacts facts = classify(base_crash(SIGSEGV, SEGV_ACCERR, 0x7f2b3b001234));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, HasSubstr("read-only"));
  EXPECT_THAT(facts.what, HasSubstr("r--p"));
  EXPECT_THAT(facts.what, HasSubstr(kTorch));
}

TEST_F(ClassifyCrash, WriteToCodeMapping) {
  CrashFacts facts = classify(base_crash(SIGSEGV, SEGV_ACCERR, 0x7f2b3e601100));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, HasSubstr("read-only"));
  EXPECT_THAT(facts.what, HasSubstr("r-xp"));
  EXPECT_THAT(facts.what, HasSubstr("libaugment.so"));
}

TEST_F(ClassifyCrash, AccessErrorOnAnonymousMappingSaysAnonymous) {
  // The thread's guard page, reached through a stray pointer from the main thread's stack.
  CrashFacts facts = classify(base_crash(SIGSEGV, SEGV_ACCERR, kThreadGuard + 0x800));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, HasSubstr("---p anonymous"));
}

TEST_F(ClassifyCrash, StackOverflowJustBelowStackLow) {
  // The main thread recursed past the bottom of its 8 MiB stack into the kernel's guard gap.
  Crash crash = base_crash(SIGSEGV, SEGV_MAPERR, kMainStackLo - 0x8);
  crash.sp = kMainStackLo;
  crash.frames = {
      frame(0x7f2b3e6014a0, kUserLib, 0x7f2b3e600000, "augment::recurse(int)",
            "/home/user/proj/src/augment.cpp", 77),
      frame(0x7f2b3e6014c8, kUserLib, 0x7f2b3e600000, "augment::recurse(int)",
            "/home/user/proj/src/augment.cpp", 78),
  };
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kStackOverflow);
  EXPECT_THAT(facts.what, HasSubstr("stack overflow"));
  EXPECT_THAT(facts.fix, HasSubstr("recursion"));
  EXPECT_EQ(facts.blame, 0);
}

TEST_F(ClassifyCrash, StackOverflowOfAThreadIntoItsGuardPage) {
  Crash crash = base_crash(SIGSEGV, SEGV_ACCERR, kThreadStackLo - 0x28);
  crash.tid = kPid + 7;
  crash.thread_name = "pt_autograd_0";
  crash.sp = kThreadStackLo - 0x20;
  crash.stack_lo = kThreadStackLo;
  crash.stack_hi = kThreadStackHi;
  EXPECT_EQ(classify(crash).kind, FindingKind::kStackOverflow);
}

TEST_F(ClassifyCrash, StackOverflowWithoutStackBoundsInAGuardMapping) {
  // A thread whose bounds the agent did not know: the fault is in a ---p mapping just below sp.
  Crash crash = base_crash(SIGSEGV, SEGV_ACCERR, kThreadGuard + 0xff8);
  crash.sp = kThreadStackLo + 0x10;
  crash.stack_lo = 0;
  crash.stack_hi = 0;
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kStackOverflow);
  EXPECT_THAT(facts.what, HasSubstr("0x7f2b1c5f0ff8"));
  EXPECT_THAT(facts.what, HasSubstr("0x7f2b1c5f1010"));
}

TEST_F(ClassifyCrash, NoStackBoundsAndFaultFarBelowSpIsNotAnOverflow) {
  // The same guard page, but the stack pointer is on the main stack: a stray pointer.
  Crash crash = base_crash(SIGSEGV, SEGV_ACCERR, kThreadGuard + 0xff8);
  crash.stack_lo = 0;
  crash.stack_hi = 0;
  EXPECT_EQ(classify(crash).kind, FindingKind::kNativeCrash);
}

TEST_F(ClassifyCrash, NoStackBoundsAndFaultBelowSpInAWritableMappingIsNotAnOverflow) {
  // 4 KiB below sp but inside the thread's own mapped stack: not the guard.
  Crash crash = base_crash(SIGSEGV, SEGV_ACCERR, kThreadStackLo + 0x1000);
  crash.sp = kThreadStackLo + 0x2000;
  crash.stack_lo = 0;
  crash.stack_hi = 0;
  EXPECT_NE(classify(crash).kind, FindingKind::kStackOverflow);
}

TEST_F(ClassifyCrash, GeneralProtectionFaultIsNotANullPointer) {
  // x86-64 reports a non-canonical pointer (0xdead000000000100, freed-list poison, garbage) as a
  // general protection fault: SIGSEGV with si_code SI_KERNEL and si_addr 0. The address is
  // unknown, not NULL.
  CrashFacts facts = classify(base_crash(SIGSEGV, SI_KERNEL, 0x0));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_THAT(facts.what, Not(HasSubstr("null pointer")));
}

// --- SIGBUS --------------------------------------------------------------------------------

TEST_F(ClassifyCrash, BusErrorInDevShmIsShmExhausted) {
  m_evidence.host_samples = {
      host(kCrashNs - 3 * kSecond, 60 * kMiB, 64 * kMiB),
      host(kCrashNs - kSecond / 5, 64 * kMiB, 64 * kMiB),  // the nearest
      host(kCrashNs + 2 * kSecond, 12 * kMiB, 64 * kMiB),
  };
  CrashFacts facts = classify(base_crash(SIGBUS, BUS_ADRERR, 0x7f2b15000000));
  EXPECT_EQ(facts.kind, FindingKind::kShmExhausted);
  EXPECT_THAT(facts.what, HasSubstr("/dev/shm/torch_123"));
  EXPECT_THAT(facts.evidence,
              testing::Contains(std::string("/dev/shm at that time: 64.0 MiB used of 64.0 MiB")));
  EXPECT_THAT(facts.fix, HasSubstr("--shm-size"));
}

TEST_F(ClassifyCrash, BusErrorInDeletedShmSegment) {
  // PyTorch unlinks its segments once mapped: the maps line ends in " (deleted)".
  m_evidence.host_samples = {host(kCrashNs + kSecond, 7 * kMiB, 8 * kMiB)};
  CrashFacts facts = classify(base_crash(SIGBUS, BUS_ADRERR, 0x7f2b18100000));
  EXPECT_EQ(facts.kind, FindingKind::kShmExhausted);
  EXPECT_THAT(facts.what, HasSubstr("/dev/shm/torch_4242_1938274"));
  EXPECT_THAT(facts.what, Not(HasSubstr("(deleted)")));
  EXPECT_THAT(facts.evidence,
              testing::Contains(std::string("/dev/shm at that time: 7.0 MiB used of 8.0 MiB")));
}

TEST_F(ClassifyCrash, BusErrorInDevShmWithoutHostSamplesHasNoShmLine) {
  CrashFacts facts = classify(base_crash(SIGBUS, BUS_ADRERR, 0x7f2b15000000));
  EXPECT_EQ(facts.kind, FindingKind::kShmExhausted);
  for (const std::string& line : facts.evidence) {
    EXPECT_THAT(line, Not(HasSubstr("/dev/shm at that time")));
  }
}

TEST_F(ClassifyCrash, BusErrorInRegularFileMappingIsTruncatedFile) {
  CrashFacts facts = classify(base_crash(SIGBUS, BUS_ADRERR, 0x7f2b20400000));
  EXPECT_EQ(facts.kind, FindingKind::kBusError);
  EXPECT_THAT(facts.what, HasSubstr("/data/cityscapes/train.bin"));
  EXPECT_THAT(facts.what, HasSubstr("truncated"));
  EXPECT_THAT(facts.fix, HasSubstr("rename"));
}

TEST_F(ClassifyCrash, MisalignedBusErrorOutsideFiles) {
  CrashFacts facts = classify(base_crash(SIGBUS, BUS_ADRALN, 0x7f2b10000003));
  EXPECT_EQ(facts.kind, FindingKind::kBusError);
  EXPECT_THAT(facts.what, HasSubstr("misaligned"));
  EXPECT_THAT(facts.what, HasSubstr("0x7f2b10000003"));
}

TEST_F(ClassifyCrash, OtherBusErrorOutsideFilesIsHardwareOrMapping) {
  CrashFacts facts = classify(base_crash(SIGBUS, BUS_OBJERR, 0x55d0c8b20000));  // [heap]
  EXPECT_EQ(facts.kind, FindingKind::kBusError);
  EXPECT_THAT(facts.what, Not(HasSubstr("misaligned")));
  EXPECT_THAT(facts.what, Not(HasSubstr("truncated")));
}

// --- SIGFPE, SIGILL ------------------------------------------------------------------------

TEST_F(ClassifyCrash, IntegerDivisionByZero) {
  CrashFacts facts = classify(base_crash(SIGFPE, FPE_INTDIV, 0x7f2b3e6012f4));
  EXPECT_EQ(facts.kind, FindingKind::kFpe);
  EXPECT_THAT(facts.what, HasSubstr("division by zero"));
  EXPECT_THAT(facts.fix, HasSubstr("divisor"));
}

TEST_F(ClassifyCrash, IntegerOverflow) {
  CrashFacts facts = classify(base_crash(SIGFPE, FPE_INTOVF, 0x7f2b3e6012f4));
  EXPECT_EQ(facts.kind, FindingKind::kFpe);
  EXPECT_THAT(facts.what, HasSubstr("integer overflow"));
}

TEST_F(ClassifyCrash, OtherArithmeticException) {
  CrashFacts facts = classify(base_crash(SIGFPE, FPE_FLTINV, 0x7f2b3e6012f4));
  EXPECT_EQ(facts.kind, FindingKind::kFpe);
  EXPECT_THAT(facts.what, Not(HasSubstr("division by zero")));
}

TEST_F(ClassifyCrash, Ud2TrapInstruction) {
  Crash crash = base_crash(SIGILL, ILL_ILLOPN, 0x7f2b3e6012f4);
  crash.code_bytes = "0f0b660f1f440000f30f1efa55488955";
  cpu_flags(kCpuFlagsNoAvx512);
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kIllegalInstruction);
  EXPECT_THAT(facts.what, HasSubstr("ud2"));
  EXPECT_THAT(facts.what, Not(HasSubstr("lacks")));
}

TEST_F(ClassifyCrash, Avx512InstructionOnACpuWithoutIt) {
  Crash crash = base_crash(SIGILL, ILL_ILLOPN, 0x7f2b2c1d3e40);
  crash.code_bytes = "62f17c4810064883c0404839c875f1c3";  // vmovups zmm0, [rsi]
  cpu_flags(kCpuFlagsNoAvx512);
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kIllegalInstruction);
  EXPECT_THAT(facts.what, HasSubstr("avx512f instruction, which this CPU lacks"));
  EXPECT_THAT(facts.what, HasSubstr("62f17c4810064883"));
  EXPECT_THAT(facts.fix, HasSubstr("-march=native"));
}

TEST_F(ClassifyCrash, Avx512InstructionOnACpuWithItMakesNoClaim) {
  Crash crash = base_crash(SIGILL, ILL_ILLOPN, 0x7f2b2c1d3e40);
  crash.code_bytes = "62f17c4810064883c0404839c875f1c3";
  cpu_flags(kCpuFlagsAvx512);
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kIllegalInstruction);
  EXPECT_THAT(facts.what, Not(HasSubstr("lacks")));
}

TEST_F(ClassifyCrash, Avx512InstructionWithoutCpuFlagsMakesNoClaim) {
  Crash crash = base_crash(SIGILL, ILL_ILLOPN, 0x7f2b2c1d3e40);
  crash.code_bytes = "62f17c4810064883c0404839c875f1c3";
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kIllegalInstruction);
  EXPECT_THAT(facts.what, Not(HasSubstr("lacks")));
}

TEST_F(ClassifyCrash, VexInstructionOnACpuWithoutAvx) {
  Crash crash = base_crash(SIGILL, ILL_ILLOPN, 0x7f2b2c1d3e40);
  crash.code_bytes = "c5fc10064883c0204839c875f2c5f877";  // vmovups ymm0, [rsi]
  cpu_flags(kCpuFlagsNoAvx);
  EXPECT_THAT(classify(crash).what, HasSubstr("an avx instruction, which this CPU lacks"));
  m_evidence.events.clear();
  cpu_flags(kCpuFlagsNoAvx512);  // has avx and avx2
  EXPECT_THAT(classify(crash).what, Not(HasSubstr("lacks")));
}

TEST_F(ClassifyCrash, IllegalInstructionWithoutCodeBytes) {
  CrashFacts facts = classify(base_crash(SIGILL, ILL_ILLOPC, 0x7f2b2c1d3e40));
  EXPECT_EQ(facts.kind, FindingKind::kIllegalInstruction);
  EXPECT_THAT(facts.what, Not(HasSubstr("bytes")));
}

// --- SIGABRT -------------------------------------------------------------------------------

Crash self_abort() {
  // glibc's abort() raises SIGABRT with tgkill: SI_TKILL, sent by the process itself.
  Crash crash = base_crash(SIGABRT, SI_TKILL, 0);
  crash.sender_pid = kPid;
  crash.frames = {
      frame(0x7f2b3e2969fc, kLibc, 0x7f2b3e200000, "__pthread_kill_implementation"),
      frame(0x7f2b3e242476, kLibc, 0x7f2b3e200000, "raise"),
      frame(0x7f2b3e2287f3, kLibc, 0x7f2b3e200000, "abort"),
      frame(0x7f2b3e0a2b9e, kLibstdcxx, 0x7f2b3e000000, "__gnu_cxx::__verbose_terminate_handler()"),
      frame(0x7f2b3e0ae20c, kLibstdcxx, 0x7f2b3e000000, "std::terminate()"),
      frame(0x7f2b3e601500, kUserLib, 0x7f2b3e600000, "augment::check_shapes()",
            "/home/user/proj/src/augment.cpp", 90),
  };
  return crash;
}

TEST_F(ClassifyCrash, AbortFromUncaughtCppException) {
  m_evidence.log_lines = {
      log(kCrashNs - 3 * kSecond, "stderr", 55, "epoch 3 step 120 loss 0.412"),
      log(kCrashNs - kSecond / 100, "stderr", 57,
          "terminate called after throwing an instance of 'std::runtime_error'"),
      log(kCrashNs - kSecond / 100, "stderr", 58, "  what():  shape mismatch"),
  };
  CrashFacts facts = classify(self_abort());
  EXPECT_EQ(facts.kind, FindingKind::kAbort);
  EXPECT_THAT(facts.what, HasSubstr("uncaught C++ exception"));
  EXPECT_THAT(facts.what, HasSubstr("std::runtime_error"));
  EXPECT_THAT(facts.what, HasSubstr("shape mismatch"));
  EXPECT_THAT(facts.what, Not(HasSubstr("loss")));
  EXPECT_THAT(facts.evidence, testing::Contains(std::string(
                                  "stderr line 57: terminate called after throwing an instance of "
                                  "'std::runtime_error'")));
  EXPECT_THAT(facts.evidence,
              testing::Contains(std::string("stderr line 58:   what():  shape mismatch")));
  EXPECT_EQ(facts.blame, 5);  // past libc and libstdc++
  EXPECT_THAT(facts.what, Not(HasSubstr("sent by")));
}

TEST_F(ClassifyCrash, AbortMessagePrintedJustAfterTheCrashIsFound) {
  // The log tap reads the line after the agent recorded the signal.
  m_evidence.log_lines = {
      log(kCrashNs + 3 * kSecond / 2, "stderr", 58, "  what():  shape mismatch"),
  };
  CrashFacts facts = classify(self_abort());
  EXPECT_THAT(facts.what, HasSubstr("uncaught C++ exception"));
  EXPECT_THAT(facts.what, HasSubstr("shape mismatch"));
}

TEST_F(ClassifyCrash, AbortFromGlibcDoubleFree) {
  m_evidence.log_lines = {
      log(kCrashNs - kSecond / 1000, "stderr", 12, "free(): double free detected in tcache 2"),
  };
  CrashFacts facts = classify(self_abort());
  EXPECT_EQ(facts.kind, FindingKind::kAbort);
  EXPECT_THAT(facts.what, HasSubstr("heap corruption"));
  EXPECT_THAT(facts.what, HasSubstr("free(): double free detected in tcache 2"));
  EXPECT_THAT(facts.fix, HasSubstr("AddressSanitizer"));
}

TEST_F(ClassifyCrash, AbortFromGlibcCorruptedChunk) {
  m_evidence.log_lines = {
      log(kCrashNs, "stderr", 12, "malloc(): corrupted top size"),
  };
  EXPECT_THAT(classify(self_abort()).what, HasSubstr("heap corruption"));
}

TEST_F(ClassifyCrash, AbortFromFailedAssertion) {
  m_evidence.log_lines = {
      log(kCrashNs - kSecond / 10, "stderr", 31,
          "python3: /home/user/proj/src/augment.cpp:42: void augment::flip_rows(float*, int): "
          "Assertion `x > 0' failed."),
  };
  CrashFacts facts = classify(self_abort());
  EXPECT_EQ(facts.kind, FindingKind::kAbort);
  EXPECT_THAT(facts.what, HasSubstr("assertion"));
  EXPECT_THAT(facts.what, HasSubstr("Assertion `x > 0' failed."));
  EXPECT_THAT(facts.what, Not(HasSubstr("heap corruption")));
}

TEST_F(ClassifyCrash, AbortIgnoresMessagesOutsideTheWindowAndOnStdout) {
  m_evidence.log_lines = {
      // Long before: another exception, caught and printed by the training loop.
      log(kCrashNs - 30 * kSecond, "stderr", 3,
          "terminate called after throwing an instance of 'c10::Error'"),
      log(kCrashNs - 5 * kSecond - 1, "stderr", 4, "free(): double free detected in tcache 2"),
      // On stdout: not glibc's or libstdc++'s.
      log(kCrashNs, "stdout", 900, "  what():  printed by the user's own logger"),
      log(kCrashNs, "stdout", 901, "Assertion `x > 0' failed."),
      // Too long after.
      log(kCrashNs + 2 * kSecond + 1, "stderr", 5, "  what():  from a later process"),
  };
  CrashFacts facts = classify(self_abort());
  EXPECT_EQ(facts.kind, FindingKind::kAbort);
  EXPECT_THAT(facts.what, HasSubstr("no message found"));
  EXPECT_TRUE(facts.evidence.empty());
}

TEST_F(ClassifyCrash, AbortWindowEdgesAreIncluded) {
  m_evidence.log_lines = {
      log(kCrashNs - 5 * kSecond, "stderr", 1, "free(): invalid pointer"),
      log(kCrashNs + 2 * kSecond, "stderr", 2, "munmap_chunk(): invalid pointer"),
  };
  CrashFacts facts = classify(self_abort());
  EXPECT_EQ(facts.evidence.size(), 2u);
  EXPECT_THAT(facts.what, HasSubstr("free(): invalid pointer"));
  EXPECT_THAT(facts.what, HasSubstr("munmap_chunk(): invalid pointer"));
}

TEST_F(ClassifyCrash, AbortSentByAnotherProcessSaysSo) {
  // `kill -ABRT 4242` from a shell (to get a core dump of a hung rank): SI_USER from pid 777.
  Crash crash = base_crash(SIGABRT, SI_USER, 0);
  crash.sender_pid = 777;
  CrashFacts facts = classify(crash);
  EXPECT_THAT(facts.what, HasSubstr("sent by process 777"));
}

// --- Signals sent by a process -------------------------------------------------------------

TEST_F(ClassifyCrash, SegvSentByAnotherProcess) {
  // kill -SEGV 4242: SI_USER, no fault address.
  Crash crash = base_crash(SIGSEGV, SI_USER, 0);
  crash.sender_pid = 777;
  CrashFacts facts = classify(crash);
  EXPECT_THAT(facts.what, HasSubstr("sent by process 777"));
  EXPECT_THAT(facts.what, Not(HasSubstr("null pointer")));
}

TEST_F(ClassifyCrash, BusSentWithTgkill) {
  Crash crash = base_crash(SIGBUS, SI_TKILL, 0);
  crash.sender_pid = 1000;
  EXPECT_THAT(classify(crash).what, HasSubstr("sent by process 1000"));
}

TEST_F(ClassifyCrash, KernelFaultIsNotSent) {
  Crash crash = base_crash(SIGSEGV, SEGV_MAPERR, 0x18);
  crash.sender_pid = 0;
  EXPECT_THAT(classify(crash).what, Not(HasSubstr("sent by")));
}

TEST_F(ClassifyCrash, PythonLineOfTheCrashingThread) {
  Crash crash = base_crash(SIGSEGV, SEGV_MAPERR, 0x0);
  crash.python_traceback =
      "Current thread 0x00007f2b3e1f4740 (most recent call first):\n"
      "  File \"/home/user/proj/augment.py\", line 12 in flip\n"
      "  File \"/home/user/proj/train.py\", line 40 in step\n";
  EXPECT_EQ(classify(crash).python_line, "File \"/home/user/proj/augment.py\", line 12 in flip");
  crash.python_traceback.clear();
  EXPECT_EQ(classify(crash).python_line, "");
}

TEST_F(ClassifyCrash, UnknownSignalIsANativeCrash) {
  CrashFacts facts = classify(base_crash(SIGTRAP, TRAP_BRKPT, 0));
  EXPECT_EQ(facts.kind, FindingKind::kNativeCrash);
  EXPECT_FALSE(facts.what.empty());
}

TEST_F(ClassifyCrash, EmptyMapsIsTotal) {
  Crash crash = base_crash(SIGBUS, BUS_ADRERR, 0x7f2b15000000);
  crash.maps.clear();
  CrashFacts facts = classify(crash);
  EXPECT_EQ(facts.kind, FindingKind::kBusError);
  crash = base_crash(SIGSEGV, SEGV_ACCERR, 0x7f2b3b001234);
  crash.maps.clear();
  EXPECT_THAT(classify(crash).what, HasSubstr("wild pointer"));
}

// --- blame_frame, describe_frame -----------------------------------------------------------

TEST(BlameFrame, SkipsLibcAndReturnsTheUserLibrary) {
  EXPECT_EQ(blame_frame(user_stack()), 1);
}

TEST(BlameFrame, SkipsEveryRuntimeModule) {
  std::vector<NativeFrame> frames = {
      frame(0x7ffd4a3f4a10, "[vdso]", 0x7ffd4a3f4000, "__vdso_clock_gettime"),
      frame(0x7f2b3e503000, kAgent, 0x7f2b3e500000, "traindoc::agent::on_fatal_signal"),
      frame(0x7f2b3e242520, kLibc, 0x7f2b3e200000),
      frame(0x7f2b3e71a3c1, kLdLinux, 0x7f2b3e700000, "_dl_fixup"),
      frame(0x7f2b3e0ae20c, kLibstdcxx, 0x7f2b3e000000, "std::terminate()"),
      frame(0x7f2b3df4a1e2, kLibgcc, 0x7f2b3df30000, "_Unwind_RaiseException"),
      frame(0x7f2b3e2a0b43, "/usr/lib/x86_64-linux-gnu/libpthread.so.0", 0x7f2b3e2a0000),
      frame(0x7f2b3d8f0c21, kLibpython, 0x7f2b3d800000, "PyObject_Call"),
      frame(0x55d0c6b2f1a0, kPython, 0x55d0c6a00000, "_PyEval_EvalFrameDefault"),
      frame(0x7f2b1c5f2000, "", 0),  // JIT code or an anonymous mapping
      frame(0x7f2b2c1d3e40, kTorch, 0x7f2b2a400000, "at::native::add_kernel"),
  };
  EXPECT_EQ(blame_frame(frames), 10);
}

TEST(BlameFrame, MinusOneWhenAllFramesAreRuntime) {
  std::vector<NativeFrame> frames = {
      frame(0x7f2b3e2969fc, kLibc, 0x7f2b3e200000, "__pthread_kill_implementation"),
      frame(0x7f2b3e2287f3, kLibc, 0x7f2b3e200000, "abort"),
      frame(0x7f2b3d8f0c21, kLibpython, 0x7f2b3d800000, "faulthandler_fatal_error"),
      frame(0x55d0c6b2f1a0, kPython, 0x55d0c6a00000, "_PyEval_EvalFrameDefault"),
      frame(0x55d0c6b30000, "/usr/bin/python3", 0x55d0c6a00000, "Py_BytesMain"),
      frame(0x7f2b3e229d90, kLibc, 0x7f2b3e200000, "__libc_start_call_main"),
      frame(0x7ffd4a3f4a10, "[vdso]", 0x7ffd4a3f4000),
      frame(0x7f2b1c5f2000, "", 0),
  };
  EXPECT_EQ(blame_frame(frames), -1);
  EXPECT_EQ(blame_frame({}), -1);
}

TEST(BlameFrame, LibtorchIsABlameCandidate) {
  std::vector<NativeFrame> frames = {
      frame(0x7f2b3e39dabc, kLibc, 0x7f2b3e200000, "__memmove_avx_unaligned_erms"),
      frame(0x7f2b2c1d3e40, kTorch, 0x7f2b2a400000, "at::native::copy_"),
      frame(0x7f2b3e6012f4, kUserLib, 0x7f2b3e600000, "augment::flip_rows(float*, int)"),
  };
  EXPECT_EQ(blame_frame(frames), 1);
}

TEST(BlameFrame, UserLibrariesNamedLikeRuntimeOnesAreCandidates) {
  // dlib's library and a pybind11 extension named python_example: neither is the runtime.
  std::vector<NativeFrame> frames = {
      frame(0x7f2b3e39dabc, kLibc, 0x7f2b3e200000, "__memmove_avx_unaligned_erms"),
      frame(0x7f2b3c012340, "/usr/lib/x86_64-linux-gnu/libdlib.so.19", 0x7f2b3c000000,
            "dlib::resize_image"),
  };
  EXPECT_EQ(blame_frame(frames), 1);
  frames[1] =
      frame(0x7f2b3c012340, "/home/user/proj/python_example.cpython-311-x86_64-linux-gnu.so",
            0x7f2b3c000000, "add");
  EXPECT_EQ(blame_frame(frames), 1);
}

TEST(DescribeFrame, FunctionModuleFileAndLine) {
  NativeFrame f = frame(0x7f2b3e6012f4, kUserLib, 0x7f2b3e600000, "augment::flip_rows(float*, int)",
                        "/home/user/proj/src/augment.cpp", 42);
  EXPECT_EQ(describe_frame(f), "augment::flip_rows(float*, int) (libaugment.so) at augment.cpp:42");
}

TEST(DescribeFrame, FunctionAndModuleWithoutDebugInfo) {
  NativeFrame f = frame(0x7f2b3e39dabc, kLibc, 0x7f2b3e200000, "__memmove_avx_unaligned_erms");
  EXPECT_EQ(describe_frame(f), "__memmove_avx_unaligned_erms (libc.so.6)");
}

TEST(DescribeFrame, ModulePlusOffsetWithoutFunction) {
  NativeFrame f = frame(0x7f2b2c1d3e40, kTorch, 0x7f2b2a400000);
  EXPECT_EQ(describe_frame(f), "libtorch_cpu.so+0x1dd3e40");
}

TEST(DescribeFrame, NoModuleShowsTheAddress) {
  NativeFrame f = frame(0x7f2b1c5f2000, "", 0);
  EXPECT_THAT(describe_frame(f), HasSubstr("0x7f2b1c5f2000"));
  f.function = "jit_kernel";
  EXPECT_EQ(describe_frame(f), "jit_kernel (0x7f2b1c5f2000)");
}

// --- innermost_python_frame ----------------------------------------------------------------

// CPython 3.11's faulthandler: threads newest first, so the crashing main thread comes last.
const char* const kThreeThreadDump =
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Thread 0x00007f2b0effd640 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
    "  File \"/usr/lib/python3.11/queue.py\", line 180 in get\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/pin_memory.py\", line 28 "
    "in do_one_step\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/_utils/pin_memory.py\", line 51 "
    "in _pin_memory_loop\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 975 in run\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 1038 in _bootstrap_inner\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
    "\n"
    "Thread 0x00007f2b1cdf0640 (most recent call first):\n"
    "  File \"/usr/lib/python3.11/selectors.py\", line 415 in select\n"
    "  File \"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py\", line 1133 in "
    "_try_get_data\n"
    "  File \"/usr/lib/python3.11/threading.py\", line 995 in _bootstrap\n"
    "\n"
    "Current thread 0x00007f2b3e1f4740 (most recent call first):\n"
    "  File \"/home/user/proj/augment.py\", line 12 in flip\n"
    "  File \"/home/user/proj/train.py\", line 40 in step\n"
    "  File \"/home/user/proj/train.py\", line 77 in <module>\n"
    "\n"
    "Extension modules: numpy.core._multiarray_umath, numpy.core._multiarray_tests, "
    "torch._C, torch._C._fft, torch._C._linalg, torch._C._nn (total: 6)\n";

TEST(InnermostPythonFrame, CurrentThreadOfSeveral) {
  EXPECT_EQ(innermost_python_frame(kThreeThreadDump, false),
            "File \"/home/user/proj/augment.py\", line 12 in flip");
}

TEST(InnermostPythonFrame, UserCodeSkipsLibraries) {
  std::string dump =
      "Current thread 0x00007f2b3e1f4740 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at\n"
      "  File \"/usr/lib/python3/dist-packages/torch/nn/modules/module.py\", line 1194 in "
      "_call_impl\n"
      "  File \"/opt/traindoc/python/traindoc_hook/collectives.py\", line 245 in recorded\n"
      "  File \"/home/user/proj/ops.py\", line 15 in fused_op\n"
      "  File \"/home/user/proj/train.py\", line 77 in <module>\n";
  EXPECT_EQ(innermost_python_frame(dump, false),
            "File \"/usr/lib/python3.11/ctypes/__init__.py\", line 519 in string_at");
  EXPECT_EQ(innermost_python_frame(dump, true),
            "File \"/home/user/proj/ops.py\", line 15 in fused_op");
}

TEST(InnermostPythonFrame, CurrentThreadFirstAndLastLineWithoutNewline) {
  EXPECT_EQ(innermost_python_frame("Current thread 0x00007f2b3e1f4740 (most recent call first):\n"
                                   "  File \"train.py\", line 12 in step",
                                   false),
            "File \"train.py\", line 12 in step");
}

TEST(InnermostPythonFrame, CurrentThreadCollectingGarbage) {
  EXPECT_EQ(innermost_python_frame("Current thread 0x00007f2b3e1f4740 (most recent call first):\n"
                                   "  Garbage-collecting\n"
                                   "  File \"/home/user/proj/model.py\", line 88 in __del__\n",
                                   false),
            "File \"/home/user/proj/model.py\", line 88 in __del__");
}

TEST(InnermostPythonFrame, NoDump) {
  EXPECT_EQ(innermost_python_frame("", false), "");
  EXPECT_EQ(innermost_python_frame("unable to get the interpreter state\n", false), "");
}

TEST(InnermostPythonFrame, CurrentThreadWithoutPythonFrame) {
  // A native thread that holds a thread state but runs no Python code (a callback thread
  // before its first frame): the next thread's frames are not the crashing thread's.
  std::string dump =
      "Current thread 0x00007f2b0effd640 (most recent call first):\n"
      "  <no Python frame>\n"
      "\n"
      "Thread 0x00007f2b3e1f4740 (most recent call first):\n"
      "  File \"/home/user/proj/train.py\", line 40 in step\n"
      "  File \"/home/user/proj/train.py\", line 77 in <module>\n";
  EXPECT_EQ(innermost_python_frame(dump, false), "");
}

TEST(InnermostPythonFrame, NoCurrentThreadInAThreadsDump) {
  // The crash was on a thread unknown to Python (an OpenMP or autograd worker): CPython writes
  // every thread as "Thread 0x...", none is the crashing one.
  std::string dump =
      "Thread 0x00007f2b0effd640 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 324 in wait\n"
      "\n"
      "Thread 0x00007f2b3e1f4740 (most recent call first):\n"
      "  File \"/home/user/proj/train.py\", line 40 in step\n";
  EXPECT_EQ(innermost_python_frame(dump, false), "");
}

// Module names, from the symbolizer's point of view: what counts as runtime.
store::NativeFrame in(std::string module) {
  store::NativeFrame f;
  f.module = std::move(module);
  return f;
}

TEST(BlameFrame, SkipsRuntimeInterpreterAgentAndAnonymousModules) {
  std::vector<NativeFrame> frames = {
      in("/usr/lib/x86_64-linux-gnu/libc.so.6"),
      in(""),
      in("[vdso]"),
      in("/opt/traindoc/lib/libtraindoc_agent.so"),
      in("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
      in("/usr/local/lib/python3.11/dist-packages/torch/lib/libtorch_cpu.so"),
      in("/usr/bin/python3.11"),
  };
  EXPECT_EQ(blame_frame(frames), 5);
  EXPECT_EQ(
      blame_frame({in("/usr/bin/python3.11"), in("/usr/lib/libpython3.12.so.1.0"),
                   in("/lib64/ld-linux-x86-64.so.2"), in("/lib/x86_64-linux-gnu/libpthread.so.0")}),
      -1);
  EXPECT_EQ(blame_frame({}), -1);
  EXPECT_EQ(blame_frame({in("/opt/ext/my_op.cpython-311-x86_64-linux-gnu.so (deleted)")}), 0);
}

TEST(BlameFrame, RuntimeAndUserModulesByName) {
  for (const char* runtime :
       {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/libc-2.31.so", "/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/ld-linux-x86-64.so.2", "/lib/ld-2.31.so", "/usr/lib/libgcc_s.so.1",
        "/usr/bin/python3", "/usr/bin/python", "/opt/conda/bin/python3.12",
        "/usr/lib/libpython3.11.so.1.0", "/x/lib/libtraindoc_agent.so", "/lib/libdl.so.2"}) {
    EXPECT_EQ(blame_frame({in(runtime)}), -1) << runtime;
  }
  for (const char* user :
       {"/usr/lib/libcuda.so.1", "/x/libcudnn.so.8", "/x/libtorch_cuda.so", "/x/python_ext.so",
        "/x/libcublas.so", "/usr/lib/libmkl_core.so", "/x/libdlpack.so"}) {
    EXPECT_EQ(blame_frame({in(user)}), 0) << user;
  }
}

}  // namespace
}  // namespace traindoc::analysis
