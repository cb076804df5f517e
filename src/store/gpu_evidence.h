// The GPU part of the evidence model: devices as NVML names them, their samples, the processes
// that held memory on them, driver events (Xid, ECC), and each job process's CUDA environment.
// Written by the supervisor's GPU sampler through StoreWriter, read back by read_evidence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace traindoc::store {

// One GPU, as NVML enumerates it (NVML's index is PCI bus order, not CUDA's device order).
struct GpuDevice {
  int index = 0;
  std::string uuid;        // "GPU-5f1c2b9e-..."
  std::string pci_bus_id;  // "00000000:06:00.0"
  std::string name;        // "NVIDIA H100 80GB HBM3"
  uint64_t memory_total = 0;

  bool operator==(const GpuDevice&) const = default;
};

// A device at one moment. Values a driver does not support stay empty.
struct GpuSample {
  int64_t t_ns = 0;
  int device = 0;  // GpuDevice::index
  std::optional<uint64_t> memory_used;
  std::optional<int> utilization_gpu;     // percent of time a kernel ran
  std::optional<int> utilization_memory;  // percent of time memory was read or written
  std::optional<int> temperature_c;
  std::optional<int> power_mw;
  std::optional<uint64_t> throttle_reasons;  // nvmlClocksThrottleReason* bits
  std::optional<uint64_t> ecc_corrected;     // volatile totals, since the driver loaded
  std::optional<uint64_t> ecc_uncorrected;
  std::string error;  // "" or why the device could not be read ("GPU is lost")

  bool operator==(const GpuSample&) const = default;
};

// A process's memory on one device at one moment.
struct GpuProcessSample {
  int64_t t_ns = 0;
  int device = 0;
  int nvml_pid = 0;          // as NVML reported it (a host pid, even inside a container)
  int pid = 0;               // the same process in traindoc's pid namespace; 0 when not visible
  uint64_t start_ticks = 0;  // with pid, the process; 0 when not visible
  std::optional<uint64_t> used_bytes;  // empty when NVML cannot say (NVML_VALUE_NOT_AVAILABLE)
  std::string type;                    // "compute" or "graphics"

  bool operator==(const GpuProcessSample&) const = default;
};

// Each distinct process seen on a GPU, once: the job's and those outside it.
struct GpuProcess {
  int nvml_pid = 0;
  int pid = 0;  // 0 when not visible from traindoc's pid namespace
  uint64_t start_ticks = 0;
  int64_t first_seen_ns = 0;
  std::string cmdline;  // "" when not visible

  bool operator==(const GpuProcess&) const = default;
};

// A driver event: an Xid error, an ECC error, a device lost.
struct GpuEvent {
  int64_t t_ns = 0;
  int device = 0;
  std::string type;   // "xid", "ecc-single-bit", "ecc-double-bit", "gpu-lost", ...
  uint64_t code = 0;  // the Xid for "xid"; 0 otherwise
  std::string text;

  bool operator==(const GpuEvent&) const = default;
};

// The CUDA variables of a job process, from /proc/<pid>/environ when it was first seen.
struct CudaEnv {
  int pid = 0;
  uint64_t start_ticks = 0;
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES; empty when unset
  std::string device_order;                    // CUDA_DEVICE_ORDER; "" when unset
  // PYTORCH_CUDA_ALLOC_CONF, else PYTORCH_ALLOC_CONF (the name newer PyTorch reads); empty when
  // neither is set, and in files older than schema 4.
  std::optional<std::string> alloc_conf;

  bool operator==(const CudaEnv&) const = default;
};

struct GpuEvidence {
  // Whether NVML was loaded, and a sentence on it ("NVML of driver 580.65.06, 4 GPU(s)" or
  // "NVML not found: libnvidia-ml.so.1: cannot open shared object file"). "" in files of
  // schema 2 and older, which have no GPU evidence.
  bool nvml_loaded = false;
  std::string nvml_status;
  // Whether the machine had NVIDIA's device nodes (/dev/nvidiactl): a GPU machine, even where
  // NVML could not be loaded (schema 4; false in older files).
  bool driver_devices = false;
  std::vector<GpuDevice> devices;
  std::vector<GpuSample> samples;
  std::vector<GpuProcessSample> process_samples;
  std::vector<GpuProcess> processes;
  std::vector<GpuEvent> events;
  std::vector<CudaEnv> cuda_env;

  bool operator==(const GpuEvidence&) const = default;
};

}  // namespace traindoc::store
