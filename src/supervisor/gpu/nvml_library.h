// libnvidia-ml loaded at run time: the entry points traindoc needs, resolved with fallbacks
// across driver versions, and the process lists read robustly (entry layout, retries).
// Supervisor process, main loop thread. Never throws: failures are NVML return codes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/gpu/nvml_api.h"

namespace traindoc::supervisor {

// The library loaded when TRAINDOC_NVML_LIBRARY names none.
inline constexpr const char* kNvmlDefaultLibrary = "libnvidia-ml.so.1";

struct NvmlProcess {
  unsigned pid = 0;
  std::optional<uint64_t> used_bytes;  // empty for NVML_VALUE_NOT_AVAILABLE
};

struct NvmlProcessList {
  nvmlReturn_t status = NVML_SUCCESS;
  std::vector<NvmlProcess> processes;
};

// Which kind of processes a list asks for.
enum class NvmlProcessKind { kCompute, kGraphics };

// The size of one process entry that NVML wrote into `buffer` (filled with kNvmlSentinel before
// the call) for `count` entries: 16, 24 or 32. Drivers have written each of them through the
// same _v3 entry point. `fallback` when the bytes do not tell (one entry: all layouts agree).
inline constexpr unsigned char kNvmlSentinel = 0xAA;
size_t detect_process_stride(const unsigned char* buffer, size_t size, unsigned count,
                             size_t fallback);

// Marks close-on-exec every descriptor of this process open on a file whose path starts with
// `prefix`: the driver's device files that NVML opened must not leak into the job, which the
// supervisor starts after loading NVML. Returns how many it marked.
int keep_device_files_from_children(std::string_view prefix = "/dev/nvidia");

class NvmlLibrary {
 public:
  // dlopens `path` and initializes NVML; nullptr with `error` set when either fails.
  static std::unique_ptr<NvmlLibrary> open(const std::string& path, std::string& error);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  std::string error_string(nvmlReturn_t status) const;
  std::string driver_version() const;
  // The CUDA version the driver supports (12040 for 12.4); nullopt where NVML cannot say.
  std::optional<int> cuda_driver_version() const;
  nvmlReturn_t device_count(unsigned& count) const;
  nvmlReturn_t device(unsigned index, nvmlDevice_t& device) const;
  std::string uuid(nvmlDevice_t device) const;
  std::string name(nvmlDevice_t device) const;
  std::string pci_bus_id(nvmlDevice_t device) const;
  nvmlReturn_t memory(nvmlDevice_t device, nvmlMemory_t& memory) const;
  std::optional<int> compute_mode(nvmlDevice_t device) const;
  // Asks for the count first, then reads with some slack, again while the count grows.
  NvmlProcessList processes(nvmlDevice_t device, NvmlProcessKind kind);
  std::optional<nvmlUtilization_t> utilization(nvmlDevice_t device) const;
  std::optional<int> temperature_c(nvmlDevice_t device) const;
  std::optional<int> power_mw(nvmlDevice_t device) const;
  std::optional<uint64_t> throttle_reasons(nvmlDevice_t device) const;
  // kind: TRAINDOC_NVML_ECC_CORRECTED or _UNCORRECTED; the volatile total.
  std::optional<uint64_t> ecc_errors(nvmlDevice_t device, int kind) const;

  // An event set with every device's Xid, ECC and lost-GPU events that it supports. False when
  // the driver has no event support (then wait_event finds nothing).
  bool register_events(const std::vector<nvmlDevice_t>& devices);
  // The next pending event without waiting (timeout 0); nullopt when none.
  std::optional<nvmlEventData_t> next_event();

  // The entry size of the last process list read, and the entry point that gave it.
  size_t process_stride() const { return m_stride; }
  const std::string& process_function() const { return m_process_function; }

 private:
  struct Api;
  NvmlLibrary(void* handle, std::unique_ptr<Api> api);

  void* m_handle;
  std::unique_ptr<Api> m_api;
  nvmlEventSet_t m_events = nullptr;
  std::vector<unsigned char> m_buffer;  // reused between process lists
  size_t m_stride = 0;
  std::string m_process_function;
};

}  // namespace traindoc::supervisor
