// The preflight checks, one function each: facts in, the traps they set out. Pure.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <set>

#include "analysis/preflight_checks.h"

namespace traindoc::analysis {
namespace {

using store::PreflightCheck;
using store::PreflightFacts;
using store::PreflightResult;
using store::Verdict;
using Results = std::vector<PreflightResult>;

PreflightResult& add(Results& out, PreflightCheck check, Verdict verdict) {
  PreflightResult& r = out.emplace_back();
  r.check = check;
  r.verdict = verdict;
  return r;
}

int64_t as_int(uint64_t value) {
  return static_cast<int64_t>(std::min<uint64_t>(value, INT64_MAX));
}

uint64_t share(uint64_t total, double fraction) {
  return static_cast<uint64_t>(static_cast<double>(total) * fraction);
}

std::optional<int> to_int(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// "3.11" as 311, "12.4" as 12040 (`scale` 100 or 1000 for the major, 10 for CUDA's minor).
std::optional<int64_t> version_number(const std::string& text, int64_t major_scale,
                                      int64_t minor_scale) {
  size_t dot = text.find('.');
  if (dot == std::string::npos) return std::nullopt;
  size_t end = text.find('.', dot + 1);
  std::optional<int> major = to_int(std::string_view(text).substr(0, dot));
  std::optional<int> minor = to_int(
      std::string_view(text).substr(dot + 1, end == std::string::npos ? end : end - dot - 1));
  if (!major || !minor) return std::nullopt;
  return *major * major_scale + *minor * minor_scale;
}

bool uses_torch(const PreflightFacts& facts) {
  return facts.command.launcher == store::Launcher::kTorchrun || facts.command.script_imports_torch;
}

// ---- /dev/shm

void check_shm(const PreflightFacts& facts, Results& out) {
  const store::ShmFacts& shm = facts.shm;
  if (!shm.exists) {
    if (uses_torch(facts)) add(out, PreflightCheck::kShmMissing, Verdict::kWillFail);
    return;
  }
  if (!shm.tmpfs) {
    add(out, PreflightCheck::kShmNotTmpfs, Verdict::kMayFail);
  }
  std::optional<int> workers = facts.command.workers;
  if (workers == 0) return;  // the batches stay in the rank's own memory
  uint64_t need = kShmMinimum;
  if (workers) {
    need = std::max<uint64_t>(need, static_cast<uint64_t>(local_ranks(facts)) *
                                        static_cast<uint64_t>(*workers) * kPrefetchFactor *
                                        kShmBatchAllowance);
  }
  if (shm.free >= need) return;
  bool full = shm.free < kShmNearlyFull;
  PreflightResult& r =
      add(out, PreflightCheck::kShmSmall, full ? Verdict::kWillFail : Verdict::kMayFail);
  r.measured = as_int(shm.free);
  r.threshold = as_int(full ? kShmNearlyFull : need);
  r.total = as_int(shm.total);
  r.subject = workers ? std::to_string(*workers) : "";
}

// ---- GPUs

const store::GpuFacts* gpu_at(const PreflightFacts& facts, int index) {
  for (const store::GpuFacts& gpu : facts.nvml.gpus) {
    if (gpu.index == index) return &gpu;
  }
  return nullptr;
}

void check_gpu_memory(const store::GpuFacts& gpu, Results& out) {
  uint64_t others = 0;
  const store::GpuProcessFacts* largest = nullptr;
  for (const store::GpuProcessFacts& p : gpu.processes) {
    others += p.used_bytes.value_or(0);
    if (largest == nullptr || p.used_bytes.value_or(0) > largest->used_bytes.value_or(0)) {
      largest = &p;
    }
  }
  // No process listed (a container sees none of the host's): what the GPU says is used.
  if (gpu.processes.empty()) others = gpu.used;
  if (others <= std::max(kGpuTakenBytes, share(gpu.total, kGpuTakenShare))) return;
  bool full = gpu.total > 0 && others >= share(gpu.total, kGpuFullShare);
  PreflightResult& r =
      add(out, PreflightCheck::kGpuMemoryTaken, full ? Verdict::kWillFail : Verdict::kMayFail);
  r.measured = as_int(others);
  r.total = as_int(gpu.total);
  r.device = gpu.index;
  if (largest != nullptr) {
    r.pid = largest->pid;
    r.subject = largest->command;
  }
}

void check_gpu_mode(const store::GpuFacts& gpu, Results& out) {
  constexpr int kProhibited = 2;
  constexpr int kExclusiveProcess = 3;
  if (gpu.compute_mode == kProhibited) {
    PreflightResult& r = add(out, PreflightCheck::kGpuProhibited, Verdict::kWillFail);
    r.device = gpu.index;
  } else if (gpu.compute_mode == kExclusiveProcess && !gpu.processes.empty()) {
    PreflightResult& r = add(out, PreflightCheck::kGpuExclusiveTaken, Verdict::kWillFail);
    r.device = gpu.index;
    r.pid = gpu.processes.front().pid;
    r.subject = gpu.processes.front().command;
  }
}

void check_gpus(const PreflightFacts& facts, Results& out) {
  if (facts.nvml.gpus.empty()) return;
  std::string invalid;
  std::vector<int> visible = visible_gpus(facts, invalid);
  if (!invalid.empty()) {
    PreflightResult& r = add(out, PreflightCheck::kVisibleDevicesInvalid,
                             visible.empty() ? Verdict::kWillFail : Verdict::kMayFail);
    r.measured = static_cast<int64_t>(visible.size());
    r.total = static_cast<int64_t>(facts.nvml.gpus.size());
    r.subject = invalid;
  }
  for (int index : visible) {
    if (const store::GpuFacts* gpu = gpu_at(facts, index)) {
      check_gpu_mode(*gpu, out);
      check_gpu_memory(*gpu, out);
    }
  }
  int ranks = local_ranks(facts);
  if (!visible.empty() && !facts.command.nproc_from_gpus &&
      ranks > static_cast<int>(visible.size())) {
    PreflightResult& r = add(out, PreflightCheck::kRanksExceedGpus, Verdict::kWillFail);
    r.measured = ranks;
    r.threshold = static_cast<int64_t>(visible.size());
  }
}

// ---- host memory and limits

void check_memory(const PreflightFacts& facts, Results& out) {
  const store::MemoryFacts& m = facts.memory;
  uint64_t host_low = std::max(kHostMinimum, share(m.mem_total, kHostLowShare));
  if (m.mem_available && *m.mem_available < host_low) {
    PreflightResult& r = add(out, PreflightCheck::kHostMemoryLow, Verdict::kMayFail);
    r.measured = as_int(*m.mem_available);
    r.threshold = as_int(host_low);
    r.total = as_int(m.mem_total);
    r.subject = m.swap_total == 0 ? "no swap" : "";
  }
  if (m.cgroup_max && m.cgroup_current) {
    uint64_t left = *m.cgroup_max - std::min(*m.cgroup_current, *m.cgroup_max);
    uint64_t low = std::max(kCgroupMinimum, share(*m.cgroup_max, kCgroupLowShare));
    if (left < low) {
      PreflightResult& r = add(out, PreflightCheck::kCgroupMemoryLow, Verdict::kMayFail);
      r.measured = as_int(left);
      r.threshold = as_int(low);
      r.total = as_int(*m.cgroup_max);
      r.subject = "v" + std::to_string(m.cgroup_version);
    }
  }
}

std::optional<int64_t> hard_of(const store::Limit& limit) {
  return limit.hard ? std::optional<int64_t>(as_int(*limit.hard)) : std::nullopt;
}

void check_nofile(const PreflightFacts& facts, Results& out) {
  const store::Limit& nofile = facts.limits.nofile;
  std::optional<int> workers = facts.command.workers;
  if (!nofile.soft || *nofile.soft >= kNofileMinimum || workers == 0) return;
  uint64_t floor = workers ? kNofileBase + kNofilePerWorker * static_cast<uint64_t>(*workers) : 0;
  bool below = *nofile.soft < floor;
  PreflightResult& r =
      add(out, PreflightCheck::kNofileLow, below ? Verdict::kWillFail : Verdict::kMayFail);
  r.measured = as_int(*nofile.soft);
  r.threshold = as_int(below ? floor : kNofileMinimum);
  r.total = hard_of(nofile);
}

void check_limits(const PreflightFacts& facts, Results& out) {
  const store::LimitFacts& l = facts.limits;
  check_nofile(facts, out);
  bool several = local_ranks(facts) > 1 || facts.command.nnodes.value_or(1) > 1;
  if (l.infiniband && several && l.memlock.soft && *l.memlock.soft < kMemlockMinimum) {
    PreflightResult& r = add(out, PreflightCheck::kMemlockLow, Verdict::kMayFail);
    r.measured = as_int(*l.memlock.soft);
    r.threshold = as_int(kMemlockMinimum);
    r.total = hard_of(l.memlock);
  }
  if (l.stack.soft && *l.stack.soft < kStackMinimum) {
    PreflightResult& r = add(out, PreflightCheck::kStackSmall, Verdict::kMayFail);
    r.measured = as_int(*l.stack.soft);
    r.threshold = as_int(kStackMinimum);
    r.total = hard_of(l.stack);
  }
  bool files = !l.core_pattern.empty() && !l.core_pattern.starts_with("|");
  if (files && (!l.core.soft || *l.core.soft > kCoreLarge)) {
    PreflightResult& r = add(out, PreflightCheck::kCoreDumpsLarge, Verdict::kMayFail);
    r.measured = l.core.soft ? std::optional<int64_t>(as_int(*l.core.soft)) : std::nullopt;
    r.threshold = as_int(kCoreLarge);
    r.subject = l.core_pattern;
  }
}

// ---- Python and torch

void check_torch_build(const PreflightFacts& facts, Results& out) {
  const store::PythonFacts& py = facts.python;
  std::optional<int64_t> python = version_number(py.version, 100, 1);
  std::optional<int64_t> built = version_number(py.torch_python, 100, 1);
  if (python && built && *python != *built) {
    PreflightResult& r = add(out, PreflightCheck::kTorchOtherPython, Verdict::kWillFail);
    r.measured = *python;
    r.threshold = *built;
    r.subject = py.torch_dir;
  }
  std::optional<int64_t> cuda = version_number(py.torch_cuda, 1000, 10);
  std::optional<int> driver = facts.nvml.cuda_version;
  if (cuda && driver && *cuda > *driver) {
    PreflightResult& r =
        add(out, PreflightCheck::kTorchCudaNewer,
            *cuda / 1000 > *driver / 1000 ? Verdict::kWillFail : Verdict::kMayFail);
    r.measured = *cuda;
    r.threshold = *driver;
    r.subject = facts.nvml.driver_version;
  }
  std::string invalid;
  // A script that never names CUDA may mean to train on the CPU.
  if (py.torch_cuda.empty() && facts.command.script_uses_cuda &&
      !visible_gpus(facts, invalid).empty()) {
    PreflightResult& r = add(out, PreflightCheck::kTorchCpuOnly, Verdict::kMayFail);
    r.measured = static_cast<int64_t>(visible_gpus(facts, invalid).size());
    r.subject = py.torch_version;
  }
}

void check_python(const PreflightFacts& facts, Results& out) {
  const store::CommandFacts& command = facts.command;
  if (command.launcher != store::Launcher::kPython &&
      command.launcher != store::Launcher::kTorchrun) {
    return;
  }
  const store::PythonFacts& py = facts.python;
  if (py.interpreter.empty()) {
    PreflightResult& r = add(out, PreflightCheck::kPythonMissing, Verdict::kWillFail);
    r.subject = command.program;
    return;
  }
  if (py.torch_dir.empty()) {
    if (uses_torch(facts)) {
      PreflightResult& r = add(out, PreflightCheck::kTorchMissing, Verdict::kWillFail);
      r.subject = py.interpreter;
    }
    return;
  }
  check_torch_build(facts, out);
  // Debian's torch 1.13 on Python 3.11 parses torchrun's default --redirects 0 to None.
  std::optional<int64_t> python = version_number(py.version, 100, 1);
  if (command.launcher == store::Launcher::kTorchrun && py.torch_version.starts_with("1.13") &&
      python && *python >= 311 && (!command.redirects_given || command.redirects == 0)) {
    PreflightResult& r = add(out, PreflightCheck::kTorchrunRedirects, Verdict::kWillFail);
    r.measured = *python;
    r.subject = py.torch_version;
  }
}

// ---- network

// "host:29500", "[::1]:29500".
std::string endpoint(const store::NetworkFacts& net) {
  std::string host = net.master_addr.find(':') == std::string::npos ? net.master_addr
                                                                    : "[" + net.master_addr + "]";
  return host + ":" + std::to_string(net.master_port.value_or(0));
}

void check_network(const PreflightFacts& facts, Results& out) {
  const store::NetworkFacts& net = facts.network;
  if (!net.port_invalid.empty()) {
    PreflightResult& r = add(out, PreflightCheck::kMasterPortInvalid, Verdict::kWillFail);
    r.subject = net.port_invalid;
  }
  if (net.endpoint_port_missing) {
    PreflightResult& r = add(out, PreflightCheck::kRendezvousPortMissing, Verdict::kWillFail);
    r.subject = net.master_addr;
  }
  if (!net.master_addr.empty() && !net.master_addr_resolved) {
    PreflightResult& r = add(out, PreflightCheck::kMasterAddrUnresolved, Verdict::kWillFail);
    r.subject = net.master_addr;
  } else if (net.port_in_use && facts.command.node_rank.value_or(0) == 0) {
    PreflightResult& r = add(out, PreflightCheck::kMasterPortTaken, Verdict::kWillFail);
    r.measured = net.master_port;
    r.subject = net.master_addr;
  } else if (net.connect_error && *net.connect_error != 0 && *net.connect_error != ECONNREFUSED) {
    // Refused: the host answers and nothing listens yet, as before the first node has started.
    PreflightResult& r = add(out, PreflightCheck::kMasterPortUnreachable, Verdict::kMayFail);
    r.measured = *net.connect_error;
    r.threshold = std::llround(net.connect_ms);
    r.subject = endpoint(net);
  }
  for (const store::NetworkFacts::Ifname& ifname : net.ifnames) {
    if (ifname.matches) continue;
    PreflightResult& r = add(out, PreflightCheck::kSocketIfnameMissing, Verdict::kWillFail);
    r.measured = static_cast<int64_t>(net.interfaces.size());
    r.subject = ifname.variable + "=" + ifname.value;
  }
}

}  // namespace

std::vector<int> visible_gpus(const store::PreflightFacts& facts, std::string& invalid) {
  invalid.clear();
  std::vector<int> out;
  if (!facts.cuda_visible_devices_set) {
    for (const store::GpuFacts& gpu : facts.nvml.gpus) out.push_back(gpu.index);
    return out;
  }
  std::set<int> seen;
  std::string_view list = facts.cuda_visible_devices;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    std::optional<int> index = to_int(entry);
    if (!index && entry.starts_with("GPU-")) {
      for (const store::GpuFacts& gpu : facts.nvml.gpus) {
        if (gpu.uuid.starts_with(entry)) index = gpu.index;
      }
    }
    // "-1" (or nothing) hides every GPU on purpose.
    if (index == -1 || (out.empty() && entry.empty())) return out;
    if (!index || gpu_at(facts, *index) == nullptr || !seen.insert(*index).second) {
      invalid = std::string(entry);
      return out;
    }
    out.push_back(*index);
  }
  return out;
}

int local_ranks(const store::PreflightFacts& facts) {
  const store::CommandFacts& command = facts.command;
  if (command.launcher != store::Launcher::kTorchrun) return 1;
  if (command.nproc_from_gpus) {
    std::string invalid;
    return std::max<int>(1, static_cast<int>(visible_gpus(facts, invalid).size()));
  }
  return command.nproc_per_node.value_or(1);
}

std::vector<store::PreflightResult> preflight_checks(const store::PreflightFacts& facts) {
  Results out;
  check_shm(facts, out);
  check_gpus(facts, out);
  check_memory(facts, out);
  check_limits(facts, out);
  check_python(facts, out);
  check_network(facts, out);
  std::stable_sort(out.begin(), out.end(), [](const PreflightResult& a, const PreflightResult& b) {
    return a.verdict < b.verdict;
  });
  return out;
}

}  // namespace traindoc::analysis
