// What the GPU rules share: CUDA device numbers reconciled with NVML's devices, who held memory
// on a device at a moment, the failures a process printed (with the process that printed
// them), and the meaning of Xid codes. Pure; used by the rule_gpu_* and rule_cuda_error rules.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/rule_context.h"
#include "analysis/traceback.h"

namespace traindoc::analysis {

// CUDA_VISIBLE_DEVICES against the NVML devices: the NVML indices in CUDA's order. Unset (nullopt)
// means every device. Entries are indices, or UUIDs and unique UUID prefixes ("GPU-5f1c", with
// or without "GPU-"); as CUDA does, the list stops at the first entry that names no device
// (so "" and "-1" hide them all). Indices count in PCI bus order: that is CUDA's order with
// CUDA_DEVICE_ORDER=PCI_BUS_ID, and also by default on nodes of identical GPUs
// (device_order_caveat says when it may not be).
std::vector<int> visible_devices(const std::optional<std::string>& cuda_visible_devices,
                                 const std::vector<store::GpuDevice>& devices);

// A job process's CUDA variables as it started; nullptr when none were recorded.
const store::CudaEnv* find_cuda_env(const store::GpuEvidence& gpu, const store::ProcessRecord& p);

// A sentence for the evidence when `process`'s CUDA device numbers may not be NVML's: its
// CUDA_DEVICE_ORDER is not PCI_BUS_ID (CUDA's default is fastest first), the GPUs differ in model
// (on identical GPUs CUDA breaks the tie by PCI bus id, so the orders agree), and its
// CUDA_VISIBLE_DEVICES does not name every GPU by UUID. nullopt when the mapping holds.
std::optional<std::string> device_order_caveat(const RuleContext& context,
                                               const ProcessSummary& process);

// The NVML device a job process's CUDA device `cuda_index` is; nullopt when it is unknown.
std::optional<int> nvml_device(const RuleContext& context, const ProcessSummary& process,
                               int cuda_index);

// The device a rank is meant to use: its local rank's device among those it sees (one GPU per
// rank, as DDP expects), or the only one it sees. nullopt for processes that are not ranks of a
// job of several ranks, and when nothing is known.
std::optional<int> own_device(const RuleContext& context, const ProcessSummary& process);

// "GPU 0 (00000000:06:00.0)"; "GPU 3" when NVML did not list it.
std::string device_label(const store::GpuEvidence& gpu, int device);
const store::GpuDevice* find_device(const store::GpuEvidence& gpu, int device);

// The processes on `device` in the NVML round closest before `t_ns` (or the first after, when
// none came before), largest first.
std::vector<store::GpuProcessSample> holders_at(const store::GpuEvidence& gpu, int device,
                                                int64_t t_ns);

// The pids NVML listed on the GPUs that traindoc's pid namespace does not have, when they are
// those of another pid namespace that hides the job's own: none of the job's processes was listed,
// and the job used a GPU (it set CUDA_VISIBLE_DEVICES, printed GPU errors, or the unknown pids
// appeared on the GPUs after sampling began, as the job's would). Most often traindoc runs in a
// container and the driver gives host pids. Empty otherwise.
std::vector<int> pids_of_another_namespace(const store::Evidence& evidence);
// What follows such a pid where it is named.
inline constexpr const char* kOtherNamespace =
    " (a pid of another pid namespace: maybe one of the job's own processes)";

// "rank 1 (pid 4242)", "pid 777 outside the job (python3 other.py)", "pid 98765 (not visible
// from traindoc's pid namespace: another container or user)", or with `other_namespace` (see
// pids_of_another_namespace) "pid 98765 (a pid of another pid namespace: maybe one of the job's
// own processes)".
std::string holder_name(const RuleContext& context, const store::GpuProcessSample& holder,
                        bool other_namespace = false);
// The job process that a GPU sample names; nullptr for processes outside the job.
const ProcessSummary* job_process(const RuleContext& context,
                                  const store::GpuProcessSample& sample);

// Per device, each process's highest memory on it over the run, keyed by (pid, start_ticks) in
// traindoc's namespace, or (-nvml_pid, 0) for processes not visible here.
using ProcessKey = std::pair<int, uint64_t>;
std::map<int, std::map<ProcessKey, uint64_t>> peak_by_device_and_process(
    const store::GpuEvidence& gpu);
// Per device, its highest memory_used over the run.
std::map<int, uint64_t> peak_by_device(const store::GpuEvidence& gpu);

// A failure a process printed: a Python traceback whose exception has signatures of `kinds`,
// with the matches' fields merged (the first of each name wins) and the process it belongs to.
struct PrintedFailure {
  const ProcessSummary* process = nullptr;
  const PythonTraceback* traceback = nullptr;
  std::optional<FindingKind> kind;  // the first matching signature's kind
  std::vector<SignatureMatch> matches;
  std::map<std::string, std::string> fields;
  int64_t t_ns = 0;
};
// The first such failure of each process, in time order. The process is the rank the launcher
// prefix names, else the only rank, else the first process to exit non-zero after it.
std::vector<PrintedFailure> printed_failures(const RuleContext& context,
                                             const std::vector<PythonTraceback>& tracebacks,
                                             const std::vector<std::optional<FindingKind>>& kinds);

// The log lines printed shortly before a traceback by the same process (same stream, same
// launcher prefix): kernels' assertions, allocators' warnings that precede the exception; with
// `after_too`, also those printed shortly after it (kernels' assertions flushed at exit).
std::vector<const store::LogLine*> lines_near(const store::Evidence& evidence,
                                              const PythonTraceback& traceback, bool after_too);

// The NVML device a printed failure happened on: the CUDA index its text names (PyTorch "GPU 1",
// TensorFlow "GPU_1_bfc", JAX "device ordinal 1") in the process's own numbering, else the
// device the rank is meant to use, else the only device it held memory on.
std::optional<int> failure_device(const RuleContext& context, const PrintedFailure& failure);

std::optional<uint64_t> field_bytes(const std::map<std::string, std::string>& fields,
                                    const std::string& name);

// What an Xid means and whose fault it usually is (NVIDIA's Xid catalog).
struct XidMeaning {
  std::string text;       // "GPU has fallen off the bus"
  bool hardware = false;  // false: the application's own fault or a consequence
  std::string action;     // what to do
};
XidMeaning xid_meaning(uint64_t xid);

// Each NVML device with its peak and the processes that held memory on it.
std::vector<GpuSummary> summarize_gpus(const RuleContext& context);

// Sentences for missing_evidence: NVML could not be loaded though the job used a GPU (it set
// CUDA_VISIBLE_DEVICES, or printed CUDA errors; CPU-only runs are not nagged), and the devices
// whose reads NVML refused.
std::vector<std::string> gpu_missing_evidence(const store::Evidence& evidence);

}  // namespace traindoc::analysis
