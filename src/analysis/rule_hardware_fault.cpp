// Rule: the GPU itself failed: Xid errors of the hardware kind, ECC errors (events, or the
// uncorrected count rising during the run), a GPU lost from the bus. One finding per GPU, with
// the physical device, what the Xid means, and the job's processes that used it. Pure.
#include <algorithm>
#include <map>

#include "analysis/gpu_facts.h"
#include "analysis/rules.h"
#include "store/time_math.h"

namespace traindoc::analysis {
namespace {

struct DeviceFault {
  int64_t t_ns = 0;
  std::string title;  // the first event's
  std::string fix;
  std::vector<std::string> evidence;
};

void add(DeviceFault& fault, int64_t t_ns, const std::string& title, const std::string& fix,
         const std::string& evidence) {
  if (fault.title.empty()) {
    fault.t_ns = t_ns;
    fault.title = title;
    fault.fix = fix;
  }
  fault.evidence.push_back(evidence);
}

}  // namespace

void rule_hardware_fault(const RuleContext& context, std::vector<TimedFinding>& out) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  std::map<int, DeviceFault> faults;
  for (const store::GpuEvent& e : gpu.events) {
    std::optional<int64_t> since = store::duration_ns(context.evidence.run.start_ns, e.t_ns);
    std::string at = since ? "at " + format_seconds(*since) + ": " : "";
    if (e.type == "xid") {
      XidMeaning meaning = xid_meaning(e.code);
      // Application Xids (13, 31, 43, 45) are the job's own errors; the CUDA error rule and the
      // exception explain them.
      if (!meaning.hardware) continue;
      add(faults[e.device], e.t_ns, "Xid " + std::to_string(e.code) + ": " + meaning.text,
          meaning.action,
          at + "NVML event Xid " + std::to_string(e.code) + " (" + meaning.text + ")");
    } else if (e.type == "ecc-double-bit" || e.type == "gpu-lost") {
      XidMeaning meaning = xid_meaning(e.type == "gpu-lost" ? 79 : 48);
      add(faults[e.device], e.t_ns, e.text, meaning.action, at + e.type + ": " + e.text);
    }
  }
  // Uncorrected ECC errors counted during the run, where no event said so (events unsupported).
  std::map<int, std::pair<uint64_t, uint64_t>> ecc;  // first and last uncorrected count
  std::map<int, int64_t> ecc_time;
  for (const store::GpuSample& s : gpu.samples) {
    if (!s.ecc_uncorrected) continue;
    auto [it, fresh] = ecc.try_emplace(s.device, *s.ecc_uncorrected, *s.ecc_uncorrected);
    if (!fresh && *s.ecc_uncorrected > it->second.second && !ecc_time.contains(s.device)) {
      ecc_time[s.device] = s.t_ns;
    }
    it->second.second = *s.ecc_uncorrected;
  }
  for (const auto& [device, counts] : ecc) {
    if (counts.second <= counts.first) continue;
    add(faults[device], ecc_time[device], "uncorrectable ECC errors in GPU memory",
        xid_meaning(48).action,
        "NVML: uncorrected ECC errors rose from " + std::to_string(counts.first) + " to " +
            std::to_string(counts.second) + " during the run");
  }

  for (auto& [device, fault] : faults) {
    Finding f;
    f.kind = FindingKind::kHardwareFault;
    const store::GpuDevice* d = find_device(gpu, device);
    std::string where = device_label(gpu, device);
    if (d && !d->name.empty()) where += " " + d->name;
    if (d && !d->uuid.empty()) where += ", " + d->uuid;
    f.title = fault.title + " on " + where;
    f.evidence = std::move(fault.evidence);
    // The job's processes that used the GPU: their failures follow from it.
    std::vector<ProcessKey> seen;
    for (const store::GpuProcessSample& s : gpu.process_samples) {
      const ProcessSummary* p = s.device == device ? job_process(context, s) : nullptr;
      ProcessKey key{s.pid, s.start_ticks};
      if (!p || std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      f.pids.push_back(p->record.pid);
      for (int rank : context.ranks_of(*p)) f.ranks.push_back(rank);
      f.evidence.push_back(context.name(*p) + " used this GPU");
    }
    f.fix = "A hardware fault, not a bug in the job: " + fault.fix;
    f.confidence = 0.9;
    out.push_back({std::move(f), fault.t_ns, 0});
  }
}

}  // namespace traindoc::analysis
