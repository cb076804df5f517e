// The words of each preflight result: the measured fact and what it does to the job, and the
// fix. One function per check, made from the result's facts alone, so that `traindoc check`, the
// start of `traindoc run` and the report say the same. Pure.
#include <cerrno>
#include <cstring>

#include "analysis/diagnosis.h"
#include "analysis/preflight_checks.h"

namespace traindoc::analysis {
namespace {

using store::PreflightCheck;
using store::PreflightResult;
using Words = PreflightWords;

std::string bytes(const std::optional<int64_t>& value) {
  return format_bytes(static_cast<uint64_t>(value.value_or(0)));
}

std::string number(const std::optional<int64_t>& value) {
  return std::to_string(value.value_or(0));
}

std::string gpu(const PreflightResult& r) {
  return "GPU " + std::to_string(r.device.value_or(0));
}

std::string holder(const PreflightResult& r) {
  if (!r.pid) return "";
  std::string command = r.subject.size() > 60 ? r.subject.substr(0, 57) + "..." : r.subject;
  return " (pid " + std::to_string(*r.pid) + (command.empty() ? "" : ": " + command) + ")";
}

Words shm_missing(const PreflightResult&) {
  return {"/dev/shm does not exist: DataLoader workers and NCCL cannot share memory",
          "Mount a tmpfs there (mount -t tmpfs -o size=8g tmpfs /dev/shm), or run the container "
          "with --shm-size=8g or --ipc=host."};
}

Words shm_not_tmpfs(const PreflightResult&) {
  return {"/dev/shm is not a tmpfs: the tensors DataLoader workers pass go through a disk",
          "Mount a tmpfs at /dev/shm (mount -t tmpfs -o size=8g tmpfs /dev/shm)."};
}

Words shm_small(const PreflightResult& r) {
  std::string workers =
      r.subject.empty() ? "" : " for " + r.subject + " DataLoader worker(s) a rank";
  std::string title = "/dev/shm has " + bytes(r.measured) + " free of " + bytes(r.total) + ": " +
                      (r.verdict == store::Verdict::kWillFail
                           ? "not even one batch fits"
                           : "less than the " + bytes(r.threshold) + " the batches in flight" +
                                 workers + " may take") +
                      "; a worker then dies of a Bus error";
  return {title,
          "Give the container more shared memory: docker run --shm-size=8g (or --ipc=host); on "
          "Kubernetes an emptyDir with medium: Memory at /dev/shm. Or lower num_workers, "
          "prefetch_factor or the batch size; remove stale /dev/shm/torch_* files."};
}

Words gpu_memory_taken(const PreflightResult& r) {
  std::string title = gpu(r) + " already holds " + bytes(r.measured) + " of " + bytes(r.total) +
                      " for processes outside the job" + holder(r) +
                      (r.verdict == store::Verdict::kWillFail ? ": nothing is left for the job"
                                                              : ": the job gets only the rest");
  return {title,
          "End the process that holds it (nvidia-smi lists them), or choose a free GPU with "
          "CUDA_VISIBLE_DEVICES; a batch size found on an empty GPU will not fit here."};
}

Words gpu_exclusive_taken(const PreflightResult& r) {
  return {gpu(r) + " is in exclusive-process mode and already taken" + holder(r) +
              ": the job's CUDA context on it fails (all CUDA-capable devices are busy or "
              "unavailable)",
          "Wait for that process, choose another GPU with CUDA_VISIBLE_DEVICES, or set the mode "
          "back: nvidia-smi -i " +
              std::to_string(r.device.value_or(0)) + " -c DEFAULT (as root)."};
}

Words gpu_prohibited(const PreflightResult& r) {
  return {gpu(r) + " is in compute mode prohibited: no process may create a CUDA context on it",
          "Choose another GPU with CUDA_VISIBLE_DEVICES, or nvidia-smi -i " +
              std::to_string(r.device.value_or(0)) + " -c DEFAULT (as root)."};
}

Words visible_devices_invalid(const PreflightResult& r) {
  std::string title = "CUDA_VISIBLE_DEVICES names \"" + r.subject + "\", which is no GPU of the " +
                      number(r.total) + " here: CUDA ignores it and every entry after it, ";
  title += r.measured == 0 ? "and the job sees no GPU" : "and the job sees " + number(r.measured);
  return {title, "Name the GPUs by their index (0 to " + std::to_string(r.total.value_or(1) - 1) +
                     ") or UUID as nvidia-smi -L lists them, each once."};
}

Words ranks_exceed_gpus(const PreflightResult& r) {
  return {number(r.measured) + " ranks on this node but " + number(r.threshold) +
              " GPU(s) visible: a rank past them asks for a device that does not exist (invalid "
              "device ordinal) or shares one, which NCCL refuses",
          "Start one rank per GPU: --nproc_per_node " + number(r.threshold) +
              " (or gpu), or make more GPUs visible with CUDA_VISIBLE_DEVICES."};
}

Words host_memory_low(const PreflightResult& r) {
  return {"the host has " + bytes(r.measured) + " available of " + bytes(r.total) + " (under " +
              bytes(r.threshold) + ")" + (r.subject.empty() ? "" : ", and no swap") +
              ": the ranks and their workers may be killed by the OOM killer",
          "End what else uses the memory, or lower num_workers (each worker holds a copy of "
          "what the dataset keeps in Python objects) and the batch size."};
}

Words cgroup_memory_low(const PreflightResult& r) {
  return {"the memory cgroup (" + r.subject + ") leaves " + bytes(r.measured) + " under its " +
              "limit of " + bytes(r.total) + ": the job is killed when it needs more",
          "Ask the scheduler or container for more memory (--mem, docker run --memory, the pod's "
          "limits), or lower num_workers and the batch size."};
}

Words nofile_low(const PreflightResult& r) {
  // A hard limit above the soft one is the user's to take; else only root or the container's
  // start can raise it.
  std::string raise = r.total && *r.total > r.measured.value_or(0)
                          ? "ulimit -n " + number(r.total)
                          : "ulimit -n 65536 as root, or docker run --ulimit nofile=65536:65536";
  return {"the open-file limit is " + number(r.measured) + " (under " + number(r.threshold) +
              "): DataLoader workers keep a descriptor open for each tensor they pass "
              "(Too many open files)",
          "Raise it before the job: " + raise +
              "; or call torch.multiprocessing.set_sharing_strategy('file_system') at the start "
              "of the script."};
}

Words memlock_low(const PreflightResult& r) {
  return {"the locked-memory limit is " + bytes(r.measured) +
              " with InfiniBand present: NCCL "
              "cannot register its buffers with the network card (ibv_reg_mr failed)",
          "Raise it to unlimited: ulimit -l unlimited, docker run --ulimit memlock=-1, or "
          "LimitMEMLOCK=infinity for a systemd service."};
}

Words stack_small(const PreflightResult& r) {
  return {"the stack limit is " + bytes(r.measured) + " (under " + bytes(r.threshold) +
              "): a deep recursion or a thread's stack (glibc sizes them by it) overflows",
          "Raise it: ulimit -s 8192 (or more), before the job starts."};
}

Words core_dumps_large(const PreflightResult& r) {
  std::string limit = r.measured ? bytes(r.measured) : "unlimited";
  return {"core dumps are on (limit " + limit + ", core_pattern " + r.subject +
              "): each crashing process writes a file as large as its memory, which can fill "
              "the disk of the job's folder",
          "Turn them off for training (ulimit -c 0) unless you need them, or point "
          "/proc/sys/kernel/core_pattern at a disk with room."};
}

Words python_missing(const PreflightResult& r) {
  return {"the command's Python is not found (" + r.subject + ")",
          "Check the command and PATH, or activate the environment that has it."};
}

Words torch_missing(const PreflightResult& r) {
  return {r.subject + " has no torch: the job fails at import torch (ModuleNotFoundError)",
          "Install PyTorch for this interpreter (pip install torch), or run the command with the "
          "Python of the environment that has it."};
}

Words torch_other_python(const PreflightResult& r) {
  return {"torch in " + r.subject + " was built for Python " +
              python_version_text(r.threshold.value_or(0)) + ", and the job's Python is " +
              python_version_text(r.measured.value_or(0)) + ": import torch fails",
          "Install torch for Python " + python_version_text(r.measured.value_or(0)) +
              ", or run the job with Python " + python_version_text(r.threshold.value_or(0)) + "."};
}

Words torch_cuda_newer(const PreflightResult& r) {
  std::string title = "torch is built for CUDA " + cuda_version_text(r.measured.value_or(0)) +
                      ", newer than the driver's " + cuda_version_text(r.threshold.value_or(0)) +
                      (r.subject.empty() ? "" : " (driver " + r.subject + ")") + ": ";
  title += r.verdict == store::Verdict::kWillFail
               ? "CUDA does not start (the driver is too old)"
               : "kernels compiled only as PTX for the newer CUDA fail to load";
  return {title,
          "Install the torch build for CUDA " + cuda_version_text(r.threshold.value_or(0)) +
              " or older (pip install torch --index-url https://download.pytorch.org/whl/cu" +
              std::to_string(r.threshold.value_or(0) / 1000) +
              std::to_string(r.threshold.value_or(0) % 1000 / 10) + "), or update the driver."};
}

Words torch_cpu_only(const PreflightResult& r) {
  return {"torch " + r.subject + " is built without CUDA, and " + number(r.measured) +
              " GPU(s) are here: the job trains on the CPU, or fails at .cuda()",
          "Install a CUDA build of torch (https://pytorch.org/get-started/locally/)."};
}

Words torchrun_redirects(const PreflightResult& r) {
  return {"torchrun of torch " + r.subject + " on Python " +
              python_version_text(r.measured.value_or(0)) +
              " parses its default --redirects 0 to None and dies before starting any rank",
          "Pass --redirects 2 --tee 2 (any non-zero value) to torchrun, or use a PyTorch release "
          "with the fix."};
}

Words master_addr_unresolved(const PreflightResult& r) {
  return {"the rendezvous host " + r.subject + " does not resolve: no rank can join",
          "Set MASTER_ADDR (or --master_addr, --rdzv_endpoint) to the first node's name or "
          "address as the other nodes can resolve it."};
}

Words master_port_taken(const PreflightResult& r) {
  return {"port " + number(r.measured) + " on " + r.subject +
              " is already in use: the rendezvous store cannot bind it (address already in use)",
          "Choose a free port (--master_port, MASTER_PORT), or end the job that holds it; "
          "torchrun --standalone picks one itself."};
}

Words master_port_invalid(const PreflightResult& r) {
  return {r.subject + " is no TCP port (0 to 65535): torch refuses it (ValueError) before any " +
              "rank joins",
          "Give a port from 1024 to 65535 that is free on the first node (--master_port, "
          "MASTER_PORT); torch's default is 29500."};
}

Words rendezvous_port_missing(const PreflightResult& r) {
  return {"--rdzv_endpoint " + r.subject +
              " names no port: torchrun's static rendezvous (its default backend) stops with "
              "\"port is missing in endpoint\" before any rank starts, whatever --master_port says",
          "Give the port in the endpoint (--rdzv_endpoint " + r.subject +
              ":29500), or use --rdzv_backend c10d, whose endpoint takes port 29400 when it "
              "names none."};
}

Words master_port_unreachable(const PreflightResult& r) {
  std::string title = "a TCP connect from this node to the rendezvous at " + r.subject;
  std::string after =
      r.threshold.value_or(0) == 0 ? "at once" : "after " + number(r.threshold) + " ms";
  title += r.measured == ETIMEDOUT ? " got no answer in " + number(r.threshold) + " ms"
                                   : " failed " + after + ": " +
                                         std::strerror(static_cast<int>(r.measured.value_or(0)));
  title +=
      ": a firewall drops it or the address is not the first node's as this node reaches "
      "it, and the rendezvous times out";
  return {title,
          "Check that MASTER_ADDR (or --master_addr, --rdzv_endpoint) is the first node's "
          "address on a network this node reaches (nc -zv HOST PORT once it runs), that no "
          "firewall drops TCP between the nodes (NCCL and gloo open more ports than this one), "
          "and that NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME name the interface on that network."};
}

Words socket_ifname_missing(const PreflightResult& r) {
  return {r.subject + " matches none of this machine's " + number(r.measured) +
              " network interfaces: NCCL or gloo finds no interface to use",
          "Name an interface that exists (ip -br link lists them), or unset the variable."};
}

}  // namespace

std::string python_version_text(int64_t version) {
  return std::to_string(version / 100) + "." + std::to_string(version % 100);
}

std::string cuda_version_text(int64_t version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

PreflightWords describe(const store::PreflightResult& r) {
  switch (r.check) {
    case PreflightCheck::kShmMissing:
      return shm_missing(r);
    case PreflightCheck::kShmNotTmpfs:
      return shm_not_tmpfs(r);
    case PreflightCheck::kShmSmall:
      return shm_small(r);
    case PreflightCheck::kGpuMemoryTaken:
      return gpu_memory_taken(r);
    case PreflightCheck::kGpuExclusiveTaken:
      return gpu_exclusive_taken(r);
    case PreflightCheck::kGpuProhibited:
      return gpu_prohibited(r);
    case PreflightCheck::kVisibleDevicesInvalid:
      return visible_devices_invalid(r);
    case PreflightCheck::kRanksExceedGpus:
      return ranks_exceed_gpus(r);
    case PreflightCheck::kHostMemoryLow:
      return host_memory_low(r);
    case PreflightCheck::kCgroupMemoryLow:
      return cgroup_memory_low(r);
    case PreflightCheck::kNofileLow:
      return nofile_low(r);
    case PreflightCheck::kMemlockLow:
      return memlock_low(r);
    case PreflightCheck::kStackSmall:
      return stack_small(r);
    case PreflightCheck::kCoreDumpsLarge:
      return core_dumps_large(r);
    case PreflightCheck::kPythonMissing:
      return python_missing(r);
    case PreflightCheck::kTorchMissing:
      return torch_missing(r);
    case PreflightCheck::kTorchOtherPython:
      return torch_other_python(r);
    case PreflightCheck::kTorchCudaNewer:
      return torch_cuda_newer(r);
    case PreflightCheck::kTorchCpuOnly:
      return torch_cpu_only(r);
    case PreflightCheck::kTorchrunRedirects:
      return torchrun_redirects(r);
    case PreflightCheck::kMasterAddrUnresolved:
      return master_addr_unresolved(r);
    case PreflightCheck::kMasterPortInvalid:
      return master_port_invalid(r);
    case PreflightCheck::kRendezvousPortMissing:
      return rendezvous_port_missing(r);
    case PreflightCheck::kMasterPortTaken:
      return master_port_taken(r);
    case PreflightCheck::kMasterPortUnreachable:
      return master_port_unreachable(r);
    case PreflightCheck::kSocketIfnameMissing:
      return socket_ifname_missing(r);
  }
  return {std::string(to_string(r.check)), ""};
}

}  // namespace traindoc::analysis
