// Samples the GPUs through NVML. Supervisor process, main loop thread.
#include "supervisor/gpu/gpu_sampler.h"

#include <unistd.h>

#include <cstdlib>

#include "supervisor/redact.h"

namespace traindoc::supervisor {
namespace {

std::string library_path(const std::string& requested) {
  if (!requested.empty()) return requested;
  const char* path = getenv("TRAINDOC_NVML_LIBRARY");
  return path != nullptr && *path != '\0' ? path : kNvmlDefaultLibrary;
}

// The host's /proc inside a container: TRAINDOC_HOST_PROC, else where monitoring agents usually
// mount it. The resolver checks that traindoc itself appears there before it trusts it.
std::string host_proc_path() {
  const char* path = getenv("TRAINDOC_HOST_PROC");
  return path != nullptr && *path != '\0' ? path : "/host/proc";
}

store::GpuEvent event_of(const nvmlEventData_t& data, int device, int64_t t_ns) {
  store::GpuEvent event;
  event.t_ns = t_ns;
  event.device = device;
  if (data.eventType & TRAINDOC_NVML_EVENT_XID) {
    event.type = "xid";
    event.code = data.eventData;
    event.text = "Xid " + std::to_string(data.eventData);
  } else if (data.eventType & TRAINDOC_NVML_EVENT_DOUBLE_BIT_ECC) {
    event.type = "ecc-double-bit";
    event.text = "uncorrectable (double-bit) ECC error";
  } else if (data.eventType & TRAINDOC_NVML_EVENT_SINGLE_BIT_ECC) {
    event.type = "ecc-single-bit";
    event.text = "corrected (single-bit) ECC error";
  } else {
    event.type = "gpu-lost";
    event.text = "the GPU became unavailable";
  }
  return event;
}

// Every NVIDIA driver makes it; a container given a GPU has it too.
constexpr const char* kDriverDevice = "/dev/nvidiactl";

}  // namespace

GpuSampler::GpuSampler(const std::string& library)
    : m_library(library_path(library)), m_driver_devices(access(kDriverDevice, F_OK) == 0) {
  m_nvml = NvmlLibrary::open(m_library, m_error);
  if (!m_nvml) return;
  m_pids = GpuPidResolver(host_proc_path());
  m_driver = m_nvml->driver_version();
  unsigned count = 0;
  if (nvmlReturn_t status = m_nvml->device_count(count); status != NVML_SUCCESS) {
    m_error = "nvmlDeviceGetCount failed: " + m_nvml->error_string(status);
    m_nvml.reset();
    return;
  }
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t handle = nullptr;
    if (m_nvml->device(i, handle) != NVML_SUCCESS) continue;
    nvmlMemory_t memory{};
    m_nvml->memory(handle, memory);
    m_handles.push_back(handle);
    m_devices.push_back({static_cast<int>(i), m_nvml->uuid(handle), m_nvml->pci_bus_id(handle),
                         m_nvml->name(handle), memory.total});
  }
  m_lost.assign(m_devices.size(), false);
  // Before the job starts: the driver delivers only events that happen after registration.
  m_events = m_nvml->register_events(m_handles);
  keep_device_files_from_children();
}

GpuSampler::~GpuSampler() = default;

std::string GpuSampler::status() const {
  if (!m_nvml) {
    return "NVML not loaded (" + m_library + "): " + m_error +
           (m_driver_devices
                ? std::string("; NVIDIA's device nodes are present (") + kDriverDevice + ")"
                : "");
  }
  std::string text = "NVML of driver " + (m_driver.empty() ? "?" : m_driver) + " (" + m_library +
                     "): " + std::to_string(m_devices.size()) + " GPU(s)";
  if (!m_events) text += ", no driver events (Xid, ECC) on this driver";
  if (m_pids.maps_host_pids()) {
    text += ", NVML's pids mapped to traindoc's pid namespace through " + m_pids.host_proc();
  }
  if (m_nvml->process_stride() != 0) {
    text += ", process entries of " + std::to_string(m_nvml->process_stride()) + " bytes from " +
            m_nvml->process_function();
  }
  return text;
}

store::NvmlFacts GpuSampler::preflight() {
  store::NvmlFacts out;
  out.loaded = loaded();
  out.status = status();
  if (!m_nvml) return out;
  out.driver_version = m_driver;
  out.cuda_version = m_nvml->cuda_driver_version();
  GpuPidResolver pids(host_proc_path());
  for (size_t i = 0; i < m_handles.size(); ++i) {
    store::GpuFacts& gpu = out.gpus.emplace_back();
    gpu.index = m_devices[i].index;
    gpu.name = m_devices[i].name;
    gpu.uuid = m_devices[i].uuid;
    gpu.total = m_devices[i].memory_total;
    nvmlMemory_t memory{};
    if (m_nvml->memory(m_handles[i], memory) == NVML_SUCCESS) gpu.used = memory.used;
    gpu.compute_mode = m_nvml->compute_mode(m_handles[i]);
    for (NvmlProcessKind kind : {NvmlProcessKind::kCompute, NvmlProcessKind::kGraphics}) {
      for (const NvmlProcess& p : m_nvml->processes(m_handles[i], kind).processes) {
        bool first = false;
        store::GpuProcess process = pids.resolve(static_cast<int>(p.pid), {}, 0, first);
        gpu.processes.push_back(
            {static_cast<int>(p.pid), redact_command_line(process.cmdline), p.used_bytes});
      }
    }
  }
  return out;
}

void GpuSampler::lost(size_t index, int64_t t_ns, const std::string& why, GpuRound& round) {
  if (m_lost[index]) return;
  m_lost[index] = true;
  round.events.push_back({t_ns, m_devices[index].index, "gpu-lost", 0, why});
}

void GpuSampler::sample_device(size_t index, int64_t t_ns, bool slow,
                               const std::vector<int>& job_pids, GpuRound& round,
                               std::vector<int>& listed) {
  nvmlDevice_t handle = m_handles[index];
  store::GpuSample& sample = round.samples.emplace_back();
  sample.t_ns = t_ns;
  sample.device = m_devices[index].index;
  nvmlMemory_t memory{};
  if (nvmlReturn_t status = m_nvml->memory(handle, memory); status != NVML_SUCCESS) {
    sample.error = m_nvml->error_string(status);
    if (status == NVML_ERROR_GPU_IS_LOST) lost(index, t_ns, sample.error, round);
    return;
  }
  sample.memory_used = memory.used;
  for (NvmlProcessKind kind : {NvmlProcessKind::kCompute, NvmlProcessKind::kGraphics}) {
    NvmlProcessList list = m_nvml->processes(handle, kind);
    // Graphics lists are often unsupported on compute GPUs: that is no failure.
    if (list.status != NVML_SUCCESS && list.status != NVML_ERROR_NOT_SUPPORTED &&
        sample.error.empty()) {
      sample.error = "process list: " + m_nvml->error_string(list.status);
    }
    for (const NvmlProcess& p : list.processes) {
      const int nvml_pid = static_cast<int>(p.pid);
      listed.push_back(nvml_pid);
      bool first = false;
      store::GpuProcess process = m_pids.resolve(nvml_pid, job_pids, t_ns, first);
      if (first) round.new_processes.push_back(process);
      round.processes.push_back({t_ns, sample.device, nvml_pid, process.pid, process.start_ticks,
                                 p.used_bytes,
                                 kind == NvmlProcessKind::kCompute ? "compute" : "graphics"});
    }
  }
  if (!slow) return;
  // The slow rate: what changes slowly or matters only for the overall picture.
  if (std::optional<nvmlUtilization_t> rates = m_nvml->utilization(handle)) {
    sample.utilization_gpu = static_cast<int>(rates->gpu);
    sample.utilization_memory = static_cast<int>(rates->memory);
  }
  sample.temperature_c = m_nvml->temperature_c(handle);
  sample.power_mw = m_nvml->power_mw(handle);
  sample.throttle_reasons = m_nvml->throttle_reasons(handle);
  sample.ecc_corrected = m_nvml->ecc_errors(handle, TRAINDOC_NVML_ECC_CORRECTED);
  sample.ecc_uncorrected = m_nvml->ecc_errors(handle, TRAINDOC_NVML_ECC_UNCORRECTED);
}

void GpuSampler::drain_events(int64_t t_ns, GpuRound& round) {
  // A storm is drained a bounded number at a time: the rest wait for the next round.
  constexpr int kMaxPerRound = 64;
  for (int i = 0; i < kMaxPerRound; ++i) {
    std::optional<nvmlEventData_t> data = m_nvml->next_event();
    if (!data) return;
    int device = -1;
    for (size_t d = 0; d < m_handles.size(); ++d) {
      if (m_handles[d] == data->device) device = m_devices[d].index;
    }
    round.events.push_back(event_of(*data, device, t_ns));
  }
}

GpuRound GpuSampler::sample(int64_t t_ns, bool slow, const std::vector<int>& job_pids) {
  GpuRound round;
  if (!m_nvml) return round;
  if (m_events) drain_events(t_ns, round);
  std::vector<int> listed;
  for (size_t i = 0; i < m_handles.size(); ++i) {
    sample_device(i, t_ns, slow, job_pids, round, listed);
  }
  m_pids.keep_only(listed);
  return round;
}

}  // namespace traindoc::supervisor
