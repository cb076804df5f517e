// Fills the crash record of the process's slot, in every job process (LD_PRELOAD), inside the
// fatal-signal handler on the faulting thread: siginfo, registers, thread identity, the native
// stack, and the Python traceback of every thread. Everything is prepared at start-up.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include <atomic>
#include <cstdint>
#include <cstring>

#include "agent/agent.h"
#include "agent/crash.h"

namespace traindoc::agent {
namespace {

using common::CrashRecord;
using common::kCrashFrames;

// CPython 3.8-3.12 export these, except 3.9 and 3.10, which lack the dumper (as do 3.13+).
using DumpThreadsFn = const char* (*)(int fd, void* interp, void* current_tstate);
using IsInitializedFn = int (*)();

DumpThreadsFn g_py_dump = nullptr;
IsInitializedFn g_py_initialized = nullptr;

// Our own frames (handler, capture) and the signal trampoline above the faulting frame.
constexpr int kOwnFrames = 32;

struct Registers {
  uint64_t pc = 0;
  uint64_t sp = 0;
  uint64_t fp = 0;
};

// Async-signal-safe.
Registers read_registers(const void* context, uint64_t* gregs, size_t gregs_size) {
  Registers regs;
  if (context == nullptr) return regs;
  const auto* uc = static_cast<const ucontext_t*>(context);
#if defined(__x86_64__)
  regs.pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  regs.sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
  regs.fp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RBP]);
  for (size_t i = 0; i < gregs_size && i < NGREG; ++i) {
    gregs[i] = static_cast<uint64_t>(uc->uc_mcontext.gregs[i]);
  }
#elif defined(__aarch64__)
  regs.pc = uc->uc_mcontext.pc;
  regs.sp = uc->uc_mcontext.sp;
  regs.fp = uc->uc_mcontext.regs[29];
  (void)gregs;
  (void)gregs_size;
#else
  (void)uc;
  (void)gregs;
  (void)gregs_size;
#endif
  return regs;
}

// Walks saved frame pointers, for code that native_backtrace() could not unwind (no unwind info, a
// call through a bad function pointer). Reads stay inside the thread's known stack.
// Async-signal-safe.
uint32_t walk_frame_pointers(uint64_t* frames, uint32_t count, Registers regs, StackBounds stack) {
  if (stack.lo == 0 || stack.hi <= stack.lo) return count;
  auto inside = [&](uint64_t addr) { return addr >= stack.lo && addr + 16 <= stack.hi; };
#if defined(__x86_64__)
  // A call through a null or wild pointer faults before any prologue: the return address is
  // still on top of the stack.
  if (regs.pc < 4096 && inside(regs.sp) && count < kCrashFrames) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a stack address, inside the known stack
    frames[count++] = *reinterpret_cast<const uint64_t*>(regs.sp);
  }
#endif
  uint64_t fp = regs.fp;
  while (count < kCrashFrames && inside(fp) && fp % sizeof(uint64_t) == 0) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a stack address, inside the known stack
    const auto* frame = reinterpret_cast<const uint64_t*>(fp);
    uint64_t next = frame[0];
    uint64_t ret = frame[1];
    if (ret == 0) break;
    frames[count++] = ret;
    if (next <= fp) break;
    fp = next;
  }
  return count;
}

// The return addresses above the signal frame, as native_backtrace() finds them: frames[0] is
// already the exact pc from the ucontext, the frames up to it in the trace are our own (handler,
// signal trampoline). Async-signal-safe (see native_backtrace).
uint32_t unwind_frames(uint64_t* frames, uint64_t pc) {
  uint64_t trace[kCrashFrames + kOwnFrames];
  int depth = native_backtrace(trace, static_cast<int>(kCrashFrames + kOwnFrames));
  int start = -1;
  for (int i = 0; i < depth && i < kOwnFrames; ++i) {
    if (trace[i] == pc) {
      start = i;
      break;
    }
  }
  uint32_t count = 1;
  if (start >= 0) {
    for (int i = start + 1; i < depth && count < kCrashFrames; ++i) {
      frames[count++] = trace[i];
    }
  }
  return count;
}

struct Trace {
  uint64_t* frames;
  int size;
  int depth;
};

_Unwind_Reason_Code note_frame(_Unwind_Context* context, void* raw) {
  auto* trace = static_cast<Trace*>(raw);
  if (trace->depth == trace->size) return _URC_END_OF_STACK;
  auto ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;  // the outermost frame (_start) has none
  trace->frames[trace->depth++] = ip;
  return _URC_NO_REASON;
}

// Whether the process runs an initialised CPython whose threads we can dump. Async-signal-safe.
bool python_dumpable() {
  if (g_py_initialized == nullptr || (g_py_dump == nullptr && !python_frames_readable())) {
    return false;
  }
  return g_py_initialized() != 0;
}

}  // namespace

// libgcc's unwinder, linked into the agent (-static-libgcc) and hidden, rather than glibc's
// backtrace(), which dlopens libgcc_s on its first call: that took 0.3 to 0.5 ms in every process
// at start-up. Async-signal-safe once called once: it finds unwind tables lock-free through
// _dl_find_object, and its one-time register table is set up then.
int native_backtrace(uint64_t* frames, int size) {
  Trace trace{frames, size, 0};
  _Unwind_Backtrace(note_frame, &trace);
  return trace.depth;
}

// Async-signal-safe.
size_t format_decimal(char* out, uint64_t value) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  return n;
}

void prepare_crash_record() {
  // The unwinder's one-time set-up (a pthread_once), never first in a handler.
  uint64_t warm_up[1];
  native_backtrace(warm_up, 1);

  g_py_dump = reinterpret_cast<DumpThreadsFn>(dlsym(RTLD_DEFAULT, "_Py_DumpTracebackThreads"));
  g_py_initialized = reinterpret_cast<IsInitializedFn>(dlsym(RTLD_DEFAULT, "Py_IsInitialized"));
  if (g_py_initialized != nullptr && g_py_dump == nullptr) prepare_python_frames();
}

// Async-signal-safe.
void fill_crash_record(CrashRecord& record, const siginfo_t* info, const void* ucontext) {
  record.signo = info->si_signo;
  record.code = info->si_code;
  record.tid = static_cast<int32_t>(syscall(SYS_gettid));
  if (info->si_code > 0) {
    // Raised by the kernel for a fault: si_addr is meaningful (0 for SI_KERNEL faults).
    record.fault_addr = reinterpret_cast<uint64_t>(info->si_addr);
    record.sender_pid = 0;
  } else {
    record.fault_addr = 0;
    record.sender_pid = info->si_pid;
  }
  // The kernel writes at most 16 bytes (TASK_COMM_LEN), its NUL included.
  static_assert(common::kThreadNameSize >= 16);
  prctl(PR_GET_NAME, record.thread_name, 0, 0, 0);

  Registers regs = read_registers(ucontext, record.gregs, sizeof(record.gregs) / sizeof(uint64_t));
  record.pc = regs.pc;
  record.sp = regs.sp;
  record.fp = regs.fp;
  StackBounds stack = current_thread_stack();
  record.stack_lo = stack.lo;
  record.stack_hi = stack.hi;
  record.frames[0] = regs.pc;
  record.frame_count = 1;
}

// Async-signal-safe.
void fill_native_stack(CrashRecord& record) {
  uint32_t count = unwind_frames(record.frames, record.pc);
  record.frame_count = count;
  if (count < 2) fill_native_stack_by_frame_pointers(record);
}

// Async-signal-safe.
void fill_native_stack_by_frame_pointers(CrashRecord& record) {
  Registers regs;
  regs.pc = record.pc;
  regs.sp = record.sp;
  regs.fp = record.fp;
  StackBounds stack{record.stack_lo, record.stack_hi};
  record.frame_count = walk_frame_pointers(record.frames, 1, regs, stack);
}

// Async-signal-safe (faulthandler's own dump, which CPython runs from its handler).
bool write_python_traceback(int fd) {
  if (!python_dumpable()) return false;
  if (g_py_dump == nullptr) return write_python_frames(fd);
  const char* error = g_py_dump(fd, nullptr, nullptr);
  if (error != nullptr) {
    // Say why in the file ("unable to get the interpreter state"), as faulthandler does.
    ssize_t ignored = write(fd, error, strlen(error));
    ignored = write(fd, "\n", 1);
    (void)ignored;
  }
  return error == nullptr;
}

// Async-signal-safe.
void dump_python_traceback(uint32_t& dumped) {
  dumped = 0;
  if (!python_dumpable()) return;
  char path[kRunPathSize];
  run_file_path(path, "agent/python-", getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  // Set before the dump: CPython's dumper faults on a torn structure (it reads through its
  // pointers), and the frames it wrote before that are kept.
  std::atomic_ref<uint32_t>(dumped).store(1, std::memory_order_relaxed);
  dumped = write_python_traceback(fd) ? 1 : 0;
  close(fd);
}

}  // namespace traindoc::agent
