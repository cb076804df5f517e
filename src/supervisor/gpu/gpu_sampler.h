// Samples the GPUs through NVML for the supervisor: devices once, then at each interval every
// device's memory and the processes on it (the job's and any other), at the slow rate also
// utilization, temperature, power, throttle reasons and ECC counts, and the driver's events
// (Xid, ECC) without ever waiting. Supervisor process, main loop thread. Never throws: a machine
// without NVML gives a sampler that is not loaded, and failures become evidence.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/gpu_evidence.h"
#include "store/preflight.h"
#include "supervisor/gpu/gpu_pid_resolver.h"
#include "supervisor/gpu/nvml_library.h"

namespace traindoc::supervisor {

// What one sampling round found, for the store.
struct GpuRound {
  std::vector<store::GpuSample> samples;
  std::vector<store::GpuProcessSample> processes;
  std::vector<store::GpuProcess> new_processes;  // seen for the first time
  std::vector<store::GpuEvent> events;
};

class GpuSampler {
 public:
  // `library`: a path or soname; "" means TRAINDOC_NVML_LIBRARY, else libnvidia-ml.so.1.
  explicit GpuSampler(const std::string& library = "");
  ~GpuSampler();
  GpuSampler(const GpuSampler&) = delete;
  GpuSampler& operator=(const GpuSampler&) = delete;

  bool loaded() const { return m_nvml != nullptr; }
  // Whether NVIDIA's device nodes exist: a GPU machine, whether or not NVML could be loaded
  // (a container given the driver's compute capability only has libcuda, not NVML).
  bool driver_devices() const { return m_driver_devices; }
  // A sentence for run.db: the driver, the devices and the process-list layout, or why NVML
  // is missing.
  std::string status() const;
  const std::vector<store::GpuDevice>& devices() const { return m_devices; }

  // What the preflight checks read of the GPUs now: each device's memory, compute mode and the
  // processes on it with their command lines (redacted), and the driver's CUDA version. Leaves
  // the processes the sampler has seen as they were.
  store::NvmlFacts preflight();

  // `job_pids`: the job's live processes, to map NVML's pids across pid namespaces.
  GpuRound sample(int64_t t_ns, bool slow, const std::vector<int>& job_pids);

 private:
  void sample_device(size_t index, int64_t t_ns, bool slow, const std::vector<int>& job_pids,
                     GpuRound& round, std::vector<int>& listed);
  void drain_events(int64_t t_ns, GpuRound& round);
  void lost(size_t index, int64_t t_ns, const std::string& why, GpuRound& round);

  std::unique_ptr<NvmlLibrary> m_nvml;
  std::string m_library;
  std::string m_error;
  bool m_driver_devices = false;
  std::string m_driver;
  bool m_events = false;
  std::vector<nvmlDevice_t> m_handles;
  std::vector<store::GpuDevice> m_devices;
  std::vector<bool> m_lost;
  GpuPidResolver m_pids;
};

}  // namespace traindoc::supervisor
