// Rule: where the job's GPU memory went. foreign-gpu-context: a rank holding memory on a GPU
// that belongs to another rank (no torch.cuda.set_device, torch.load without map_location).
// gpu-imbalance: one GPU's peak far above the others', with the per-GPU table and the causes
// the evidence supports. Pure.
#include <algorithm>
#include <cstdio>

#include "analysis/gpu_facts.h"
#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

// One GPU is "far above" the others at 1.3 times their median, and by more than a CUDA
// context's worth, so that small jobs' noise is not called imbalance.
constexpr double kImbalanceRatio = 1.3;
constexpr uint64_t kImbalanceFloor = 512ULL << 20;

const ProcessSummary* process_of(const RuleContext& context, const ProcessKey& key) {
  if (key.first <= 0) return nullptr;
  return context.process(key.first, key.second);
}

// When a process was first seen on a device.
int64_t first_seen(const store::GpuEvidence& gpu, int device, const ProcessKey& key) {
  for (const store::GpuProcessSample& s : gpu.process_samples) {
    if (s.device == device && s.pid == key.first && s.start_ticks == key.second) return s.t_ns;
  }
  return 0;
}

// The first of `pids`' caveats on the CUDA-to-NVML device mapping that "its own GPU" rests on.
void add_order_caveat(const RuleContext& context, const std::vector<int>& pids, Finding& f) {
  for (int pid : pids) {
    const ProcessSummary* p = context.process(pid);
    if (!p) continue;
    if (std::optional<std::string> caveat = device_order_caveat(context, *p)) {
      f.evidence.push_back(*caveat);
      return;
    }
  }
}

std::string list_ints(const std::vector<int>& values) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == values.size() ? " and " : ", ") + std::to_string(values[i]);
  }
  return out;
}

// One GPU per rank is what "its own GPU" assumes. A rank on a GPU that is no rank's own (model
// or pipeline parallelism over several GPUs per rank) says the assumption does not hold.
bool one_gpu_per_rank(const RuleContext& context,
                      const std::map<int, std::map<ProcessKey, uint64_t>>& peaks) {
  std::vector<int> owned;
  for (const ProcessSummary& p : context.processes) {
    if (std::optional<int> own = own_device(context, p)) owned.push_back(*own);
  }
  for (const auto& [device, by_process] : peaks) {
    if (std::find(owned.begin(), owned.end(), device) != owned.end()) continue;
    for (const auto& [key, peak] : by_process) {
      const ProcessSummary* p = process_of(context, key);
      if (p && peak > 0 && p->role.role == Role::kRank) return false;
    }
  }
  return true;
}

void foreign_contexts(const RuleContext& context, const std::vector<int>& oom_devices,
                      std::vector<TimedFinding>& out) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  const auto peaks = peak_by_device_and_process(gpu);
  if (!one_gpu_per_rank(context, peaks)) return;
  for (const auto& [device, by_process] : peaks) {
    Finding f;
    int64_t t = 0;
    std::string owner;
    for (const ProcessSummary& p : context.processes) {
      if (own_device(context, p) == device) owner = context.name(p);
    }
    for (const auto& [key, peak] : by_process) {
      const ProcessSummary* p = process_of(context, key);
      if (!p || peak == 0) continue;
      std::optional<int> own = own_device(context, *p);
      if (!own || *own == device) continue;
      f.pids.push_back(p->record.pid);
      if (p->role.rank) f.ranks.push_back(*p->role.rank);
      std::string own_text = device_label(gpu, *own);
      f.evidence.push_back(context.name(*p) + ": " + format_bytes(peak) + " on " +
                           device_label(gpu, device) + "; its own GPU is " + own_text);
      int64_t seen = first_seen(gpu, device, key);
      if (t == 0 || seen < t) t = seen;
    }
    if (f.pids.empty()) continue;
    std::sort(f.ranks.begin(), f.ranks.end());
    add_order_caveat(context, f.pids, f);
    f.kind = FindingKind::kForeignGpuContext;
    bool oom_here = std::find(oom_devices.begin(), oom_devices.end(), device) != oom_devices.end();
    f.severity = oom_here ? Severity::kError : Severity::kWarning;
    f.title = (f.ranks.size() == 1 ? "rank " : "ranks ") + list_ints(f.ranks) + " hold memory on " +
              device_label(gpu, device) +
              (owner.empty() ? ", which is not their GPU" : ", which belongs to " + owner) +
              (oom_here ? ", and that GPU ran out of memory" : "");
    f.fix =
        "Each rank creates a CUDA context (300-700 MiB) and tensors on the current device, cuda:0 "
        "unless told otherwise. Call torch.cuda.set_device(local_rank) first thing in every rank "
        "(or init_process_group(..., device_id=torch.device('cuda', local_rank))), load "
        "checkpoints with torch.load(path, map_location=f'cuda:{local_rank}') or 'cpu', and use "
        "device=f'cuda:{local_rank}' rather than 'cuda'.";
    f.confidence = 0.9;
    out.push_back({std::move(f), t, 0});
  }
}

// The causes of the imbalance that the evidence supports, most specific first.
// `foreign_ranks`: the ranks on the heavy GPU that belong elsewhere.
std::vector<std::string> imbalance_causes(const RuleContext& context, int heavy,
                                          const std::map<ProcessKey, uint64_t>& on_heavy,
                                          std::vector<int>& foreign_ranks) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  std::vector<std::string> causes;
  const ProcessSummary* largest = nullptr;
  uint64_t largest_bytes = 0;
  for (const auto& [key, peak] : on_heavy) {
    const ProcessSummary* p = process_of(context, key);
    if (!p) continue;
    if (peak > largest_bytes) {
      largest = p;
      largest_bytes = peak;
    }
    std::optional<int> own = own_device(context, *p);
    if (own && *own != heavy && p->role.rank) foreign_ranks.push_back(*p->role.rank);
  }
  if (!foreign_ranks.empty()) {
    std::sort(foreign_ranks.begin(), foreign_ranks.end());
    causes.push_back("other ranks (" + list_ints(foreign_ranks) +
                     ") hold contexts and tensors on " + device_label(gpu, heavy) +
                     ": a missing torch.cuda.set_device, or torch.load without map_location");
  }
  // One process on several GPUs, without ranks: nn.DataParallel gathers on device_ids[0].
  if (largest) {
    int devices = 0;
    for (const auto& [device, by_process] : peak_by_device_and_process(gpu)) {
      devices += by_process.contains({largest->record.pid, largest->record.start_ticks}) ? 1 : 0;
    }
    if (devices > 1 && largest->record.world_size.value_or(1) < 2) {
      causes.push_back(context.name(*largest) + " alone uses " + std::to_string(devices) +
                       " GPUs, most of all " + device_label(gpu, heavy) +
                       ": nn.DataParallel scatters inputs but gathers outputs, the loss and the "
                       "optimizer state on device_ids[0]; DistributedDataParallel balances them");
    } else if (largest->role.rank == 0 && foreign_ranks.empty()) {
      causes.push_back(
          "rank 0 holds the most: work done on rank 0 alone (evaluation, metrics "
          "gathered to rank 0, logging, checkpoint consolidation such as FSDP "
          "FULL_STATE_DICT without rank0_only/offload_to_cpu)");
    }
  }
  if (causes.empty()) {
    causes.push_back(
        "uneven inputs: the heavy rank got larger batches (variable image or "
        "sequence sizes, uneven sharding); pad or bucket inputs to equal sizes");
  }
  return causes;
}

// The fix for the likeliest cause (imbalance_causes).
const char* imbalance_fix(const std::string& cause) {
  return cause.starts_with("other ranks")
             ? "Call torch.cuda.set_device(local_rank) in every rank before any CUDA work, and "
               "load checkpoints with map_location."
         : cause.find("DataParallel") != std::string::npos
             ? "Use DistributedDataParallel (one process per GPU) instead of nn.DataParallel."
         : cause.starts_with("rank 0")
             ? "Spread or shrink rank 0's extra work: evaluate on every rank with a distributed "
               "sampler, gather metrics as scalars, save with rank0_only and offload_to_cpu."
             : "Make the ranks' inputs equal in size (pad, bucket by length, fixed crops).";
}

// The per-GPU table: peak, capacity, and each process's peak on it; the processes on the heavy
// GPU are the finding's.
void cite_gpu_table(const RuleContext& context, const std::vector<std::pair<int, uint64_t>>& peaks,
                    int heavy, std::map<int, std::map<ProcessKey, uint64_t>>& by_process,
                    Finding& f) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  for (const auto& [device, peak] : peaks) {
    const store::GpuDevice* d = find_device(gpu, device);
    std::string line = device_label(gpu, device) + ": peak " + format_bytes(peak) +
                       (d ? " of " + format_bytes(d->memory_total) : "");
    std::string holders;
    for (const auto& [key, bytes] : by_process[device]) {
      const ProcessSummary* p = process_of(context, key);
      std::string name =
          p ? describe(p->role) + " (pid " + std::to_string(p->record.pid) + ")"
            : "pid " + std::to_string(key.first > 0 ? key.first : -key.first) + " outside the job";
      holders += (holders.empty() ? "" : ", ") + name + " " + format_bytes(bytes);
      if (device == heavy && p) {
        f.pids.push_back(p->record.pid);
        if (p->role.rank) add_ranks(f.ranks, {*p->role.rank});
      }
    }
    if (!holders.empty()) line += ": " + holders;
    f.evidence.push_back(line);
  }
}

void imbalance(const RuleContext& context, const std::vector<int>& oom_devices,
               std::vector<TimedFinding>& out) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  auto by_process = peak_by_device_and_process(gpu);
  // The job's GPUs: those where a process of the job held memory.
  std::vector<std::pair<int, uint64_t>> peaks;
  for (const auto& [device, peak] : peak_by_device(gpu)) {
    bool used = false;
    for (const auto& [key, bytes] : by_process[device]) used |= process_of(context, key) && bytes;
    if (used) peaks.push_back({device, peak});
  }
  if (peaks.size() < 2) return;
  auto heavy = std::max_element(peaks.begin(), peaks.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<uint64_t> others;
  for (const auto& [device, peak] : peaks) {
    if (device != heavy->first) others.push_back(peak);
  }
  std::sort(others.begin(), others.end());
  size_t mid = others.size() / 2;
  double median =
      others.size() % 2 == 1
          ? static_cast<double>(others[mid])
          : (static_cast<double>(others[mid - 1]) + static_cast<double>(others[mid])) / 2;
  const double top = static_cast<double>(heavy->second);
  if (top < kImbalanceRatio * median || top - median < static_cast<double>(kImbalanceFloor)) return;

  Finding f;
  f.kind = FindingKind::kGpuImbalance;
  bool oom_here =
      std::find(oom_devices.begin(), oom_devices.end(), heavy->first) != oom_devices.end();
  f.severity = oom_here ? Severity::kError : Severity::kWarning;
  char ratio[16];
  std::snprintf(ratio, sizeof(ratio), "%.1f", median > 0 ? top / median : 0.0);
  f.title = device_label(gpu, heavy->first) + " peaked at " + format_bytes(heavy->second) + ", " +
            ratio + "x the median of the job's other GPUs (" +
            format_bytes(static_cast<uint64_t>(median)) + ")";
  cite_gpu_table(context, peaks, heavy->first, by_process, f);
  std::sort(f.ranks.begin(), f.ranks.end());
  std::vector<int> foreign_ranks;
  std::vector<std::string> causes =
      imbalance_causes(context, heavy->first, by_process[heavy->first], foreign_ranks);
  // The ranks to look at are those that put memory where it does not belong.
  if (!foreign_ranks.empty()) f.ranks = foreign_ranks;
  for (const std::string& cause : causes) f.evidence.push_back("likely cause: " + cause);
  add_order_caveat(context, f.pids, f);
  f.fix = imbalance_fix(causes.front());
  f.confidence = 0.7;
  int64_t t = 0;
  for (const store::GpuSample& s : gpu.samples) {
    if (s.device == heavy->first && s.memory_used == heavy->second) {
      t = s.t_ns;
      break;
    }
  }
  out.push_back({std::move(f), t, 0});
}

}  // namespace

void rule_gpu_placement(const RuleContext& context, std::vector<TimedFinding>& out) {
  const std::vector<PythonTraceback>& tracebacks = context.texts.all_tracebacks();
  std::vector<int> oom_devices;
  for (const PrintedFailure& failure : printed_failures(
           context, tracebacks, {FindingKind::kGpuOom, FindingKind::kGpuFragmentation})) {
    if (std::optional<int> device = failure_device(context, failure)) {
      oom_devices.push_back(*device);
    }
  }
  foreign_contexts(context, oom_devices, out);
  imbalance(context, oom_devices, out);
}

}  // namespace traindoc::analysis
