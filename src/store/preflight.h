// The checks of `traindoc check` and of the start of `traindoc run`: the facts they read of the
// machine and the command (probed by the supervisor room), and their results (made by analysis,
// kept in run.db's preflight_checks table). Plain data. Adding a check is one line in
// TRAINDOC_PREFLIGHT_CHECKS (its finding kind, preflight-<name>, follows), its rule in
// analysis/preflight_checks.cpp, its words and a row in docs/check.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// X(Name, "name"): the check kPreflight##Name of finding kind "preflight-" name.
#define TRAINDOC_PREFLIGHT_CHECKS(X)                                                       \
  X(ShmMissing, "shm-missing")                        /* no /dev/shm at all */             \
  X(ShmNotTmpfs, "shm-not-tmpfs")                     /* /dev/shm on a disk */             \
  X(ShmSmall, "shm-small")                            /* less than the workers need */     \
  X(GpuMemoryTaken, "gpu-memory-taken")               /* other processes hold a GPU */     \
  X(GpuExclusiveTaken, "gpu-exclusive-taken")         /* exclusive-process and taken */    \
  X(GpuProhibited, "gpu-prohibited")                  /* compute mode prohibited */        \
  X(VisibleDevicesInvalid, "visible-devices-invalid") /* CUDA_VISIBLE_DEVICES entry */     \
  X(RanksExceedGpus, "ranks-exceed-gpus")             /* more local ranks than GPUs */     \
  X(HostMemoryLow, "host-memory-low")                 /* MemAvailable */                   \
  X(CgroupMemoryLow, "cgroup-memory-low")             /* the memory cgroup's headroom */   \
  X(NofileLow, "nofile-low")                          /* RLIMIT_NOFILE */                  \
  X(MemlockLow, "memlock-low")                        /* RLIMIT_MEMLOCK with InfiniBand */ \
  X(StackSmall, "stack-small")                        /* RLIMIT_STACK */                   \
  X(CoreDumpsLarge, "core-dumps-large")               /* cores as large as the ranks */    \
  X(PythonMissing, "python-missing")                  /* the command's interpreter */      \
  X(TorchMissing, "torch-missing")                    /* no torch for that Python */       \
  X(TorchOtherPython, "torch-other-python")           /* torch built for another Python */ \
  X(TorchCudaNewer, "torch-cuda-newer")               /* CUDA build above the driver's */  \
  X(TorchCpuOnly, "torch-cpu-only")                   /* GPUs here, torch without CUDA */  \
  X(TorchrunRedirects, "torchrun-redirects")          /* torch 1.13 on Python 3.11 */      \
  X(MasterAddrUnresolved, "master-addr-unresolved")   /* MASTER_ADDR */                    \
  X(MasterPortInvalid, "master-port-invalid")         /* not 0 to 65535 */                 \
  X(RendezvousPortMissing, "rendezvous-port-missing") /* static endpoint, host alone */    \
  X(MasterPortTaken, "master-port-taken")             /* MASTER_PORT bound here */         \
  X(MasterPortUnreachable, "master-port-unreachable") /* no answer from another node */    \
  X(SocketIfnameMissing, "socket-ifname-missing")     /* *_SOCKET_IFNAME */

namespace traindoc::store {

enum class PreflightCheck : uint8_t {
#define TRAINDOC_PREFLIGHT_ENUMERATOR(name, text) k##name,
  TRAINDOC_PREFLIGHT_CHECKS(TRAINDOC_PREFLIGHT_ENUMERATOR)
#undef TRAINDOC_PREFLIGHT_ENUMERATOR
};

inline constexpr PreflightCheck kAllPreflightChecks[] = {
#define TRAINDOC_PREFLIGHT_VALUE(name, text) PreflightCheck::k##name,
    TRAINDOC_PREFLIGHT_CHECKS(TRAINDOC_PREFLIGHT_VALUE)
#undef TRAINDOC_PREFLIGHT_VALUE
};
inline constexpr size_t kPreflightCheckCount = std::size(kAllPreflightChecks);

std::string_view to_string(PreflightCheck check);
std::optional<PreflightCheck> preflight_check_named(std::string_view name);
std::span<const PreflightCheck> all_preflight_checks();

// kWillFail: the job cannot get past it as it is; kMayFail: it fails under a load that is
// common for training (the size of its batches, its workers, a crash).
enum class Verdict : uint8_t { kWillFail, kMayFail };

std::string_view to_string(Verdict verdict);  // "will-fail", "may-fail"
std::optional<Verdict> verdict_named(std::string_view name);

// One check that found a trap. The numbers' units are the check's own (docs/check.md): bytes, a
// count, a limit, a version as a number (a CUDA version as NVML gives it, 12040 for 12.4; a
// Python version as 100 * major + minor, 311).
struct PreflightResult {
  PreflightCheck check = PreflightCheck::kShmSmall;
  Verdict verdict = Verdict::kMayFail;
  std::optional<int64_t> measured;   // what was found
  std::optional<int64_t> threshold;  // what it falls short of, or exceeds
  std::optional<int64_t> total;      // the whole it is part of: a GPU's memory, a hard limit
  std::optional<int> device;         // a GPU's NVML index
  std::optional<int> pid;            // a process that holds it
  std::string subject;  // an identifier: a path, a host, an interface, a version, a command

  bool operator==(const PreflightResult&) const = default;
};

// ---- the facts ----------------------------------------------------------------------------------

struct ShmFacts {
  bool exists = false;
  bool tmpfs = false;
  uint64_t total = 0;
  uint64_t free = 0;
};

struct MemoryFacts {
  uint64_t mem_total = 0;
  std::optional<uint64_t> mem_available;  // unset on kernels before 3.14
  uint64_t swap_total = 0;
  uint64_t swap_free = 0;
  int cgroup_version = 0;              // 0: no memory cgroup found
  std::optional<uint64_t> cgroup_max;  // unset: no limit
  std::optional<uint64_t> cgroup_current;
};

// A resource limit; unset values are RLIM_INFINITY.
struct Limit {
  std::optional<uint64_t> soft;
  std::optional<uint64_t> hard;

  bool operator==(const Limit&) const = default;
};

struct LimitFacts {
  Limit nofile;
  Limit memlock;             // bytes
  Limit stack;               // bytes
  Limit core;                // bytes
  std::string core_pattern;  // /proc/sys/kernel/core_pattern
  bool infiniband = false;   // /sys/class/infiniband has a device
};

struct GpuProcessFacts {
  int pid = 0;          // as NVML gives it
  std::string command;  // its command line where /proc shows it; "" otherwise
  std::optional<uint64_t> used_bytes;
};

struct GpuFacts {
  int index = 0;
  std::string name;
  std::string uuid;
  uint64_t total = 0;
  uint64_t used = 0;
  std::optional<int> compute_mode;  // NVML's: 0 default, 2 prohibited, 3 exclusive-process
  std::vector<GpuProcessFacts> processes;
};

struct NvmlFacts {
  bool loaded = false;
  std::string status;  // why not, or the driver and devices
  std::string driver_version;
  std::optional<int> cuda_version;  // the driver's, 12040 for 12.4
  std::vector<GpuFacts> gpus;
};

// What the command line says, read without running it.
enum class Launcher : uint8_t { kNone, kPython, kTorchrun, kOther };
std::string_view to_string(Launcher launcher);

struct CommandFacts {
  Launcher launcher = Launcher::kNone;
  std::string program;  // as the command gives it
  std::string script;   // the Python script, "" for -m or -c or none
  bool script_imports_torch = false;
  bool script_uses_cuda = false;      // it names cuda or nccl: it means to train on a GPU
  std::optional<int> nproc_per_node;  // torchrun's; "gpu" or "auto" read as the GPUs visible
  bool nproc_from_gpus = false;
  bool standalone = false;    // torchrun --standalone: a rendezvous of its own, here
  std::optional<int> nnodes;  // the largest of a MIN:MAX range
  std::optional<int> node_rank;
  std::optional<int> redirects;  // torchrun's --redirects, where given (a number)
  bool redirects_given = false;
  std::optional<int> workers;      // --workers, --num-workers, --num_workers, -j
  std::optional<int> batch_size;   // --batch-size, --batch_size, -b
  std::string master_addr;         // --master_addr/--master-addr, --rdzv_endpoint's host
  std::optional<int> master_port;  // 0 to 65535
  // The option and value of a port given that is none (above 65535, negative, not a number):
  // "--master_port=70000"; "" when none.
  std::string port_invalid;
  bool endpoint_without_port = false;  // --rdzv_endpoint named a host alone
  std::string rdzv_backend;            // torchrun's --rdzv_backend; "" when not given (static)
};

struct PythonFacts {
  std::string interpreter;  // the file that will run, "" when not found
  std::string version;      // "3.11" from its name, pyvenv.cfg or its lib folder; "" unknown
  std::string torch_dir;    // the torch package it will import, "" when none
  std::string torch_version;
  std::string torch_cuda;    // "12.4"; "" for a CPU-only build
  std::string torch_python;  // the Python torch's extension was built for: "3.11"
  std::string nccl_version;  // from the nvidia-nccl wheel or the system's library; ""
};

struct NetworkFacts {
  std::string master_addr;  // from the environment or the command line
  bool master_addr_resolved = false;
  bool master_addr_local = false;  // one of this machine's addresses
  std::optional<int> master_port;  // 0 to 65535
  // Where the port given is none: the option or variable and its value ("MASTER_PORT=99999").
  std::string port_invalid;
  // torchrun's static rendezvous (its default) given an endpoint without a port: it refuses it.
  bool endpoint_port_missing = false;
  bool port_checked = false;
  bool port_in_use = false;
  // Where this node is not the rendezvous host's (a --node_rank above 0, or the host is not this
  // machine): a TCP connect to its port, closed once made. Its errno (0: connected, ECONNREFUSED:
  // nothing listens yet, ETIMEDOUT: no answer within the wait), unset where none was tried; and
  // the milliseconds it took.
  std::optional<int> connect_error;
  double connect_ms = 0;
  // Each *_SOCKET_IFNAME set: the variable, its value, and whether an interface matches it.
  struct Ifname {
    std::string variable;
    std::string value;
    bool matches = false;
  };
  std::vector<Ifname> ifnames;
  std::vector<std::string> interfaces;  // this machine's
};

struct PreflightFacts {
  ShmFacts shm;
  MemoryFacts memory;
  LimitFacts limits;
  NvmlFacts nvml;
  std::string cuda_visible_devices;  // "" when unset
  bool cuda_visible_devices_set = false;
  CommandFacts command;
  PythonFacts python;
  NetworkFacts network;
};

}  // namespace traindoc::store
