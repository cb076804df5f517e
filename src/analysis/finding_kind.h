// Every kind of finding, with its name in report.json and docs/findings.md (a unit test checks
// that the docs name each kind of this list and no other). Adding a kind is one line here; each
// preflight check of store/preflight.h is a kind too, kPreflight<Name>, "preflight-<name>".
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <span>
#include <string_view>

#include "store/preflight.h"

// X(enumerator, name)
#define TRAINDOC_FINDING_KINDS(X)                  \
  /* crashes */                                    \
  X(kNativeCrash, "native-crash")                  \
  X(kStackOverflow, "stack-overflow")              \
  X(kAbort, "abort")                               \
  X(kFpe, "fpe")                                   \
  X(kIllegalInstruction, "illegal-instruction")    \
  X(kBusError, "bus-error")                        \
  X(kShmExhausted, "shm-exhausted")                \
  X(kWorkerCrash, "worker-crash")                  \
  /* process ends */                               \
  X(kHostOomKilled, "host-oom-killed")             \
  X(kStopRequested, "stop-requested")              \
  X(kJobIdle, "job-idle")                          \
  X(kKilledExternally, "killed-externally")        \
  X(kWorkerExit, "worker-exit")                    \
  X(kPythonException, "python-exception")          \
  X(kNonzeroExit, "nonzero-exit")                  \
  X(kCudaUnavailable, "cuda-unavailable")          \
  X(kLauncherExit, "launcher-exit")                \
  X(kLauncherBug, "launcher-bug")                  \
  /* known texts */                                \
  X(kLabelOutOfRange, "label-out-of-range")        \
  X(kIndexOutOfRange, "index-out-of-range")        \
  X(kWorkerTimeout, "worker-timeout")              \
  X(kRendezvousTimeout, "rendezvous-timeout")      \
  X(kDdpUnusedParameters, "ddp-unused-parameters") \
  X(kDdpModelMismatch, "ddp-model-mismatch")       \
  X(kPortInUse, "port-in-use")                     \
  X(kFdExhausted, "fd-exhausted")                  \
  X(kProcessLimit, "process-limit")                \
  X(kNetworkUnreachable, "network-unreachable")    \
  X(kDiskFull, "disk-full")                        \
  X(kCheckpointCorrupt, "checkpoint-corrupt")      \
  X(kBadArguments, "bad-arguments")                \
  X(kHostAllocFailed, "host-alloc-failed")         \
  X(kFrameworkWarning, "framework-warning")        \
  /* collectives */                                \
  X(kCollectiveMismatch, "collective-mismatch")    \
  X(kCollectiveOrder, "collective-order")          \
  X(kCollectiveMissing, "collective-missing")      \
  X(kUnevenInputs, "uneven-inputs")                \
  X(kPeerExited, "peer-exited")                    \
  /* GPU memory and devices */                     \
  X(kGpuOom, "gpu-oom")                            \
  X(kGpuFragmentation, "gpu-fragmentation")        \
  X(kForeignGpuContext, "foreign-gpu-context")     \
  X(kGpuImbalance, "gpu-imbalance")                \
  X(kDeviceSideAssert, "device-side-assert")       \
  X(kCudaIllegalAccess, "cuda-illegal-access")     \
  X(kHardwareFault, "hardware-fault")              \
  /* memory */                                     \
  X(kMemoryLeak, "memory-leak")

namespace traindoc::analysis {

enum class FindingKind : uint8_t {
#define TRAINDOC_FINDING_KIND_ENUMERATOR(enumerator, name) enumerator,
  TRAINDOC_FINDING_KINDS(TRAINDOC_FINDING_KIND_ENUMERATOR)
#undef TRAINDOC_FINDING_KIND_ENUMERATOR
#define TRAINDOC_PREFLIGHT_KIND_ENUMERATOR(name, text) kPreflight##name,
      TRAINDOC_PREFLIGHT_CHECKS(TRAINDOC_PREFLIGHT_KIND_ENUMERATOR)
#undef TRAINDOC_PREFLIGHT_KIND_ENUMERATOR
};

std::string_view to_string(FindingKind kind);
// The kind of that name; none for a name of no kind.
std::optional<FindingKind> finding_kind_named(std::string_view name);
// Every kind, in the order above.
std::span<const FindingKind> all_finding_kinds();
std::ostream& operator<<(std::ostream& out, FindingKind kind);

// The finding kind of a preflight check: preflight-<its name>.
FindingKind preflight_kind(store::PreflightCheck check);

}  // namespace traindoc::analysis
