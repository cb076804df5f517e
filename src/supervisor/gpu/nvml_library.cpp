// libnvidia-ml loaded at run time, with fallbacks across driver versions.
// Supervisor process, main loop thread.
#include "supervisor/gpu/nvml_library.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace traindoc::supervisor {
namespace {

constexpr nvmlReturn_t kArgumentVersionMismatch = 25;
constexpr int kListAttempts = 4;
constexpr unsigned kSlack = 4;  // processes come and go between the count and the read
constexpr size_t kLargestEntry = sizeof(nvmlProcessInfo_v3_t);

// The first of `names` the library exports.
void* resolve(void* handle, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (void* symbol = dlsym(handle, name)) return symbol;
  }
  return nullptr;
}

template <typename Fn>
Fn as(void* symbol) {
  return reinterpret_cast<Fn>(symbol);
}

// An entry point of a process list, with the entry size its name promises.
struct ProcessFunction {
  const char* name;
  size_t stride;
  nvmlDeviceGetProcesses_fn fn = nullptr;
};

// Newest first: a driver without _v3 has _v2 or the plain one.
constexpr std::pair<const char*, size_t> kComputeNames[] = {
    {"nvmlDeviceGetComputeRunningProcesses_v3", sizeof(nvmlProcessInfo_v2_t)},
    {"nvmlDeviceGetComputeRunningProcesses_v2", sizeof(nvmlProcessInfo_v2_t)},
    {"nvmlDeviceGetComputeRunningProcesses", sizeof(nvmlProcessInfo_v1_t)}};
constexpr std::pair<const char*, size_t> kGraphicsNames[] = {
    {"nvmlDeviceGetGraphicsRunningProcesses_v3", sizeof(nvmlProcessInfo_v2_t)},
    {"nvmlDeviceGetGraphicsRunningProcesses_v2", sizeof(nvmlProcessInfo_v2_t)},
    {"nvmlDeviceGetGraphicsRunningProcesses", sizeof(nvmlProcessInfo_v1_t)}};

std::string c_string(const char* text, size_t size) {
  return {text, strnlen(text, size)};
}

}  // namespace

struct NvmlLibrary::Api {
  nvmlInit_fn init = nullptr;
  nvmlShutdown_fn shutdown = nullptr;
  nvmlErrorString_fn error_string = nullptr;
  nvmlSystemGetDriverVersion_fn driver_version = nullptr;
  nvmlSystemGetCudaDriverVersion_fn cuda_version = nullptr;
  nvmlDeviceGetCount_fn count = nullptr;
  nvmlDeviceGetHandleByIndex_fn handle = nullptr;
  nvmlDeviceGetString_fn uuid = nullptr;
  nvmlDeviceGetString_fn name = nullptr;
  nvmlDeviceGetPciInfo_fn pci = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory = nullptr;
  nvmlDeviceGetComputeMode_fn compute_mode = nullptr;
  nvmlDeviceGetUtilizationRates_fn utilization = nullptr;
  nvmlDeviceGetTemperature_fn temperature = nullptr;
  nvmlDeviceGetPowerUsage_fn power = nullptr;
  nvmlDeviceGetReasons_fn throttle = nullptr;
  nvmlDeviceGetTotalEccErrors_fn ecc = nullptr;
  nvmlDeviceGetReasons_fn supported_events = nullptr;
  nvmlEventSetCreate_fn event_create = nullptr;
  nvmlDeviceRegisterEvents_fn event_register = nullptr;
  nvmlEventSetWait_fn event_wait = nullptr;
  nvmlEventSetFree_fn event_free = nullptr;
  // Per kind, the entry points still worth trying, newest first; the first that works stays.
  std::vector<ProcessFunction> compute;
  std::vector<ProcessFunction> graphics;
};

size_t detect_process_stride(const unsigned char* buffer, size_t size, unsigned count,
                             size_t fallback) {
  if (count < 2) return fallback;
  size_t written = size;
  while (written > 0 && buffer[written - 1] == kNvmlSentinel) --written;
  // Each entry ends with fields that are never the sentinel's bytes (the memory's high bytes,
  // instance ids of 0xFFFFFFFF or small numbers, a protected-memory count of 0), so the written
  // extent is count * stride exactly; an entry may leave padding unwritten but not its end.
  for (size_t stride :
       {sizeof(nvmlProcessInfo_v2_t), sizeof(nvmlProcessInfo_v1_t), sizeof(nvmlProcessInfo_v3_t)}) {
    if (written == stride * count) return stride;
  }
  return fallback;
}

int keep_device_files_from_children(std::string_view prefix) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  int marked = 0;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    char path[256];
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    ssize_t size = readlink(link.c_str(), path, sizeof(path) - 1);
    if (size <= 0 || !std::string_view(path, static_cast<size_t>(size)).starts_with(prefix)) {
      continue;
    }
    int flags = fcntl(static_cast<int>(fd), F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) == 0 &&
        fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC) == 0) {
      ++marked;
    }
  }
  closedir(dir);
  return marked;
}

NvmlLibrary::NvmlLibrary(void* handle, std::unique_ptr<Api> api)
    : m_handle(handle), m_api(std::move(api)) {}

NvmlLibrary::~NvmlLibrary() {
  if (m_events && m_api->event_free) m_api->event_free(m_events);
  if (m_api->shutdown) m_api->shutdown();
  dlclose(m_handle);
}

std::unique_ptr<NvmlLibrary> NvmlLibrary::open(const std::string& path, std::string& error) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* reason = dlerror();
    error = reason ? reason : path + ": cannot be loaded";
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->init = as<nvmlInit_fn>(resolve(handle, {"nvmlInit_v2", "nvmlInit"}));
  api->shutdown = as<nvmlShutdown_fn>(resolve(handle, {"nvmlShutdown"}));
  api->error_string = as<nvmlErrorString_fn>(resolve(handle, {"nvmlErrorString"}));
  api->driver_version =
      as<nvmlSystemGetDriverVersion_fn>(resolve(handle, {"nvmlSystemGetDriverVersion"}));
  api->cuda_version = as<nvmlSystemGetCudaDriverVersion_fn>(
      resolve(handle, {"nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"}));
  api->count =
      as<nvmlDeviceGetCount_fn>(resolve(handle, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}));
  api->handle = as<nvmlDeviceGetHandleByIndex_fn>(
      resolve(handle, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"}));
  api->uuid = as<nvmlDeviceGetString_fn>(resolve(handle, {"nvmlDeviceGetUUID"}));
  api->name = as<nvmlDeviceGetString_fn>(resolve(handle, {"nvmlDeviceGetName"}));
  // Older nvmlPciInfo_t layouts start with the bus id too, in the first 16 bytes.
  api->pci = as<nvmlDeviceGetPciInfo_fn>(resolve(
      handle, {"nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo"}));
  api->memory = as<nvmlDeviceGetMemoryInfo_fn>(resolve(handle, {"nvmlDeviceGetMemoryInfo"}));
  api->compute_mode =
      as<nvmlDeviceGetComputeMode_fn>(resolve(handle, {"nvmlDeviceGetComputeMode"}));
  api->utilization =
      as<nvmlDeviceGetUtilizationRates_fn>(resolve(handle, {"nvmlDeviceGetUtilizationRates"}));
  api->temperature = as<nvmlDeviceGetTemperature_fn>(resolve(handle, {"nvmlDeviceGetTemperature"}));
  api->power = as<nvmlDeviceGetPowerUsage_fn>(resolve(handle, {"nvmlDeviceGetPowerUsage"}));
  api->throttle =
      as<nvmlDeviceGetReasons_fn>(resolve(handle, {"nvmlDeviceGetCurrentClocksEventReasons",
                                                   "nvmlDeviceGetCurrentClocksThrottleReasons"}));
  api->ecc = as<nvmlDeviceGetTotalEccErrors_fn>(resolve(handle, {"nvmlDeviceGetTotalEccErrors"}));
  api->supported_events =
      as<nvmlDeviceGetReasons_fn>(resolve(handle, {"nvmlDeviceGetSupportedEventTypes"}));
  api->event_create = as<nvmlEventSetCreate_fn>(resolve(handle, {"nvmlEventSetCreate"}));
  api->event_register =
      as<nvmlDeviceRegisterEvents_fn>(resolve(handle, {"nvmlDeviceRegisterEvents"}));
  // Drivers before CUDA 11's NVML have only the plain one, which writes the event without the
  // MIG instance ids (24 bytes): the zeroed rest of nvmlEventData_t is left as it is.
  api->event_wait =
      as<nvmlEventSetWait_fn>(resolve(handle, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}));
  api->event_free = as<nvmlEventSetFree_fn>(resolve(handle, {"nvmlEventSetFree"}));
  for (auto [names, out] :
       {std::pair{&kComputeNames, &api->compute}, std::pair{&kGraphicsNames, &api->graphics}}) {
    for (const auto& [name, stride] : *names) {
      if (void* symbol = dlsym(handle, name)) {
        out->push_back({name, stride, as<nvmlDeviceGetProcesses_fn>(symbol)});
      }
    }
  }
  if (!api->init || !api->count || !api->handle || !api->memory) {
    error = path +
            " lacks nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex or "
            "nvmlDeviceGetMemoryInfo: not an NVML library";
    dlclose(handle);
    return nullptr;
  }
  if (nvmlReturn_t status = api->init(); status != NVML_SUCCESS) {
    const char* text = api->error_string ? api->error_string(status) : nullptr;
    error = "nvmlInit failed: " + (text ? std::string(text) : "error " + std::to_string(status));
    dlclose(handle);
    return nullptr;
  }
  return std::unique_ptr<NvmlLibrary>(new NvmlLibrary(handle, std::move(api)));
}

std::string NvmlLibrary::error_string(nvmlReturn_t status) const {
  const char* text = m_api->error_string ? m_api->error_string(status) : nullptr;
  return text ? text : "NVML error " + std::to_string(status);
}

std::string NvmlLibrary::driver_version() const {
  char text[TRAINDOC_NVML_STRING_SIZE] = {};
  if (!m_api->driver_version || m_api->driver_version(text, sizeof(text)) != NVML_SUCCESS) {
    return "";
  }
  return c_string(text, sizeof(text));
}

std::optional<int> NvmlLibrary::cuda_driver_version() const {
  int version = 0;
  if (!m_api->cuda_version || m_api->cuda_version(&version) != NVML_SUCCESS) return std::nullopt;
  return version;
}

nvmlReturn_t NvmlLibrary::device_count(unsigned& count) const {
  return m_api->count(&count);
}

nvmlReturn_t NvmlLibrary::device(unsigned index, nvmlDevice_t& device) const {
  return m_api->handle(index, &device);
}

std::string NvmlLibrary::uuid(nvmlDevice_t device) const {
  char text[TRAINDOC_NVML_STRING_SIZE] = {};
  if (!m_api->uuid || m_api->uuid(device, text, sizeof(text)) != NVML_SUCCESS) return "";
  return c_string(text, sizeof(text));
}

std::string NvmlLibrary::name(nvmlDevice_t device) const {
  char text[TRAINDOC_NVML_STRING_SIZE] = {};
  if (!m_api->name || m_api->name(device, text, sizeof(text)) != NVML_SUCCESS) return "";
  return c_string(text, sizeof(text));
}

std::string NvmlLibrary::pci_bus_id(nvmlDevice_t device) const {
  nvmlPciInfo_t pci{};
  if (!m_api->pci || m_api->pci(device, &pci) != NVML_SUCCESS) return "";
  std::string id = c_string(pci.busId, sizeof(pci.busId));
  return id.empty() ? c_string(pci.busIdLegacy, sizeof(pci.busIdLegacy)) : id;
}

nvmlReturn_t NvmlLibrary::memory(nvmlDevice_t device, nvmlMemory_t& memory) const {
  return m_api->memory(device, &memory);
}

std::optional<int> NvmlLibrary::compute_mode(nvmlDevice_t device) const {
  int mode = 0;
  if (!m_api->compute_mode || m_api->compute_mode(device, &mode) != NVML_SUCCESS) {
    return std::nullopt;
  }
  return mode;
}

NvmlProcessList NvmlLibrary::processes(nvmlDevice_t device, NvmlProcessKind kind) {
  std::vector<ProcessFunction>& functions =
      kind == NvmlProcessKind::kCompute ? m_api->compute : m_api->graphics;
  NvmlProcessList out;
  out.status = NVML_ERROR_FUNCTION_NOT_FOUND;
  while (!functions.empty()) {
    const ProcessFunction& function = functions.front();
    unsigned count = 0;
    out.status = function.fn(device, &count, nullptr);
    // An entry point that this driver exports but refuses: drop it for good, try the older one.
    if (out.status == NVML_ERROR_FUNCTION_NOT_FOUND || out.status == kArgumentVersionMismatch) {
      functions.erase(functions.begin());
      continue;
    }
    for (int attempt = 0; attempt < kListAttempts && out.status == NVML_ERROR_INSUFFICIENT_SIZE;
         ++attempt) {
      unsigned capacity = count + kSlack;
      m_buffer.assign(capacity * kLargestEntry, kNvmlSentinel);
      count = capacity;
      out.status = function.fn(device, &count, m_buffer.data());
    }
    if (out.status != NVML_SUCCESS) return out;
    if (count == 0) return out;  // none: the first call said so
    count = std::min<unsigned>(count, static_cast<unsigned>(m_buffer.size() / kLargestEntry));
    m_stride = detect_process_stride(m_buffer.data(), m_buffer.size(), count, function.stride);
    m_process_function = function.name;
    for (unsigned i = 0; i < count; ++i) {
      const unsigned char* entry = m_buffer.data() + i * m_stride;
      nvmlProcessInfo_v1_t head{};
      memcpy(&head, entry, sizeof(head));  // pid and memory sit at the same offsets in all
      NvmlProcess& p = out.processes.emplace_back();
      p.pid = head.pid;
      if (head.usedGpuMemory != TRAINDOC_NVML_VALUE_NOT_AVAILABLE)
        p.used_bytes = head.usedGpuMemory;
    }
    return out;
  }
  return out;
}

std::optional<nvmlUtilization_t> NvmlLibrary::utilization(nvmlDevice_t device) const {
  nvmlUtilization_t rates{};
  if (!m_api->utilization || m_api->utilization(device, &rates) != NVML_SUCCESS) {
    return std::nullopt;
  }
  return rates;
}

std::optional<int> NvmlLibrary::temperature_c(nvmlDevice_t device) const {
  unsigned value = 0;
  if (!m_api->temperature ||
      m_api->temperature(device, TRAINDOC_NVML_TEMPERATURE_GPU, &value) != NVML_SUCCESS) {
    return std::nullopt;
  }
  return static_cast<int>(value);
}

std::optional<int> NvmlLibrary::power_mw(nvmlDevice_t device) const {
  unsigned value = 0;
  if (!m_api->power || m_api->power(device, &value) != NVML_SUCCESS) return std::nullopt;
  return static_cast<int>(value);
}

std::optional<uint64_t> NvmlLibrary::throttle_reasons(nvmlDevice_t device) const {
  unsigned long long value = 0;
  if (!m_api->throttle || m_api->throttle(device, &value) != NVML_SUCCESS) return std::nullopt;
  return value;
}

std::optional<uint64_t> NvmlLibrary::ecc_errors(nvmlDevice_t device, int kind) const {
  unsigned long long value = 0;
  if (!m_api->ecc || m_api->ecc(device, kind, TRAINDOC_NVML_ECC_VOLATILE, &value) != NVML_SUCCESS) {
    return std::nullopt;
  }
  return value;
}

bool NvmlLibrary::register_events(const std::vector<nvmlDevice_t>& devices) {
  if (!m_api->event_create || !m_api->event_register || !m_api->event_wait) return false;
  if (m_api->event_create(&m_events) != NVML_SUCCESS) {
    m_events = nullptr;
    return false;
  }
  constexpr unsigned long long kWanted =
      TRAINDOC_NVML_EVENT_XID | TRAINDOC_NVML_EVENT_SINGLE_BIT_ECC |
      TRAINDOC_NVML_EVENT_DOUBLE_BIT_ECC | TRAINDOC_NVML_EVENT_GPU_UNAVAILABLE;
  bool any = false;
  for (nvmlDevice_t device : devices) {
    unsigned long long supported = kWanted;
    if (m_api->supported_events) m_api->supported_events(device, &supported);
    if ((supported & kWanted) == 0) continue;
    any |= m_api->event_register(device, supported & kWanted, m_events) == NVML_SUCCESS;
  }
  return any;
}

std::optional<nvmlEventData_t> NvmlLibrary::next_event() {
  if (m_events == nullptr) return std::nullopt;
  nvmlEventData_t data{};
  // Timeout 0: the supervisor's loop must never block on the driver.
  if (m_api->event_wait(m_events, &data, 0) != NVML_SUCCESS) return std::nullopt;
  return data;
}

}  // namespace traindoc::supervisor
