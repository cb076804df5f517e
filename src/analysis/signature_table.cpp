// The catalog of known error texts as one table: each entry is a needle (substring test), patterns
// with the fields they extract, and the finding kind the text points to. docs/signatures.md
// lists it; the unit tests check every example against its entry. Pure data. The distributed
// entries (DDP, c10d, gloo, NCCL, store, launchers) are in signature_table_distributed.cpp, the
// Python and training-loop ones in signature_table_python.cpp.
#include "analysis/signature_table.h"

#include "analysis/signature_words.h"

#include <iterator>

namespace traindoc::analysis {
namespace {

// A size as PyTorch (format_size: "2.00 GiB", "123 bytes"), TensorFlow ("1.25GiB", "10.09G")
// and XLA print it.
#define TD_SIZE "([0-9]+(?:\\.[0-9]+)? ?(?:bytes|[KMGTPE]iB|[KMGTPE]B?|B))"
using C = Conv;

// PyTorch memory, DataLoader workers, shared memory, descriptors.
std::vector<Entry> memory_entries() {  // NOLINT(readability-function-size): a data table
  return {
      // ---- PyTorch memory -----------------------------------------------------------------------
      {.id = "torch.cuda-oom",
       .framework = "pytorch",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"CUDA out of memory"},
       .parts =
           {
               {"Tried to allocate " TD_SIZE, {{1, "requested_bytes", C::kSize}}},
               // 2.1+ ("capacty" in 2.1; a NUL or nothing for GPU 0 in some 2.3 builds)
               {R"(GPU[ \x00]*([0-9]*)[ \x00]*has a total capac(?:i)?ty of )" TD_SIZE
                " of which " TD_SIZE " is free",
                {{1, "gpu", C::kInt},
                 {2, "capacity_bytes", C::kSize},
                 {3, "free_bytes", C::kSize}}},
               {"Including non-PyTorch memory, this process has " TD_SIZE " memory in use",
                {{1, "process_bytes", C::kSize}}},
               {"Process ([0-9]+) has " TD_SIZE " memory in use",
                {{1, "other_pids", C::kInt}, {2, "other_bytes", C::kSize}},
                false,
                true},
               {TD_SIZE " allowed;", {{1, "allowed_bytes", C::kSize}}},
               {"Of the allocated memory " TD_SIZE " is allocated by PyTorch, (?:with " TD_SIZE
                R"( allocated in private pools \(e\.g\., CUDA Graphs\), )?and )" TD_SIZE
                " is reserved by PyTorch but unallocated",
                {{1, "allocated_bytes", C::kSize},
                 {2, "private_pool_bytes", C::kSize},
                 {3, "reserved_unallocated_bytes", C::kSize}}},
               // <= 2.0
               {R"(\(GPU ([0-9]+); )" TD_SIZE " total capacity; " TD_SIZE
                " already allocated; " TD_SIZE " free; (?:" TD_SIZE " allowed; )?" TD_SIZE
                R"( reserved in total by PyTorch\))",
                {{1, "gpu", C::kInt},
                 {2, "capacity_bytes", C::kSize},
                 {3, "allocated_bytes", C::kSize},
                 {4, "free_bytes", C::kSize},
                 {6, "reserved_bytes", C::kSize}}},
           },
       .description = "PyTorch caching allocator OOM, 1.x/2.0 \"(GPU 0; ... reserved in total by "
                      "PyTorch)\" and 2.1+ \"GPU 0 has a total capacity of ...\" formats; "
                      "gpu-fragmentation when reserved-but-unallocated is large against the "
                      "request (with the free memory it would have held it) and against the "
                      "capacity (>= 2% of the GPU)",
       .example =
           "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; "
           "22.20 GiB total capacity; 20.92 GiB already allocated; 4.12 MiB free; 20.93 GiB "
           "reserved in total by PyTorch) If reserved memory is >> allocated memory try setting "
           "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management "
           "and PYTORCH_CUDA_ALLOC_CONF",
       .source = "c10/cuda/CUDACachingAllocator.cpp; CASES.md S01, S02, T21",
       // By the time PyTorch raises, it has released every cached segment it could: what stays
       // reserved but unallocated sits in split segments, unusable for this request. That is
       // the cause when it is large against the request (usable, with the free memory, it would
       // have held it; else the request is too large however memory is arranged) and against
       // the capacity (a fiftieth of the GPU at least: less is a sliver of a full GPU, where
       // the next allocation fails as well and the batch is what is too large).
       .refine = {{{{"reserved_unallocated_bytes", Test::kAtLeastField, "requested_bytes", 1.0,
                     "free_bytes"},
                    {"reserved_unallocated_bytes", Test::kAtLeastField, "capacity_bytes", 0.02}},
                   FindingKind::kGpuFragmentation}}},
      {.id = "torch.cuda-oom-async",
       .framework = "pytorch",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"would exceed allowed memory"},
       .parts = {{R"(Allocation on device[ \x00]*([0-9]*)[ \x00]*would exceed allowed memory)",
                  {{1, "gpu", C::kInt}}}},
       .description = "OOM of the cudaMallocAsync allocator backend",
       .example = "Allocation on device 0 would exceed allowed memory. (out of memory)",
       .source = "c10/cuda/CUDAMallocAsyncAllocator.cpp; memory.md a.2"},
      {.id = "torch.cuda-oom-legacy",
       .framework = "pytorch",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"cuda runtime error (2) : out of memory"},
       .description = "CUDA OOM of PyTorch <= 0.4 (THC)",
       .example = "RuntimeError: cuda runtime error (2) : out of memory at "
                  "/pytorch/aten/src/THC/THCCachingAllocator.cpp:510",
       .source = "PyTorch FAQ"},
      {.id = "cuda.out-of-memory",
       .framework = "cuda",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"CUDA error: out of memory", "cudaErrorMemoryAllocation"},
       .description = "CUDA runtime OOM outside the caching allocator (context creation, pinned "
                      "host memory, library workspaces)",
       .example = "RuntimeError: CUDA error: out of memory",
       .source = "c10/cuda/CUDAException.cpp; memory.md a.3"},
      {.id = "cuda.driver-out-of-memory",
       .framework = "cuda",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"CUDA_ERROR_OUT_OF_MEMORY"},
       .parts = {{R"(failed to allocate (\S+) \(([0-9]+) bytes\) from device)",
                  {{2, "requested_bytes", C::kInt}}}},
       .description = "CUDA driver OOM as TensorFlow's and XLA's StreamExecutor log it (often at "
                      "start-up, when another process holds the GPU)",
       .example = "failed to allocate 10.09G (10830902272 bytes) from device: "
                  "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
       .source = "tensorflow stream_executor cuda_driver.cc; memory.md a.6"},
      {.id = "torch.cpu-alloc-failed",
       .framework = "pytorch",
       .kind = FindingKind::kHostAllocFailed,
       .failure = true,
       .needles = {"DefaultCPUAllocator: "},
       .parts = {{"DefaultCPUAllocator: (?:can't allocate memory|not enough memory): you tried to "
                  "allocate ([0-9]+) bytes",
                  {{1, "requested_bytes", C::kInt}},
                  true},
                 {"Error code ([0-9]+)", {{1, "errno", C::kInt}}}},
       .description = "PyTorch's CPU allocator refused one allocation",
       .example = "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: "
                  "can't allocate memory: you tried to allocate 34359738368 bytes. Error code 12 "
                  "(Cannot allocate memory)",
       .source = "c10/core/impl/alloc_cpu.cpp; memory.md a.3",
       .describe = words::host_alloc,
       .fix = words::kHostAllocFix},
      {.id = "numpy.alloc-failed",
       .framework = "python",
       .kind = FindingKind::kHostAllocFailed,
       .failure = true,
       .needles = {"Unable to allocate "},
       .parts = {{"Unable to allocate " TD_SIZE
                  R"( for an array with shape \(([^)]*)\) and data type (\w+))",
                  {{1, "requested_bytes", C::kSize}, {2, "shape", C::kList}, {3, "dtype"}},
                  true}},
       .description = "NumPy refused an array allocation",
       .example = "numpy.core._exceptions._ArrayMemoryError: Unable to allocate 7.45 GiB for an "
                  "array with shape (100000, 10000) and data type float64",
       .source = "numpy/core/src/multiarray/ctors.c",
       .describe = words::host_alloc,
       .fix = words::kHostAllocFix},
      {.id = "python.memory-error",
       .framework = "python",
       .kind = FindingKind::kHostAllocFailed,
       .failure = true,
       .needles = {"MemoryError"},
       .parts = {{"^MemoryError(?::|$)", {}, true}},
       .description = "Python's MemoryError",
       .example = "MemoryError",
       .source = "CPython",
       .describe = words::host_alloc,
       .fix = words::kHostAllocFix},
      {.id = "torch.cuda-unavailable",
       .framework = "pytorch",
       .kind = FindingKind::kCudaUnavailable,
       .failure = true,
       .needles = {"Torch not compiled with CUDA enabled", "Found no NVIDIA driver",
                   "No CUDA GPUs are available", "doesn't have NCCL built in",
                   "Attempting to deserialize object on a CUDA device"},
       .parts = {{"(Torch not compiled with CUDA enabled|Found no NVIDIA driver|No CUDA GPUs "
                  "are available|Distributed package doesn't have NCCL built in|Attempting to "
                  "deserialize object on a CUDA device)",
                  {{1, "reason"}},
                  true}},
       .description = "CUDA asked for where there is none: a CPU-only build of PyTorch (no "
                      "CUDA, no NCCL), no driver, or CUDA_VISIBLE_DEVICES hiding every GPU; "
                      "torch.load of CUDA tensors there without map_location",
       .example = "AssertionError: Torch not compiled with CUDA enabled",
       .source = "torch/cuda/__init__.py _lazy_init",
       .describe = words::cuda_unavailable},
      {.id = "cuda.driver-too-old",
       .framework = "cuda",
       .kind = FindingKind::kCudaUnavailable,
       .failure = true,
       .needles = {"NVIDIA driver on your system is too old",
                   "CUDA driver version is insufficient for CUDA runtime version"},
       .parts = {{R"(too old \(found version ([0-9]+)\))", {{1, "driver_cuda", C::kInt}}},
                 nccl_header()},
       .description = "the NVIDIA driver is older than the CUDA runtime the program was built "
                      "with (a PyTorch wheel for a newer CUDA than the driver's)",
       .example = "RuntimeError: The NVIDIA driver on your system is too old (found version "
                  "12080). Please update your GPU driver by downloading and installing a new "
                  "version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, "
                  "go to: https://pytorch.org to install a PyTorch version that has been compiled "
                  "with your version of the CUDA driver.",
       .source = "torch/cuda/__init__.py _check_driver; cudaErrorInsufficientDriver (35), as "
                 "NCCL prints it",
       .describe = words::driver_too_old,
       .fix = "Install a build for the CUDA version the driver supports (`nvidia-smi` shows it; "
              "`torch.version.cuda` shows the one PyTorch was built for: a cu128 wheel for a 12.8 "
              "driver), or update the driver. On data-center GPUs, NVIDIA's CUDA "
              "forward-compatibility package (cuda-compat) lets a newer runtime run on an older "
              "driver."},
      {.id = "cuda.unknown-error",
       .framework = "cuda",
       .kind = FindingKind::kCudaUnavailable,
       .failure = true,
       .needles = {"CUDA unknown error"},
       .description = "CUDA could not start in the process (cudaErrorUnknown): most often the "
                      "unified-memory device /dev/nvidia-uvm missing or unusable (its module "
                      "not loaded, or broken by a suspend)",
       .example = "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up "
                  "environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program "
                  "start. Setting the available devices to be zero.",
       .source = "c10/cuda/CUDAFunctions.cpp device_count_impl (cudaErrorUnknown); verified "
                 "with PyTorch 2.11 on an H100 whose /dev/nvidia-uvm was made unusable",
       .unless = "CUDA initialization: ",
       .title = "CUDA could not start in the process (CUDA unknown error)",
       .fix = words::kCudaUnknownErrorFix},
      {.id = "cuda.invalid-device-ordinal",
       .framework = "cuda",
       .kind = FindingKind::kCudaUnavailable,
       .failure = true,
       .needles = {"invalid device ordinal", "cudaErrorInvalidDevice"},
       .parts = {nccl_header()},
       .description = "a GPU number beyond the GPUs the process sees (more ranks per node than "
                      "GPUs, or CUDA_VISIBLE_DEVICES naming fewer)",
       .example = "RuntimeError: CUDA error: invalid device ordinal",
       .source = "CUDA runtime (cudaErrorInvalidDevice, 101), as PyTorch and NCCL print it",
       .title = "the process asked for a GPU it cannot see (invalid device ordinal)",
       .fix =
           "A GPU number (torch.cuda.set_device(local_rank), cuda:N, a device map) is beyond the "
           "GPUs this process sees: start no more ranks per node than it has GPUs (torchrun "
           "--nproc_per_node at most torch.cuda.device_count()), and mind CUDA_VISIBLE_DEVICES, "
           "which numbers the GPUs it leaves visible from 0 (with CUDA_VISIBLE_DEVICES=2,3 they "
           "are "
           "cuda:0 and cuda:1)."},

      // ---- downloads on a node without the network --------------------------------------------
      {.id = "python.urlopen-error",
       .framework = "python",
       .kind = FindingKind::kNetworkUnreachable,
       .failure = true,
       .needles = {"<urlopen error "},
       .parts = {{R"(<urlopen error (?:\[Errno (-?[0-9]+)\] )?([^>]*)>)",
                  {{1, "errno", C::kInt}, {2, "error"}},
                  true}},
       .description = "urllib (torch.hub, torchvision's pretrained weights) could not reach the "
                      "server it downloads from",
       .example = "urllib.error.URLError: <urlopen error [Errno -2] Name or service not known>",
       .source = "CPython's urllib, verified with torch.hub.load_state_dict_from_url offline",
       .describe = words::network_unreachable,
       .fix = words::kNetworkFix},
      {.id = "requests.connection-failed",
       .framework = "python",
       .kind = FindingKind::kNetworkUnreachable,
       .failure = true,
       .needles = {"Max retries exceeded with url: "},
       .parts = {{R"(\(host='([^']+)', port=([0-9]+)\))",
                  {{1, "host"}, {2, "port", C::kInt}},
                  true},
                 {R"(\[Errno (-?[0-9]+)\] ([^'"()]+))", {{1, "errno", C::kInt}, {2, "error"}}},
                 {R"(Caused by (\w+)\()", {{1, "cause"}}},
                 {R"((CERTIFICATE_VERIFY_FAILED))", {{1, "error"}}},
                 {R"(ResponseError\('([^']+)'\))", {{1, "error"}}}},
       .description = "requests (Hugging Face Hub, wandb, a dataset's download) could not reach "
                      "its server",
       .example =
           "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='huggingface.co', "
           "port=443): Max retries exceeded with url: /bert-base-uncased/resolve/main/"
           "config.json (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection "
           "object at 0x7f96d9cf4f10>: Failed to establish a new connection: [Errno -2] Name "
           "or service not known'))",
       .source = "requests and urllib3, verified offline",
       .describe = words::network_unreachable,
       .fix = words::kNetworkFix},
      {.id = "huggingface.unreachable",
       .framework = "huggingface",
       .kind = FindingKind::kNetworkUnreachable,
       .failure = true,
       .needles = {"We couldn't connect to '",
                   "we cannot find the requested files in the local cache",
                   "we cannot find the requested files in the disk cache"},
       .parts = {{"We couldn't connect to '([^']+)'", {{1, "url"}}},
                 {R"(it looks like (\S+) is not the path to a directory)", {{1, "model"}}}},
       .description = "transformers or huggingface_hub could not reach the Hub, and the file is "
                      "not in the local cache",
       .example = "OSError: We couldn't connect to 'https://huggingface.co' to load this file, "
                  "couldn't find it in the cached files and it looks like bert-base-uncased is "
                  "not the path to a directory containing a file named config.json.",
       .source = "transformers' utils/hub.py, huggingface_hub's LocalEntryNotFoundError",
       .describe = words::huggingface_unreachable,
       .fix = words::kNetworkFix},

      // ---- disks and checkpoints
      // -----------------------------------------------------------------
      {.id = "python.no-space",
       .framework = "python",
       .kind = FindingKind::kDiskFull,
       .failure = true,
       .needles = {"[Errno 28] No space left on device", "[Errno 122] Disk quota exceeded"},
       .parts = {{R"(\[Errno ([0-9]+)\] ([^:']+)(?:: '([^']*)')?)",
                  {{1, "errno", C::kInt}, {2, "error"}, {3, "path"}},
                  true}},
       .description = "a write refused because its filesystem is full (ENOSPC) or its user's quota "
                      "is used up (EDQUOT): a checkpoint, a log, a cache",
       .example = "OSError: [Errno 28] No space left on device",
       .source = "CPython; errno ENOSPC, EDQUOT",
       .describe = words::disk_full},
      {.id = "torch.checkpoint-write-failed",
       .framework = "pytorch",
       .kind = FindingKind::kDiskFull,
       .failure = true,
       .needles = {"PytorchStreamWriter failed writing file "},
       .parts = {{R"(PytorchStreamWriter failed writing file (\S+): file write failed)",
                  {{1, "record"}},
                  true}},
       .description = "torch.save could not write a record of the checkpoint: its filesystem is "
                      "full or over quota (PyTorch then fails again closing the file, \"unexpected "
                      "pos\", and 1.13 aborts at exit)",
       .example = "RuntimeError: [enforce fail at inline_container.cc:445] . PytorchStreamWriter "
                  "failed writing file data/0: file write failed",
       .source = "caffe2/serialize/inline_container.cc, verified on a full tmpfs",
       .describe = words::checkpoint_write_failed},
      {.id = "torch.checkpoint-truncated",
       .framework = "pytorch",
       .kind = FindingKind::kCheckpointCorrupt,
       .failure = true,
       .needles = {"PytorchStreamReader failed reading zip archive"},
       .parts = {{R"(PytorchStreamReader failed reading zip archive: (.+))",
                  {{1, "reason"}},
                  true}},
       .description = "torch.load of a checkpoint that is not a whole zip archive: cut short by a "
                      "save that failed or was killed, or by a partial copy",
       .example = "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding "
                  "central directory",
       .source = "caffe2/serialize/inline_container.cc, verified with a file cut in half",
       .describe = words::checkpoint_truncated,
       .fix = words::kCheckpointCorruptFix},
      {.id = "torch.checkpoint-truncated-small",
       .framework = "pytorch",
       .kind = FindingKind::kCheckpointCorrupt,
       .failure = true,
       .needles = {"[Errno 22] Invalid argument"},
       .parts = {{R"(\[Errno 22\] (Invalid argument))", {{1, "reason"}}, true}},
       .description = "torch.load of a small checkpoint cut short: the zip reader seeks before its "
                      "start (needs the frame in torch/serialization.py that opens the archive)",
       .example = "OSError: [Errno 22] Invalid argument",
       .source = "torch/serialization.py _open_zipfile_reader, verified with a file of 17 KB cut "
                 "in half",
       .frame_file = "torch/serialization.py",
       .frame_function = "__init__",
       .describe = words::checkpoint_truncated,
       .fix = words::kCheckpointCorruptFix},
      {.id = "torch.checkpoint-not-a-checkpoint",
       .framework = "pytorch",
       .kind = FindingKind::kCheckpointCorrupt,
       .failure = true,
       .needles = {"invalid load key", "Ran out of input"},
       .parts = {{R"((invalid load key, '.*'|Ran out of input))", {{1, "reason"}}, true}},
       .description = "torch.load of a file that is no checkpoint: empty (\"Ran out of input\"), "
                      "a Git LFS pointer ('v'), an HTML page ('<') (needs a frame in "
                      "torch/serialization.py)",
       .example = "_pickle.UnpicklingError: invalid load key, 'v'.",
       .source = "torch/serialization.py _legacy_load, verified with an LFS pointer and an empty "
                 "file",
       .frame_file = "torch/serialization.py",
       .describe = words::checkpoint_corrupt,
       .fix = words::kCheckpointCorruptFix},

      // ---- DataLoader workers and shared memory -------------------------------------------------
      {.id = "torch.dataloader-worker-killed",
       .framework = "pytorch",
       .kind = FindingKind::kWorkerCrash,
       .failure = true,
       .needles = {"is killed by signal: "},
       .parts = {{R"(DataLoader worker \(pid ([0-9]+)\) is killed by signal: ([A-Za-z /-]+?)\.)",
                  {{1, "worker_pid", C::kInt}, {2, "signal"}, {2, "signo", C::kSignalText}},
                  true}},
       .description = "a DataLoader worker died of a signal (Killed: usually the OOM killer; Bus "
                      "error: usually /dev/shm full, see torch.dataloader-shm-hint)",
       .example = "RuntimeError: DataLoader worker (pid 16088) is killed by signal: Segmentation "
                  "fault. ",
       .source = "torch/csrc/DataLoader.cpp; CASES.md T01, T03, T08"},
      {.id = "torch.dataloader-shm-hint",
       .framework = "pytorch",
       .kind = FindingKind::kShmExhausted,
       .failure = true,
       .needles = {"workers are out of shared memory"},
       .description = "the SIGBUS hint of a killed DataLoader worker",
       .example =
           "RuntimeError: DataLoader worker (pid 16150) is killed by signal: Bus error. It is "
           "possible that dataloader's workers are out of shared memory. Please try to raise "
           "your shared memory limit.",
       .source = "torch/csrc/DataLoader.cpp; CASES.md T08",
       .fix = words::kShmFix},
      {.id = "torch.dataloader-worker-bus-error",
       .framework = "pytorch",
       .kind = FindingKind::kShmExhausted,
       .failure = true,
       .needles = {"Unexpected bus error encountered in worker"},
       .description = "a DataLoader worker's own SIGBUS message",
       .example = "ERROR: Unexpected bus error encountered in worker. This might be caused by "
                  "insufficient shared memory (shm).",
       .source = "torch/csrc/DataLoader.cpp; CASES.md T08",
       .fix = words::kShmFix},
      {.id = "torch.dataloader-worker-fault",
       .framework = "pytorch",
       .kind = FindingKind::kWorkerCrash,
       .failure = true,
       .needles = {"encountered in worker."},
       .parts = {{"Unexpected (segmentation fault|floating-point exception) encountered in worker",
                  {{1, "signal"}, {1, "signo", C::kSignalText}},
                  true}},
       .description = "a DataLoader worker's own SIGSEGV or SIGFPE message",
       .example = "ERROR: Unexpected segmentation fault encountered in worker.",
       .source = "torch/csrc/DataLoader.cpp; CASES.md T01"},
      {.id = "torch.dataloader-worker-exit-code",
       .framework = "pytorch",
       .kind = FindingKind::kWorkerExit,
       .failure = true,
       .needles = {"exited unexpectedly with exit code"},
       .parts =
           {{R"(DataLoader worker \(pid ([0-9]+)\) exited unexpectedly with exit code (-?[0-9]+))",
             {{1, "worker_pid", C::kInt}, {2, "exit_code", C::kInt}},
             true}},
       .description = "a DataLoader worker exited with a non-zero code",
       .example =
           "RuntimeError: DataLoader worker (pid 4242) exited unexpectedly with exit code 1. "
           "Details are lost due to multiprocessing. Rerunning with num_workers=0 may give "
           "better error trace.",
       .source = "torch/csrc/DataLoader.cpp; memory.md a.5"},
      {.id = "torch.dataloader-workers-exited",
       .framework = "pytorch",
       .kind = FindingKind::kWorkerExit,
       .failure = true,
       .needles = {"exited unexpectedly"},
       .parts = {{R"(DataLoader worker \(pid\(s\) ([0-9, ]+)\) exited unexpectedly)",
                  {{1, "worker_pids", C::kList}},
                  true}},
       .description = "the main process's summary after a worker died; the line before it (killed "
                      "by signal, exit code) says how",
       .example = "RuntimeError: DataLoader worker (pid(s) 16088) exited unexpectedly",
       .source = "torch/utils/data/dataloader.py; CASES.md T01, T03, T08"},
      {.id = "torch.dataloader-timeout",
       .framework = "pytorch",
       .kind = FindingKind::kWorkerTimeout,
       .failure = true,
       .needles = {"DataLoader timed out after "},
       .parts = {{"DataLoader timed out after ([0-9]+) seconds", {{1, "timeout_ms", C::kSeconds}}}},
       .description = "DataLoader(timeout=...) expired: workers alive but too slow",
       .example = "RuntimeError: DataLoader timed out after 1 seconds",
       .source = "torch/utils/data/dataloader.py; CASES.md T05",
       .describe = words::worker_timeout,
       .fix = "DataLoader workers are alive but slower than `timeout`: find the slow or blocked "
              "__getitem__ (py-spy dump on the workers), or raise the timeout."},
      {.id = "torch.dataloader-worker-exception",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"in DataLoader worker process "},
       .parts = {{R"(Caught ([\w.]+) in DataLoader worker process ([0-9]+))",
                  {{1, "worker_exception_type"}, {2, "worker", C::kInt}},
                  true}},
       .description = "an exception raised in a worker, re-raised in the main process (the "
                      "worker's traceback follows as \"Original Traceback\")",
       .example = "KeyError: Caught KeyError in DataLoader worker process 0.",
       .source = "torch/_utils.py ExceptionWrapper",
       .describe = words::worker_exception},
      {.id = "torch.shm-write-failed",
       .framework = "pytorch",
       .kind = FindingKind::kShmExhausted,
       .failure = true,
       .needles = {"unable to write to file <"},
       .parts = {{R"(unable to write to file <([^>]*)>(?:: ([^(]*)\(([0-9]+)\))?)",
                  {{1, "path"}, {2, "error"}, {3, "errno", C::kInt}},
                  true}},
       .description = "a tensor could not be placed in /dev/shm (full)",
       .example =
           "RuntimeError: unable to write to file </torch_287_2714559211_8>: No space left on "
           "device (28)",
       .source = "aten/src/ATen/MapAllocator.cpp; memory.md a.5",
       .fix = words::kShmFix},
      {.id = "torch.shm-open-failed",
       .framework = "pytorch",
       .kind = FindingKind::kShmExhausted,
       .failure = true,
       .needles = {"unable to open shared memory object <"},
       .parts = {{R"(unable to open shared memory object <([^>]*)> in read-write mode)"
                  R"((?:: ([^(]*)\(([0-9]+)\))?)",
                  {{1, "path"}, {2, "error"}, {3, "errno", C::kInt}},
                  true}},
       .description = "a shared tensor could not be opened (fd-exhausted when errno is 24)",
       .example =
           "RuntimeError: unable to open shared memory object </torch_38223_3055134446_48> in "
           "read-write mode: Too many open files (24)",
       .source = "aten/src/ATen/MapAllocator.cpp",
       .refine = {{.when = {{"errno", Test::kEquals, "24"}},
                   .kind = FindingKind::kFdExhausted,
                   .fix = words::kFdExhaustedFix}},
       .fix = words::kShmFix},
      {.id = "torch.shm-mmap-failed",
       .framework = "pytorch",
       .kind = FindingKind::kShmExhausted,
       .failure = true,
       .needles = {"unable to mmap "},
       .parts =
           {{R"(unable to mmap ([0-9]+) bytes from file <([^>]*)>(?:: ([^(]*)\(([0-9]+)\))?)",
             {{1, "requested_bytes", C::kInt}, {2, "path"}, {3, "error"}, {4, "errno", C::kInt}},
             true}},
       .description = "a shared tensor could not be mapped (host-alloc-failed when errno is 12)",
       .example = "RuntimeError: unable to mmap 1048576 bytes from file </torch_123_456_7>: Cannot "
                  "allocate memory (12)",
       .source = "aten/src/ATen/MapAllocator.cpp",
       .refine = {{.when = {{"errno", Test::kEquals, "12"}},
                   .kind = FindingKind::kHostAllocFailed,
                   .describe = words::host_alloc,
                   .fix = words::kHostAllocFix}},
       .fix = words::kShmFix},
      {.id = "python.too-many-open-files",
       .framework = "python",
       .kind = FindingKind::kFdExhausted,
       .failure = true,
       .needles = {"Too many open files"},
       .parts = {{R"(\[Errno ([0-9]+)\])", {{1, "errno", C::kInt}}}},
       .description = "EMFILE: the process's descriptor limit is reached",
       .example = "OSError: [Errno 24] Too many open files",
       .source = "errno EMFILE",
       .fix = words::kFdExhaustedFix},
      {.id = "python.thread-start-failed",
       .framework = "python",
       .kind = FindingKind::kProcessLimit,
       .failure = true,
       .needles = {"can't start new thread"},
       .description = "a thread refused by the limit on processes and threads (ulimit -u, a "
                      "container's pids limit)",
       .example = "RuntimeError: can't start new thread",
       .source = "CPython's _thread, verified under ulimit -u",
       .title =
           "could not start a thread: the limit on processes and threads, or memory for its stack",
       .fix = words::kProcessLimitFix},
      {.id = "libgomp.thread-create-failed",
       .framework = "openmp",
       .kind = FindingKind::kProcessLimit,
       .failure = true,
       .needles = {"libgomp: Thread creation failed: "},
       .parts = {{"libgomp: Thread creation failed: (.+)", {{1, "error"}}, true}},
       .description = "OpenMP (GNU libgomp) could not start its thread pool, and ended the process",
       .example = "libgomp: Thread creation failed: Resource temporarily unavailable",
       .source = "libgomp's team.c, verified with PyTorch under ulimit -u",
       .describe = words::openmp_threads,
       .fix = words::kProcessLimitFix},
      {.id = "python.fork-failed",
       .framework = "python",
       .kind = FindingKind::kProcessLimit,
       .failure = true,
       .needles = {"[Errno 11] Resource temporarily unavailable"},
       .description = "multiprocessing's fork start (a DataLoader's workers) could not fork a "
                      "process: the limit on processes and threads",
       .example = "BlockingIOError: [Errno 11] Resource temporarily unavailable",
       .source = "errno EAGAIN of fork, verified under ulimit -u",
       .frame_file = "multiprocessing/popen_fork.py",
       .title = "could not start a process: the limit on processes and threads was reached",
       .fix = words::kProcessLimitFix},
      {.id = "python.spawn-fork-failed",
       .framework = "python",
       .kind = FindingKind::kProcessLimit,
       .failure = true,
       .needles = {"[Errno 11] Resource temporarily unavailable"},
       .description = "multiprocessing's spawn or forkserver start (torch.multiprocessing.spawn) "
                      "could not fork a process: the limit on processes and threads",
       .example = "BlockingIOError: [Errno 11] Resource temporarily unavailable",
       .source = "errno EAGAIN of fork, in multiprocessing/util.py spawnv_passfds",
       .frame_file = "multiprocessing/util.py",
       .frame_function = "spawnv_passfds",
       .title = "could not start a process: the limit on processes and threads was reached",
       .fix = words::kProcessLimitFix},
      {.id = "python.subprocess-fork-failed",
       .framework = "python",
       .kind = FindingKind::kProcessLimit,
       .failure = true,
       .needles = {"[Errno 11] Resource temporarily unavailable"},
       .description = "subprocess could not fork a process: the limit on processes and threads",
       .example = "BlockingIOError: [Errno 11] Resource temporarily unavailable",
       .source = "errno EAGAIN of fork, verified under ulimit -u",
       .frame_file = "/subprocess.py",
       .frame_function = "_execute_child",
       .title = "could not start a process: the limit on processes and threads was reached",
       .fix = words::kProcessLimitFix},
      {.id = "torch.ancdata",
       .framework = "pytorch",
       .kind = FindingKind::kFdExhausted,
       .failure = true,
       .needles = {"items of ancdata"},
       .parts = {{"received ([0-9]+) items of ancdata", {{1, "items", C::kInt}}}},
       .description = "a worker could not pass a descriptor (file_descriptor sharing strategy "
                      "with too many open descriptors)",
       .example = "RuntimeError: received 0 items of ancdata",
       .source = "multiprocessing/reduction.py; pytorch#973",
       .fix = words::kFdExhaustedFix},
  };
}

// Kernel assertions, CUDA libraries, TensorFlow, JAX, the kernel and the driver.
std::vector<Entry> device_entries() {  // NOLINT(readability-function-size): a data table
  return {

      // ---- kernel assertions and indices
      // --------------------------------------------------------------
      {.id = "cuda.device-assertion",
       .framework = "cuda",
       .kind = FindingKind::kDeviceSideAssert,
       .failure = true,
       .needles = {"Assertion `"},
       .parts = {{R"(block: \[([0-9, ]+)\], thread: \[([0-9, ]+)\] Assertion `([^`]+)` failed)",
                  {{1, "block", C::kList}, {2, "thread", C::kList}, {3, "assertion"}},
                  true},
                 {R"(([^\s:]+\.cuh?):([0-9]+): )", {{1, "file"}, {2, "line", C::kInt}}}},
       .description = "a CUDA kernel's assertion, with the kernel's file and the assertion text",
       .example = "/pytorch/aten/src/ATen/native/cuda/Loss.cu:242: "
                  "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] "
                  "Assertion `t >= 0 && t < n_classes` failed.",
       .source = "aten/src/ATen/native/cuda; CASES.md S03, H03"},
      {.id = "torch.assert-target-range",
       .framework = "pytorch",
       .kind = FindingKind::kLabelOutOfRange,
       .failure = true,
       .needles = {"t >= 0 && t < n_classes", "cur_target >= 0 && cur_target < n_classes"},
       .parts = {{R"(Assertion `([^`']+)[`'] failed)", {{1, "assertion"}}}},
       .description = "the loss kernel's check that a target is in [0, classes)",
       .example = "/pytorch/aten/src/ATen/native/cuda/Loss.cu:242: "
                  "nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] "
                  "Assertion `t >= 0 && t < n_classes` failed.",
       .source = "aten/src/ATen/native/cuda/Loss.cu, NLLLoss2d.cu; CASES.md S03, H03",
       .describe = words::label,
       .fix = words::kLabelFix},
      {.id = "torch.assert-index-range",
       .framework = "pytorch",
       .kind = FindingKind::kIndexOutOfRange,
       .failure = true,
       .needles = {"srcIndex < srcSelectDimSize", "&& \"index out of bounds\""},
       .parts = {{R"(Assertion `([^`]+)` failed)", {{1, "assertion"}}}},
       .description = "an indexing kernel's bounds check (embedding, index_select, gather, "
                      "scatter, advanced indexing)",
       .example = "/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1146: indexSelectLargeIndex: "
                  "block: [180,0,0], thread: [64,0,0] Assertion `srcIndex < srcSelectDimSize` "
                  "failed.",
       .source = "aten/src/ATen/native/cuda/Indexing.cu, IndexKernel.cu",
       .describe = words::index,
       .fix = words::kIndexFix},
      {.id = "cuda.device-side-assert",
       .framework = "cuda",
       .kind = FindingKind::kDeviceSideAssert,
       .failure = true,
       .needles = {"device-side assert triggered"},
       .description = "the CUDA error after a kernel assertion (the assertion line comes first)",
       .example = "RuntimeError: CUDA error: device-side assert triggered",
       .source = "c10/cuda/CUDAException.cpp; CASES.md H03"},
      {.id = "torch.target-out-of-bounds",
       .framework = "pytorch",
       .kind = FindingKind::kLabelOutOfRange,
       .failure = true,
       .needles = {" is out of bounds."},
       .parts = {{"Target (-?[0-9]+) is out of bounds", {{1, "label", C::kInt}}, true}},
       .description = "a class target outside [0, classes) in NLL/cross-entropy on CPU",
       .example = "IndexError: Target 255 is out of bounds.",
       .source = "aten/src/ATen/native/LossNLL.cpp; CASES.md S03, H03",
       .describe = words::label,
       .fix = words::kLabelFix},
      {.id = "torch.index-out-of-bounds",
       .framework = "pytorch",
       .kind = FindingKind::kIndexOutOfRange,
       .failure = true,
       .needles = {"is out of bounds for dimension"},
       .parts = {{"index (-?[0-9]+) is out of bounds for dimension ([0-9]+) with size ([0-9]+)",
                  {{1, "index", C::kInt}, {2, "dim", C::kInt}, {3, "size", C::kInt}},
                  true}},
       .description = "an index beyond a dimension (indexing, gather, scatter on CPU)",
       .example = "IndexError: index 5 is out of bounds for dimension 0 with size 4",
       .source = "aten/src/ATen/native/TensorAdvancedIndexing.cpp",
       .describe = words::index,
       .fix = words::kIndexFix},
      {.id = "torch.index-out-of-range-self",
       .framework = "pytorch",
       .kind = FindingKind::kIndexOutOfRange,
       .failure = true,
       .needles = {"index out of range in self"},
       .description = "an embedding index beyond num_embeddings (CPU)",
       .example = "IndexError: index out of range in self",
       .source = "aten/src/ATen/native/Indexing.cpp (index_select)",
       .describe = words::index,
       .fix = words::kIndexFix},
      {.id = "torch.cuda-async-hint",
       .framework = "pytorch",
       .kind = std::nullopt,
       .failure = false,
       .needles = {"CUDA kernel errors might be asynchronously reported"},
       .description = "the hint after a CUDA error: the Python stack may point at a later call",
       .example = "CUDA kernel errors might be asynchronously reported at some other API call, so "
                  "the stacktrace below might be incorrect.",
       .source = "c10/cuda/CUDAException.cpp"},

      // ---- CUDA, cuBLAS, cuDNN
      // ------------------------------------------------------------------------
      {.id = "cuda.illegal-memory-access",
       .framework = "cuda",
       .kind = FindingKind::kCudaIllegalAccess,
       .failure = true,
       .needles = {"an illegal memory access was encountered", "cudaErrorIllegalAddress"},
       .description = "a kernel accessed memory out of bounds (or a collective size mismatch)",
       .example = "RuntimeError: CUDA error: an illegal memory access was encountered",
       .source = "CUDA runtime; distributed.md d.6"},
      {.id = "cuda.ecc-uncorrectable",
       .framework = "cuda",
       .kind = FindingKind::kHardwareFault,
       .failure = true,
       .needles = {"uncorrectable ECC error encountered"},
       .description = "a GPU memory hardware fault",
       .example = "RuntimeError: CUDA error: uncorrectable ECC error encountered",
       .source = "CUDA runtime; CASES.md HW01"},
      {.id = "cuda.fork-reinit",
       .framework = "pytorch",
       .kind = FindingKind::kPythonException,
       .failure = true,
       .needles = {"Cannot re-initialize CUDA in forked subprocess"},
       .description = "CUDA used in a process forked after the parent initialized CUDA",
       .example = "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
                  "multiprocessing, you must use the 'spawn' start method",
       .source = "torch/cuda/__init__.py; CASES.md T10"},
      {.id = "cuda.error",
       .framework = "cuda",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"CUDA error: "},
       .parts = {{R"(CUDA error: ([^.`]{1,256}?)(?: when calling|\.|$))", {{1, "cuda_error"}}}},
       .description = "any CUDA runtime error as PyTorch reports it (specific ones have their own "
                      "signatures)",
       .example = "RuntimeError: CUDA error: unspecified launch failure",
       .source = "c10/cuda/CUDAException.cpp"},
      {.id = "cublas.status",
       .framework = "cuda",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"CUBLAS_STATUS_"},
       .parts = {{"(CUBLAS_STATUS_[A-Z_]+)", {{1, "status"}}, true},
                 {R"(when calling `([^`(]+))", {{1, "call"}}}},
       .description = "a cuBLAS failure (ALLOC_FAILED: gpu-oom; EXECUTION_FAILED often follows an "
                      "out-of-range index or illegal access)",
       .example =
           "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling "
           "`cublasSgemm( handle, opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
       .source = "aten/src/ATen/cuda/Exceptions.h",
       .refine = {{{{"status", Test::kEquals, "CUBLAS_STATUS_ALLOC_FAILED"}},
                   FindingKind::kGpuOom}}},
      {.id = "cudnn.status",
       .framework = "cuda",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"CUDNN_STATUS_"},
       .parts = {{"(CUDNN_STATUS_[A-Z_]+)", {{1, "status"}}, true}},
       .description = "a cuDNN failure (NOT_INITIALIZED and INTERNAL_ERROR at the first conv are "
                      "often memory starvation)",
       .example = "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR",
       .source = "aten/src/ATen/cudnn/Exceptions.h; memory.md a.3",
       .refine = {{{{"status", Test::kEquals, "CUDNN_STATUS_ALLOC_FAILED"}},
                   FindingKind::kGpuOom}}},

      // ---- TensorFlow / Keras / Horovod
      // ---------------------------------------------------------------
      {.id = "tf.oom-tensor",
       .framework = "tensorflow",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"OOM when allocating tensor"},
       .parts =
           {{R"(OOM when allocating tensor with shape ?\[([0-9, ]*)\] and type (\w+) on (\S+) by)"
             R"( allocator (\S+))",
             {{1, "shape", C::kList}, {2, "dtype"}, {3, "device"}, {4, "allocator"}}},
            {"device:GPU:([0-9]+)", {{1, "gpu", C::kInt}}}},
       .description = "TensorFlow could not allocate an op's output (host-alloc-failed on a CPU "
                      "device)",
       .example = "OOM when allocating tensor with shape[500,512,4,4] and type float on "
                  "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
       .source = "tensorflow/core/framework/op_kernel.cc; memory.md a.6",
       .refine = {{.when = {{"device", Test::kContains, "device:CPU:"}},
                   .kind = FindingKind::kHostAllocFailed,
                   .describe = words::host_alloc,
                   .fix = words::kHostAllocFix}}},
      {.id = "tf.resource-exhausted",
       .framework = "tensorflow",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"ResourceExhaustedError"},
       .description = "TensorFlow's ResourceExhaustedError (almost always an allocator OOM)",
       .example = "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when "
                  "allocating tensor with shape[32,512,64,64] and type float on "
                  "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
       .source = "tensorflow/python/framework/errors_impl.py"},
      {.id = "tf.bfc-oom",
       .framework = "tensorflow",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"ran out of memory trying to allocate"},
       .parts = {{R"(Allocator \(([^)]+)\) ran out of memory trying to allocate )" TD_SIZE,
                  {{1, "allocator"}, {2, "requested_bytes", C::kSize}},
                  true},
                 {R"(\(rounded to ([0-9]+)\))", {{1, "rounded_bytes", C::kInt}}},
                 {R"(requested by op (\S+))", {{1, "op"}}},
                 {"GPU_([0-9]+)_bfc", {{1, "gpu", C::kInt}}}},
       .description = "TensorFlow's/XLA's BFC allocator failed an allocation (fatal path)",
       .example = "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB (rounded to "
                  "1073741824)requested by op MatMul",
       .source = "xla/tsl/framework/bfc_allocator.cc; memory.md a.6",
       .unless = "The caller indicates that this is not a failure"},
      {.id = "tf.bfc-oom-nonfatal",
       .framework = "tensorflow",
       .kind = FindingKind::kGpuOom,
       .failure = false,
       .needles = {"The caller indicates that this is not a failure"},
       .parts = {{R"(Allocator \(([^)]+)\) ran out of memory trying to allocate )" TD_SIZE,
                  {{1, "allocator"}, {2, "requested_bytes", C::kSize}}},
                 {"freed_by_count=([0-9]+)", {{1, "freed_by_count", C::kInt}}},
                 {"GPU_([0-9]+)_bfc", {{1, "gpu", C::kInt}}}},
       .description = "the BFC allocator's warning when the caller has a fallback: not a failure",
       .example = "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.25GiB with "
                  "freed_by_count=0. The caller indicates that this is not a failure, but may mean "
                  "that there could be performance gains if more memory were available.",
       .source = "xla/tsl/framework/bfc_allocator.cc; memory.md a.6"},
      {.id = "tf.host-alloc-warning",
       .framework = "tensorflow",
       .kind = std::nullopt,
       .failure = false,
       .needles = {"of free system memory"},
       .parts = {{"Allocation of ([0-9]+) exceeds ([0-9]+)% of free system memory",
                  {{1, "requested_bytes", C::kInt}}}},
       .description = "a large host allocation (warning)",
       .example = "W tensorflow/core/framework/cpu_allocator_impl.cc:82] Allocation of 1207959552 "
                  "exceeds 10% of free system memory.",
       .source = "tensorflow/core/framework/cpu_allocator_impl.cc"},
      {.id = "tf.gc-fragmentation",
       .framework = "tensorflow",
       .kind = FindingKind::kGpuFragmentation,
       .failure = false,
       .needles = {"Garbage collection: deallocate free memory regions"},
       .description = "the BFC allocator frees regions to fight fragmentation (near the limit)",
       .example =
           "Garbage collection: deallocate free memory regions (i.e., allocations) so that we "
           "can re-allocate a larger region to avoid OOM due to memory fragmentation.",
       .source = "xla/tsl/framework/bfc_allocator.cc"},
      {.id = "tf.dst-tensor",
       .framework = "tensorflow",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"Dst tensor is not initialized"},
       .description = "TensorFlow's copy to a GPU tensor failed: usually out of GPU memory",
       .example = "tensorflow.python.framework.errors_impl.InternalError: Dst tensor is not "
                  "initialized.",
       .source = "tensorflow#7025"},
      {.id = "tf.conv-algorithm",
       .framework = "tensorflow",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"Failed to get convolution algorithm"},
       .description = "cuDNN failed to initialize (often memory starvation or a driver mismatch)",
       .example = "UnknownError: Failed to get convolution algorithm. This is probably because "
                  "cuDNN failed to initialize, so try looking to see if a warning log message was "
                  "printed above.",
       .source = "tensorflow conv_ops; memory.md a.6"},
      {.id = "tf.collective-shape-mismatch",
       .framework = "tensorflow",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {"Shape mismatch in the collective instance"},
       .parts =
           {{R"(collective instance ([0-9]+)\. Op at device (\S+) expected shape \[([^\]]*)\] but)"
             R"( another member in the group expected shape \[([^\]]*)\])",
             {{1, "instance", C::kInt},
              {2, "device"},
              {3, "shape", C::kList},
              {4, "other_shape", C::kList}}}},
       .description = "MirroredStrategy/MultiWorkerMirroredStrategy members fed different shapes",
       .example =
           "Shape mismatch in the collective instance 100. Op at device "
           "/job:localhost/replica:0/task:0/device:GPU:1 expected shape [416202] but another "
           "member in the group expected shape [1630346].",
       .source = "tensorflow/core/common_runtime/collective_param_resolver_local.cc; CASES.md S05",
       .describe = words::collective_shapes,
       .fix = words::kCollectiveMismatchFix},
      {.id = "horovod.mismatch",
       .framework = "horovod",
       .kind = FindingKind::kCollectiveMismatch,
       .failure = true,
       .needles = {": One rank "},
       .parts = {{"Mismatched ([A-Za-z_ ]+): One rank", {{1, "what"}}, true}},
       .description = "Horovod's coordinator found ranks' requests differ",
       .example = "Mismatched ALLREDUCE tensor shapes: One rank sent a tensor of shape [2, 3], but "
                  "another rank sent a tensor of shape [3, 3].",
       .source = "horovod/common/controller.cc",
       .describe = words::collective_shapes,
       .fix = words::kCollectiveMismatchFix},
      {.id = "horovod.stall",
       .framework = "horovod",
       .kind = FindingKind::kCollectiveMissing,
       .failure = false,
       .needles = {"submitted to be reduced, gathered or broadcasted by subset of ranks"},
       .description = "Horovod's stall inspector: some ranks did not submit a tensor",
       .example =
           "One or more tensors were submitted to be reduced, gathered or broadcasted by "
           "subset of ranks and are waiting for remainder of ranks for more than 60 seconds.",
       .source = "horovod/common/stall_inspector.cc",
       .describe = words::collective_missing,
       .fix = words::kCollectiveMissingFix},

      // ---- JAX / XLA
      // ----------------------------------------------------------------------------------
      {.id = "xla.resource-exhausted",
       .framework = "jax",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"RESOURCE_EXHAUSTED: Out of memory", "Ran out of memory in memory space"},
       .parts = {{"Out of memory (?:while trying to allocate|allocating) " TD_SIZE,
                  {{1, "requested_bytes", C::kSize}}},
                 {R"(\[executable_name='([^']+)'\])", {{1, "executable"}}},
                 {"while running replica ([0-9]+) and partition ([0-9]+)",
                  {{1, "replica", C::kInt}, {2, "partition", C::kInt}}},
                 {R"(Used (\S+) of (\S+) hbm)",
                  {{1, "used_bytes", C::kSize}, {2, "capacity_bytes", C::kSize}}}},
       .description = "XLA ran out of device memory (JAX; TPU compile-time \"hbm\" too)",
       .example = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while "
                  "trying to allocate 17179869184 bytes.",
       .source = "xla/stream_executor/integrations/tf_allocator_adapter.cc; CASES.md H19",
       .unless = "Out of host memory"},
      {.id = "xla.host-oom",
       .framework = "jax",
       .kind = FindingKind::kHostAllocFailed,
       .failure = true,
       .needles = {"Out of host memory"},
       .parts = {{"Out of host memory (?:while trying to allocate|allocating) " TD_SIZE,
                  {{1, "requested_bytes", C::kSize}}}},
       .description = "XLA ran out of pinned host memory",
       .example = "RESOURCE_EXHAUSTED: Out of host memory while trying to allocate 68719476736 "
                  "bytes.",
       .source = "xla/stream_executor/integrations/tf_allocator_adapter.cc",
       .describe = words::host_alloc,
       .fix = words::kHostAllocFix},
      {.id = "xla.runtime-error",
       .framework = "jax",
       .kind = std::nullopt,
       .failure = true,
       .needles = {"XlaRuntimeError", "JaxRuntimeError"},
       .description = "JAX's runtime error (its status, e.g. RESOURCE_EXHAUSTED, has its own "
                      "signature)",
       .example = "jax.errors.JaxRuntimeError: INTERNAL: Failed to execute XLA Runtime executable",
       .source = "jaxlib"},
      {.id = "xla.allocate-failed",
       .framework = "jax",
       .kind = FindingKind::kGpuOom,
       .failure = true,
       .needles = {"Failed to allocate request for"},
       .parts =
           {{R"(Failed to allocate request for (\S+) \(([0-9]+)B\) on device ordinal ([0-9]+))",
             {{2, "requested_bytes", C::kInt}, {3, "gpu", C::kInt}}}},
       .description = "XLA's platform allocator failed (XLA_PYTHON_CLIENT_ALLOCATOR=platform)",
       .example = "Failed to allocate request for 1.00GiB (1073741824B) on device ordinal 0",
       .source = "xla/stream_executor/stream_executor_memory_allocator.cc; memory.md a.7"},
      {.id = "xla.remat-warning",
       .framework = "jax",
       .kind = FindingKind::kGpuOom,
       .failure = false,
       .needles = {"by rematerialization; only reduced to"},
       .parts = {{R"(Can't reduce memory use below (\S+)(?: \(([0-9]+) bytes\))?)",
                  {{2, "limit_bytes", C::kInt}}}},
       .description = "XLA could not fit the program in memory at compile time (an OOM follows)",
       .example =
           "Can't reduce memory use below 17.97GiB (19297974672 bytes) by rematerialization; "
           "only reduced to 20.51GiB (22027581828 bytes), down from 20.67GiB (22193496744 "
           "bytes) originally",
       .source = "xla/service/hlo_rematerialization.cc; memory.md a.7"},
      {.id = "xla.rendezvous-stuck",
       .framework = "jax",
       .kind = FindingKind::kCollectiveMissing,
       .failure = false,
       .needles = {"and may be stuck"},
       .parts = {{"This thread has been waiting for", {}, true},
                 {"for ([0-9]+) seconds and may be stuck", {{1, "waited_ms", C::kSeconds}}}},
       .description = "XLA's in-process rendezvous is waiting for devices that do not arrive",
       .example =
           "This thread has been waiting for `initialize clique for rank 6` for 10 seconds "
           "and may be stuck. Expected 8 threads to join the rendezvous, but not all of them "
           "arrived on time.",
       .source = "xla/service/rendezvous.cc; distributed.md d.3",
       .describe = words::collective_missing,
       .fix = words::kCollectiveMissingFix},

      // ---- kernel, driver
      // -----------------------------------------------------------------------------
      {.id = "kernel.oom-kill",
       .framework = "kernel",
       .kind = FindingKind::kHostOomKilled,
       .failure = true,
       .needles = {"Killed process "},
       .parts =
           {{R"(Killed process ([0-9]+) \(([^)]*)\))", {{1, "pid", C::kInt}, {2, "comm"}}, true},
            {"total-vm:([0-9]+)kB, anon-rss:([0-9]+)kB, file-rss:([0-9]+)kB, shmem-rss:([0-9]+)kB",
             {{1, "total_vm_bytes", C::kKiB},
              {2, "anon_rss_bytes", C::kKiB},
              {3, "file_rss_bytes", C::kKiB},
              {4, "shmem_rss_bytes", C::kKiB}}},
            {"Memory cgroup out of memory", {{0, "cgroup", C::kFlag}}},
            {"oom_score_adj:(-?[0-9]+)", {{1, "oom_score_adj", C::kInt}}}},
       .description = "the kernel's or a memory cgroup's OOM killer killed a process",
       .example = "Out of memory: Killed process 1234 (python3) total-vm:35181364kB, "
                  "anon-rss:31012336kB, file-rss:0kB, shmem-rss:12kB, UID:1000 pgtables:62000kB "
                  "oom_score_adj:0",
       .source = "mm/oom_kill.c; memory.md a.8"},
      {.id = "kernel.oom-kill-constraint",
       .framework = "kernel",
       .kind = FindingKind::kHostOomKilled,
       .failure = true,
       .needles = {"oom-kill:constraint="},
       .parts = {{R"(oom-kill:constraint=(\w+))", {{1, "constraint"}}},
                 {",oom_memcg=([^,]+)", {{1, "memcg"}}},
                 {",task=([^,]+),pid=([0-9]+)", {{1, "comm"}, {2, "pid", C::kInt}}},
                 {",uid=([0-9]+)", {{1, "uid", C::kInt}}}},
       .description = "the OOM killer's summary line (constraint, cgroup, victim)",
       .example = "oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,"
                  "oom_memcg=/docker/abc,task_memcg=/docker/abc,task=python3,pid=1234,uid=0",
       .source = "mm/oom_kill.c dump_oom_summary"},
      {.id = "kernel.oom-invoked",
       .framework = "kernel",
       .kind = FindingKind::kHostOomKilled,
       .failure = true,
       .needles = {" invoked oom-killer: "},
       .parts = {{R"((\S+) invoked oom-killer: )", {{1, "comm"}}}},
       .description = "an allocation by this process started the OOM killer (the victim may be "
                      "another)",
       .example = "python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
                  "oom_score_adj=0",
       .source = "mm/oom_kill.c"},
      {.id = "kernel.nvrm-xid",
       .framework = "nvidia-driver",
       .kind = FindingKind::kHardwareFault,
       .failure = true,
       .needles = {"NVRM: Xid"},
       .parts = {{R"(NVRM: Xid \(([^)]*)\): ([0-9]+), )",
                  {{1, "pci"}, {2, "xid", C::kInt}, {0, "detail", C::kRest}},
                  true},
                 {"pid='?([0-9]+)", {{1, "pid", C::kInt}}}},
       .description =
           "an NVIDIA driver error event (Xid): hardware (48, 63, 64, 74, 79, 92, 94, "
           "95, ...) or the application's own fault (13, 31: illegal access; 43, 45, 68)",
       .example = "NVRM: Xid (PCI:0000:06:00): 79, GPU has fallen off the bus.",
       .source = "NVIDIA Xid catalog; CASES.md HW02; memory.md a.9",
       .refine = {{{{"xid", Test::kEquals, "13"}}, FindingKind::kCudaIllegalAccess},
                  {{{"xid", Test::kEquals, "31"}}, FindingKind::kCudaIllegalAccess},
                  {{{"xid", Test::kEquals, "43"}}, std::nullopt, -1, true},
                  {{{"xid", Test::kEquals, "45"}}, std::nullopt, 0, true},
                  {{{"xid", Test::kEquals, "68"}}, std::nullopt, -1, true}}},
      {.id = "kernel.gpu-off-bus",
       .framework = "nvidia-driver",
       .kind = FindingKind::kHardwareFault,
       .failure = true,
       .needles = {"GPU has fallen off the bus"},
       .description = "the GPU disappeared from PCIe (power, thermal, link)",
       .example = "NVRM: GPU 0000:06:00.0: GPU has fallen off the bus.",
       .source = "NVIDIA/open-gpu-kernel-modules#507; CASES.md HW02"},
      {.id = "kernel.pcie-aer",
       .framework = "kernel",
       .kind = FindingKind::kHardwareFault,
       .failure = true,
       .needles = {"PCIe Bus Error: "},
       .parts = {{R"(PCIe Bus Error: severity=([A-Za-z ()]+?), type=([A-Za-z ]+))",
                  {{1, "severity"}, {2, "type"}}}},
       .description = "a PCIe error report (corrected ones are warnings)",
       .example =
           "pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, "
           "(Transmitter ID)",
       .source = "drivers/pci/pcie/aer.c; CASES.md HW02",
       .refine = {{{{"severity", Test::kEquals, "Corrected"}}, std::nullopt, 0}}},
      {.id = "nvidia-smi.gpu-lost",
       .framework = "nvidia-driver",
       .kind = FindingKind::kHardwareFault,
       .failure = true,
       .needles = {"Unable to determine the device handle for GPU", "GPU is lost"},
       .parts = {{R"(device handle for GPU ?([0-9A-Fa-f:.]+): )",
                  {{1, "pci"}, {0, "error", C::kRest}}}},
       .description = "nvidia-smi/NVML cannot reach a GPU",
       .example = "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error",
       .source = "nvidia-smi; CASES.md HW02"},

  };
}

// The table's order is the catalog's and match_line's.
std::vector<Entry> make_table() {
  std::vector<Entry> table;
  for (auto* part :
       {memory_entries, python_signature_entries, distributed_signature_entries, device_entries}) {
    std::vector<Entry> entries = part();
    table.insert(table.end(), std::make_move_iterator(entries.begin()),
                 std::make_move_iterator(entries.end()));
  }
  return table;
}

#undef TD_SIZE

}  // namespace

const std::vector<Entry>& signature_table() {
  static const std::vector<Entry> table = make_table();
  return table;
}

}  // namespace traindoc::analysis
