// What the GPU rules share: device reconciliation, holders, printed failures, Xid meanings.
// Pure.
#include "analysis/gpu_facts.h"
#include "store/time_math.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace traindoc::analysis {
namespace {

constexpr int64_t kExitWindowNs = 60'000'000'000;
// Kernels print their assertions, allocators their warnings, before the host raises; or the CUDA
// runtime flushes the kernels' output only as the process exits, after the traceback.
constexpr int64_t kBeforeTracebackNs = 30'000'000'000;
constexpr int64_t kAfterTracebackNs = 10'000'000'000;

std::optional<int> parse_index(std::string_view text) {
  int value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// The entries of CUDA_VISIBLE_DEVICES, in order, without their spaces.
std::vector<std::string_view> cuda_entries(std::string_view list) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    out.push_back(entry);
    if (comma == std::string_view::npos) return out;
    list.remove_prefix(comma + 1);
  }
}

// One CUDA_VISIBLE_DEVICES entry: an index, or a unique UUID prefix.
std::optional<int> entry_device(std::string_view entry,
                                const std::vector<store::GpuDevice>& devices) {
  if (entry.empty()) return std::nullopt;
  if (std::optional<int> index = parse_index(entry)) {
    if (static_cast<size_t>(*index) < devices.size()) {
      return devices[static_cast<size_t>(*index)].index;
    }
    return std::nullopt;
  }
  std::string prefix = entry.starts_with("GPU-") ? std::string(entry) : "GPU-" + std::string(entry);
  std::optional<int> found;
  for (const store::GpuDevice& d : devices) {
    if (!d.uuid.starts_with(prefix)) continue;
    if (found) return std::nullopt;  // ambiguous: CUDA refuses it too
    found = d.index;
  }
  return found;
}

std::vector<int> devices_of(const RuleContext& context, const ProcessSummary& process) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  const store::CudaEnv* env = find_cuda_env(gpu, process.record);
  return visible_devices(env ? env->visible_devices : std::nullopt, gpu.devices);
}

// The process a traceback belongs to. Launcher prefixes name a rank (torchrun --tee prints the
// local rank, PyTorch 2.x the global one; on one node they agree).
const ProcessSummary* owner(const RuleContext& context, const PythonTraceback& tb) {
  std::vector<const ProcessSummary*> ranks;
  for (const ProcessSummary& p : context.processes) {
    if (p.role.role == Role::kRank) ranks.push_back(&p);
  }
  if (tb.prefix_rank) {
    for (const ProcessSummary* p : ranks) {
      if (p->role.rank == tb.prefix_rank) return p;
    }
    for (const ProcessSummary* p : ranks) {
      if (p->role.local_rank == tb.prefix_rank) return p;
    }
  }
  if (ranks.size() == 1) return ranks.front();
  const ProcessSummary* first = nullptr;
  for (const ProcessSummary& p : context.processes) {
    const store::ProcessRecord& r = p.record;
    if (!r.exit_code || *r.exit_code == 0 || r.end_ns < tb.t_ns ||
        r.end_ns > store::shifted_ns(tb.t_ns, kExitWindowNs) || p.role.role == Role::kWorker) {
      continue;
    }
    if (first == nullptr || r.end_ns < first->record.end_ns) first = &p;
  }
  return first;
}

}  // namespace

const store::CudaEnv* find_cuda_env(const store::GpuEvidence& gpu, const store::ProcessRecord& p) {
  for (const store::CudaEnv& env : gpu.cuda_env) {
    if (env.pid == p.pid && env.start_ticks == p.start_ticks) return &env;
  }
  return nullptr;
}

std::optional<std::string> device_order_caveat(const RuleContext& context,
                                               const ProcessSummary& process) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  const store::CudaEnv* env = find_cuda_env(gpu, process.record);
  std::string order = env ? env->device_order : "";
  if (order == "PCI_BUS_ID") return std::nullopt;
  std::vector<std::string> models;
  for (const store::GpuDevice& d : gpu.devices) {
    if (std::find(models.begin(), models.end(), d.name) == models.end()) models.push_back(d.name);
  }
  if (models.size() < 2) return std::nullopt;
  // UUIDs name the devices whatever the order; indices count in CUDA's order.
  if (env && env->visible_devices && !env->visible_devices->empty()) {
    std::vector<std::string_view> entries = cuda_entries(*env->visible_devices);
    if (entries.size() > 1 && entries.back().empty()) entries.pop_back();  // a trailing comma
    if (std::none_of(entries.begin(), entries.end(),
                     [](std::string_view entry) { return entry.empty() || parse_index(entry); })) {
      return std::nullopt;
    }
  }
  std::string names;
  for (const std::string& m : models) names += (names.empty() ? "" : ", ") + m;
  return "the device mapping may be off: " + context.name(process) + " has CUDA_DEVICE_ORDER " +
         (order.empty() ? "unset (CUDA's default, FASTEST_FIRST)" : order) +
         " and the GPUs differ in model (" + names +
         "), so its CUDA device numbers may count the GPUs in another order than NVML's PCI bus "
         "order; set CUDA_DEVICE_ORDER=PCI_BUS_ID, or name the GPUs by UUID in "
         "CUDA_VISIBLE_DEVICES";
}

std::vector<int> visible_devices(const std::optional<std::string>& cuda_visible_devices,
                                 const std::vector<store::GpuDevice>& devices) {
  std::vector<int> out;
  if (!cuda_visible_devices) {
    for (const store::GpuDevice& d : devices) out.push_back(d.index);
    return out;
  }
  for (std::string_view entry : cuda_entries(*cuda_visible_devices)) {
    std::optional<int> device = entry_device(entry, devices);
    if (!device || std::find(out.begin(), out.end(), *device) != out.end()) break;
    out.push_back(*device);
  }
  return out;
}

std::optional<int> nvml_device(const RuleContext& context, const ProcessSummary& process,
                               int cuda_index) {
  std::vector<int> visible = devices_of(context, process);
  if (cuda_index < 0 || static_cast<size_t>(cuda_index) >= visible.size()) return std::nullopt;
  return visible[static_cast<size_t>(cuda_index)];
}

std::optional<int> own_device(const RuleContext& context, const ProcessSummary& process) {
  if (process.role.role != Role::kRank || process.record.world_size.value_or(1) < 2) {
    return std::nullopt;
  }
  std::vector<int> visible = devices_of(context, process);
  if (visible.size() == 1) return visible.front();
  std::optional<int> local = process.role.local_rank;
  if (!local || visible.empty() || static_cast<size_t>(*local) >= visible.size()) {
    return std::nullopt;
  }
  return visible[static_cast<size_t>(*local)];
}

const store::GpuDevice* find_device(const store::GpuEvidence& gpu, int device) {
  for (const store::GpuDevice& d : gpu.devices) {
    if (d.index == device) return &d;
  }
  return nullptr;
}

std::string device_label(const store::GpuEvidence& gpu, int device) {
  const store::GpuDevice* d = find_device(gpu, device);
  std::string label = "GPU " + std::to_string(device);
  return d && !d->pci_bus_id.empty() ? label + " (" + d->pci_bus_id + ")" : label;
}

std::vector<store::GpuProcessSample> holders_at(const store::GpuEvidence& gpu, int device,
                                                int64_t t_ns) {
  std::optional<int64_t> before;
  std::optional<int64_t> after;
  for (const store::GpuSample& s : gpu.samples) {
    if (s.device != device || !s.memory_used) continue;
    if (s.t_ns <= t_ns) before = s.t_ns;
    if (s.t_ns > t_ns && !after) after = s.t_ns;
  }
  std::optional<int64_t> round = before ? before : after;
  std::vector<store::GpuProcessSample> out;
  if (!round) return out;
  for (const store::GpuProcessSample& s : gpu.process_samples) {
    if (s.device == device && s.t_ns == *round) out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.used_bytes.value_or(0) > b.used_bytes.value_or(0);
  });
  return out;
}

const ProcessSummary* job_process(const RuleContext& context,
                                  const store::GpuProcessSample& sample) {
  if (sample.pid == 0) return nullptr;
  for (const ProcessSummary& p : context.processes) {
    if (p.record.pid == sample.pid && p.record.start_ticks == sample.start_ticks) return &p;
  }
  return nullptr;
}

std::string holder_name(const RuleContext& context, const store::GpuProcessSample& holder,
                        bool other_namespace) {
  if (const ProcessSummary* p = job_process(context, holder)) return context.name(*p);
  if (holder.pid == 0) {
    return "pid " + std::to_string(holder.nvml_pid) +
           (other_namespace
                ? kOtherNamespace
                : " (not visible from traindoc's pid namespace: another container or user)");
  }
  std::string cmdline;
  for (const store::GpuProcess& p : context.evidence.gpu.processes) {
    if (p.pid == holder.pid && p.start_ticks == holder.start_ticks) cmdline = p.cmdline;
  }
  if (cmdline.size() > 80) cmdline = cmdline.substr(0, 77) + "...";
  return "pid " + std::to_string(holder.pid) + " outside the job" +
         (cmdline.empty() ? "" : " (" + cmdline + ")");
}

std::map<int, std::map<ProcessKey, uint64_t>> peak_by_device_and_process(
    const store::GpuEvidence& gpu) {
  std::map<int, std::map<ProcessKey, uint64_t>> out;
  for (const store::GpuProcessSample& s : gpu.process_samples) {
    ProcessKey key = s.pid != 0 ? ProcessKey{s.pid, s.start_ticks} : ProcessKey{-s.nvml_pid, 0};
    uint64_t& peak = out[s.device][key];
    peak = std::max(peak, s.used_bytes.value_or(0));
  }
  return out;
}

std::map<int, uint64_t> peak_by_device(const store::GpuEvidence& gpu) {
  std::map<int, uint64_t> out;
  for (const store::GpuSample& s : gpu.samples) {
    if (s.memory_used) out[s.device] = std::max(out[s.device], *s.memory_used);
  }
  return out;
}

std::vector<PrintedFailure> printed_failures(const RuleContext& context,
                                             const std::vector<PythonTraceback>& tracebacks,
                                             const std::vector<std::optional<FindingKind>>& kinds) {
  std::vector<PrintedFailure> out;
  std::set<int> seen;
  for (const PythonTraceback& tb : tracebacks) {
    if (tb.embedded) continue;
    PrintedFailure failure;
    for (const SignatureMatch& m : match_traceback(tb)) {
      if (!m.failure || std::find(kinds.begin(), kinds.end(), m.kind) == kinds.end()) continue;
      if (failure.matches.empty()) failure.kind = m.kind;
      failure.matches.push_back(m);
      failure.fields.insert(m.fields.begin(), m.fields.end());
    }
    if (failure.matches.empty()) continue;
    failure.process = owner(context, tb);
    int pid = failure.process ? failure.process->record.pid : 0;
    if (!seen.insert(pid).second) continue;  // a process's first failure is its failure
    failure.traceback = &tb;
    failure.t_ns = tb.t_ns;
    out.push_back(std::move(failure));
  }
  return out;
}

std::vector<const store::LogLine*> lines_near(const store::Evidence& evidence,
                                              const PythonTraceback& tb, bool after_too) {
  std::vector<const store::LogLine*> out;
  for (const store::LogLine& line : evidence.log_lines) {
    bool before = line.number < tb.first_line && line.t_ns <= tb.t_ns &&
                  line.t_ns >= store::shifted_ns(tb.t_ns, -kBeforeTracebackNs);
    bool after = after_too && line.number > tb.last_line && line.t_ns >= tb.t_ns &&
                 line.t_ns <= store::shifted_ns(tb.t_ns, kAfterTracebackNs);
    if (line.stream == tb.stream && (before || after) &&
        strip_launcher_prefix(line.text).rank == tb.prefix_rank) {
      out.push_back(&line);
    }
  }
  return out;
}

std::optional<int> failure_device(const RuleContext& context, const PrintedFailure& failure) {
  if (!failure.process) return std::nullopt;
  std::optional<uint64_t> index = field_bytes(failure.fields, "gpu");
  if (index) return nvml_device(context, *failure.process, static_cast<int>(*index));
  if (std::optional<int> own = own_device(context, *failure.process)) return own;
  std::vector<int> on;
  for (const store::GpuProcessSample& s : context.evidence.gpu.process_samples) {
    if (s.pid == failure.process->record.pid &&
        std::find(on.begin(), on.end(), s.device) == on.end()) {
      on.push_back(s.device);
    }
  }
  return on.size() == 1 ? std::optional<int>(on.front()) : std::nullopt;
}

std::optional<uint64_t> field_bytes(const std::map<std::string, std::string>& fields,
                                    const std::string& name) {
  auto it = fields.find(name);
  if (it == fields.end()) return std::nullopt;
  uint64_t value = 0;
  auto [end, error] =
      std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (error != std::errc() || end != it->second.data() + it->second.size()) return std::nullopt;
  return value;
}

XidMeaning xid_meaning(uint64_t xid) {
  static const std::string drain =
      "Drain the node and check the GPU (nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER); "
      "reset it (nvidia-smi -r) or replace it if the error recurs; rerun the job elsewhere.";
  static const std::string bus =
      "The GPU left the PCIe bus: power, cooling or the slot. Check dmesg for Xid 79 and PCIe AER "
      "errors, reseat the GPU, check its power and the BIOS; the node needs a reboot. Rerun the "
      "job on another node meanwhile.";
  static const std::string app_fault =
      "Usually the application: rerun with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer.";
  static const std::string gsp = "Reset the GPU; update the driver if it recurs.";
  // NVIDIA's Xid catalog; "hardware" false for the application's own faults and consequences.
  static const std::map<uint64_t, XidMeaning> xids = {
      {8,
       {"GPU stopped processing (channel idle timeout)", true,
        "Restart the job; if it recurs on this GPU, drain and inspect it."}},
      {13,
       {"graphics engine exception (a kernel faulted: out-of-bounds access, bad instruction)",
        false, app_fault}},
      {31, {"GPU memory page fault (a kernel read or wrote an invalid address)", false, app_fault}},
      {43,
       {"GPU stopped processing after an application error", false,
        "A consequence of the application's own error."}},
      {45,
       {"preemptive cleanup of a channel (a process was killed, or an earlier error)", false,
        "A consequence; look for the error before it."}},
      {48, {"double-bit (uncorrectable) ECC error in GPU memory", true, drain}},
      {63,
       {"ECC page retirement or row remapping recorded (a reset applies it)", true,
        "Reset the GPU (nvidia-smi -r) when it is idle; watch for more."}},
      {64, {"ECC page retirement or row remapping failed", true, drain}},
      {68, {"video processor exception", false, app_fault}},
      {74,
       {"NVLink error", true,
        "Check the NVLink links (nvidia-smi nvlink -s -e); drain the node if it recurs."}},
      {79, {"GPU has fallen off the bus", true, bus}},
      {92,
       {"high single-bit ECC error rate", true,
        "Memory of this GPU is degrading: plan to replace it."}},
      {94,
       {"contained uncorrectable ECC error (only the processes using that memory are affected)",
        true, "Restart the affected job; if it recurs on this GPU, drain and inspect it."}},
      {95,
       {"uncontained uncorrectable ECC error (every process on the GPU is affected)", true, drain}},
      {119, {"GSP firmware RPC timeout", true, gsp}},
      {120, {"GSP firmware error", true, gsp}},
  };
  auto it = xids.find(xid);
  if (it != xids.end()) return it->second;
  return {"driver error event (see NVIDIA's Xid catalog)", true,
          "Look the Xid up in NVIDIA's catalog; drain the node if it recurs."};
}

std::vector<GpuSummary> summarize_gpus(const RuleContext& context) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  const bool other_namespace = !pids_of_another_namespace(context.evidence).empty();
  std::map<int, uint64_t> peaks = peak_by_device(gpu);
  auto by_process = peak_by_device_and_process(gpu);
  std::vector<GpuSummary> out;
  for (const store::GpuDevice& device : gpu.devices) {
    GpuSummary& summary = out.emplace_back();
    summary.device = device;
    if (peaks.contains(device.index)) summary.peak_used = peaks.at(device.index);
    for (const auto& [key, peak] : by_process[device.index]) {
      GpuSummary::Holder holder;
      holder.peak = peak;
      const ProcessSummary* p = key.first > 0 ? context.process(key.first, key.second) : nullptr;
      holder.pid = key.first > 0 ? key.first : -key.first;
      holder.in_job = p != nullptr;
      holder.who = p                 ? describe(p->role)
                   : key.first > 0   ? "outside the job"
                   : other_namespace ? "another pid namespace (maybe the job's)"
                                     : "not visible (another container or user)";
      summary.holders.push_back(holder);
    }
    std::stable_sort(summary.holders.begin(), summary.holders.end(),
                     [](const auto& a, const auto& b) { return a.peak > b.peak; });
  }
  return out;
}

namespace {

// Per device, the reads NVML refused (a lost GPU is a hardware finding, not missing evidence).
std::vector<std::string> sampling_errors(const store::GpuEvidence& gpu) {
  std::map<int, std::pair<std::string, size_t>> first_and_count;
  std::map<int, size_t> samples;
  for (const store::GpuSample& s : gpu.samples) {
    ++samples[s.device];
    if (s.error.empty() || s.error == "GPU is lost") continue;
    auto& [error, count] = first_and_count[s.device];
    if (error.empty()) error = s.error;
    ++count;
  }
  std::vector<std::string> out;
  out.reserve(first_and_count.size());
  for (const auto& [device, found] : first_and_count) {
    out.push_back("GPU sampling of " + device_label(gpu, device) + " failed in " +
                  std::to_string(found.second) + " of " + std::to_string(samples[device]) +
                  " samples: " + found.first);
  }
  return out;
}

// Whether the job looked like a GPU job without NVML's word for it: a process set
// CUDA_VISIBLE_DEVICES, or the output has CUDA, GPU-memory or XLA resource errors.
bool looks_like_gpu_job(const store::Evidence& evidence) {
  const store::GpuEvidence& gpu = evidence.gpu;
  bool gpu_job = std::any_of(gpu.cuda_env.begin(), gpu.cuda_env.end(),
                             [](const store::CudaEnv& env) { return env.visible_devices; });
  for (size_t i = 0; !gpu_job && i < evidence.log_lines.size(); ++i) {
    const std::string& text = evidence.log_lines[i].text;
    // Only lines that can name a GPU failure are matched: a cheap test first.
    if (text.find("CUDA") == std::string::npos && text.find("GPU") == std::string::npos &&
        text.find("RESOURCE_EXHAUSTED") == std::string::npos) {
      continue;
    }
    for (const SignatureMatch& m : match_line(text)) {
      gpu_job |= m.id.starts_with("cuda.") || m.id.starts_with("torch.cuda") ||
                 m.kind == FindingKind::kGpuOom || m.kind == FindingKind::kGpuFragmentation;
    }
  }
  return gpu_job;
}

// The NVML-missing sentence, for GPU machines and GPU jobs only.
std::optional<std::string> no_nvml(const store::Evidence& evidence) {
  const store::GpuEvidence& gpu = evidence.gpu;
  if (gpu.nvml_loaded || gpu.nvml_status.empty() ||
      !(gpu.driver_devices || looks_like_gpu_job(evidence))) {
    return std::nullopt;
  }
  std::string text =
      "no GPU evidence: " + gpu.nvml_status +
      "; memory per GPU, the processes on each and driver events (Xid, ECC) are unknown";
  if (gpu.driver_devices) {
    text +=
        " (a GPU machine without a loadable NVML: in a container, the driver's utility "
        "capability mounts it, NVIDIA_DRIVER_CAPABILITIES=compute,utility; or name the library "
        "with TRAINDOC_NVML_LIBRARY)";
  }
  return text;
}

// The sentence on process lists in another pid namespace's pids.
std::optional<std::string> other_namespace(const store::Evidence& evidence) {
  std::vector<int> pids = pids_of_another_namespace(evidence);
  if (pids.empty()) return std::nullopt;
  std::string list;
  for (size_t i = 0; i < pids.size() && i < 8; ++i) {
    list += (i == 0 ? "" : ", ") + std::to_string(pids[i]);
  }
  if (pids.size() > 8) list += ", ...";
  return "GPU processes of the job not identified: NVML listed " + std::to_string(pids.size()) +
         " process(es) on the GPUs (pids " + list +
         ") that traindoc's pid namespace does not have, and none of the job's processes. The "
         "GPUs' process lists use the pids of another pid namespace, likely the host's pids of "
         "this container's processes, the job's own among them; so which GPU memory is the job's, "
         "other ranks' contexts on a GPU (foreign-gpu-context), imbalance between its GPUs and "
         "GPU memory leaks cannot be told. Run traindoc in the host's pid namespace (docker run "
         "--pid=host), or mount the host's /proc into the container (-v /proc:/host/proc:ro, or "
         "TRAINDOC_HOST_PROC naming where it is) for traindoc to map them";
}

}  // namespace

std::vector<int> pids_of_another_namespace(const store::Evidence& evidence) {
  const store::GpuEvidence& gpu = evidence.gpu;
  if (gpu.process_samples.empty()) return {};
  std::set<std::pair<int, uint64_t>> job;
  for (const store::ProcessRecord& p : evidence.processes) job.insert({p.pid, p.start_ticks});
  const int64_t first_round =
      gpu.samples.empty() ? gpu.process_samples.front().t_ns : gpu.samples.front().t_ns;
  std::vector<int> unknown;
  std::set<int> at_start;
  for (const store::GpuProcessSample& s : gpu.process_samples) {
    if (s.pid != 0) {
      if (job.contains({s.pid, s.start_ticks})) return {};  // the job's processes are listed
      continue;
    }
    if (s.t_ns <= first_round) at_start.insert(s.nvml_pid);
    if (std::find(unknown.begin(), unknown.end(), s.nvml_pid) == unknown.end()) {
      unknown.push_back(s.nvml_pid);
    }
  }
  // Pids that came on the GPUs after sampling began came with the job, as its processes would.
  bool appeared = std::any_of(unknown.begin(), unknown.end(),
                              [&at_start](int pid) { return !at_start.contains(pid); });
  if (unknown.empty() || !(appeared || looks_like_gpu_job(evidence))) return {};
  std::sort(unknown.begin(), unknown.end());
  return unknown;
}

std::vector<std::string> gpu_missing_evidence(const store::Evidence& evidence) {
  std::vector<std::string> out = sampling_errors(evidence.gpu);
  if (std::optional<std::string> missing = other_namespace(evidence)) out.push_back(*missing);
  if (std::optional<std::string> missing = no_nvml(evidence)) out.insert(out.begin(), *missing);
  return out;
}

}  // namespace traindoc::analysis
