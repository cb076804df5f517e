/* The few NVML entry points and structs traindoc uses, declared here so that nothing needs
   NVIDIA's headers or libraries to build: the supervisor loads libnvidia-ml.so.1 at run time,
   and the stand-in of tests/fakes/nvml implements the same ABI. Plain C, for both. */
#ifndef TRAINDOC_SUPERVISOR_GPU_NVML_API_H
#define TRAINDOC_SUPERVISOR_GPU_NVML_API_H

#ifdef __cplusplus
extern "C" {
#endif

typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_UNKNOWN = 999
};

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

/* Three layouts of one process entry: which one a driver writes through the _v3 entry point has
   changed without a version bump (16, 24 or 32 bytes; see docs/gpu.md). */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t;
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
} nvmlProcessInfo_v3_t;
/* usedGpuMemory when the driver cannot tell (WDDM). */
#define TRAINDOC_NVML_VALUE_NOT_AVAILABLE (~0ULL)

typedef struct {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
} nvmlPciInfo_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData; /* the Xid for nvmlEventTypeXidCriticalError */
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

#define TRAINDOC_NVML_EVENT_SINGLE_BIT_ECC 0x1ULL
#define TRAINDOC_NVML_EVENT_DOUBLE_BIT_ECC 0x2ULL
#define TRAINDOC_NVML_EVENT_XID 0x8ULL
#define TRAINDOC_NVML_EVENT_GPU_UNAVAILABLE 0x4000ULL

#define TRAINDOC_NVML_TEMPERATURE_GPU 0
#define TRAINDOC_NVML_ECC_CORRECTED 0
#define TRAINDOC_NVML_ECC_UNCORRECTED 1
#define TRAINDOC_NVML_ECC_VOLATILE 0
#define TRAINDOC_NVML_STRING_SIZE 96
#define TRAINDOC_NVML_COMPUTEMODE_PROHIBITED 2
#define TRAINDOC_NVML_COMPUTEMODE_EXCLUSIVE_PROCESS 3

typedef nvmlReturn_t (*nvmlInit_fn)(void);
typedef nvmlReturn_t (*nvmlShutdown_fn)(void);
typedef const char* (*nvmlErrorString_fn)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_fn)(char*, unsigned int);
/* The CUDA version the driver supports, as 1000 * major + 10 * minor (12040 for 12.4). */
typedef nvmlReturn_t (*nvmlSystemGetCudaDriverVersion_fn)(int*);
typedef nvmlReturn_t (*nvmlDeviceGetCount_fn)(unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByIndex_fn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetString_fn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetPciInfo_fn)(nvmlDevice_t, nvmlPciInfo_t*);
typedef nvmlReturn_t (*nvmlDeviceGetMemoryInfo_fn)(nvmlDevice_t, nvmlMemory_t*);
/* nvmlComputeMode_t: 0 default, 2 prohibited, 3 exclusive-process (1 was exclusive-thread). */
typedef nvmlReturn_t (*nvmlDeviceGetComputeMode_fn)(nvmlDevice_t, int*);
/* Every GetComputeRunningProcesses and GetGraphicsRunningProcesses version; the entries are
   void* because the layout is found out at run time. */
typedef nvmlReturn_t (*nvmlDeviceGetProcesses_fn)(nvmlDevice_t, unsigned int*, void*);
typedef nvmlReturn_t (*nvmlDeviceGetUtilizationRates_fn)(nvmlDevice_t, nvmlUtilization_t*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_fn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetPowerUsage_fn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetReasons_fn)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_fn)(nvmlDevice_t, int, int, unsigned long long*);
typedef nvmlReturn_t (*nvmlEventSetCreate_fn)(nvmlEventSet_t*);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_fn)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
typedef nvmlReturn_t (*nvmlEventSetWait_fn)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
typedef nvmlReturn_t (*nvmlEventSetFree_fn)(nvmlEventSet_t);

#ifdef __cplusplus
}
#endif

#endif /* TRAINDOC_SUPERVISOR_GPU_NVML_API_H */
