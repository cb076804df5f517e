// The catalog of known error texts as one table: each entry is a needle (substring test), patterns
// with the fields they extract, and the finding kind the text points to. docs/signatures.md
// lists it; the unit tests check every example against its entry. Pure data. This file holds the
// memory entries and joins the parts: signature_table_distributed.cpp (DDP, c10d, gloo, NCCL,
// store, launchers), signature_table_python.cpp (the interpreter, the training loop) and
// signature_table_device.cpp (kernel assertions, CUDA libraries, TensorFlow, JAX, kernel, driver).
#include "analysis/signature_table.h"

#include "analysis/signature_words.h"

#include <iterator>

namespace traindoc::analysis {
namespace {

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

// The table's order is the catalog's and match_line's.
std::vector<Entry> make_table() {
  std::vector<Entry> table;
  for (auto* part : {memory_entries, python_signature_entries, distributed_signature_entries,
                     device_signature_entries}) {
    std::vector<Entry> entries = part();
    table.insert(table.end(), std::make_move_iterator(entries.begin()),
                 std::make_move_iterator(entries.end()));
  }
  return table;
}

}  // namespace

const std::vector<Entry>& signature_table() {
  static const std::vector<Entry> table = make_table();
  return table;
}

}  // namespace traindoc::analysis
