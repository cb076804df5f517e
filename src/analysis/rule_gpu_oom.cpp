// Rule: a process ran out of GPU memory (PyTorch, TensorFlow/Keras, JAX). The finding gives the
// anatomy of the moment: the device and its capacity, what was requested and free, this
// process's allocated and reserved memory, and who else held the GPU then (NVML), and tells
// fragmentation from a full GPU. Pure.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string_view>

#include "analysis/allocator_facts.h"
#include "analysis/batch_advice.h"
#include "analysis/gpu_facts.h"
#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

constexpr const char* kOwnPeakFix =
    "The job's own peak exceeded the GPU: reduce the batch size (keep the effective batch with "
    "gradient accumulation), use mixed precision (torch.autocast) or activation checkpointing.";

// Another process's share worth naming as a cause: a CUDA context alone is 300-700 MiB.
constexpr uint64_t kWorthNaming = 256ULL << 20;

std::string bytes_field(const std::map<std::string, std::string>& fields, const char* name,
                        const char* label) {
  std::optional<uint64_t> value = field_bytes(fields, name);
  return value ? std::string(label) + " " + format_bytes(*value) : "";
}

void join_to(std::string& out, const std::string& part, const char* separator = ", ") {
  if (part.empty()) return;
  if (!out.empty()) out += separator;
  out += part;
}

struct Holders {
  std::string text;         // "rank 1 (pid 2) 700 MiB, pid 9 outside the job 20 GiB"
  uint64_t job_others = 0;  // other processes of the job
  uint64_t outside = 0;     // processes outside the job
  std::vector<std::string> outside_names;
  std::vector<int> other_ranks;
  // NVML's pids were another pid namespace's: the unnamed holders may be the job's own.
  bool other_namespace = false;
};

// PyTorch's own list of the other processes on the GPU ("Process 4242 has 700.00 MiB memory in
// use"), named by role where they are the job's: the evidence that remains without NVML. PyTorch
// reads them from NVML too: where NVML's pids are another namespace's, so are these.
Holders named_others(const RuleContext& context, const std::map<std::string, std::string>& fields) {
  Holders out;
  out.other_namespace = !pids_of_another_namespace(context.evidence).empty();
  auto pids = fields.find("other_pids");
  if (pids == fields.end()) return out;
  auto bytes = fields.find("other_bytes");
  std::string_view pid_list = pids->second;
  std::string_view byte_list = bytes == fields.end() ? "" : std::string_view(bytes->second);
  while (!pid_list.empty()) {
    std::string pid(pid_list.substr(0, pid_list.find(',')));
    std::string size(byte_list.substr(0, byte_list.find(',')));
    pid_list.remove_prefix(std::min(pid_list.size(), pid.size() + 1));
    byte_list.remove_prefix(std::min(byte_list.size(), size.size() + 1));
    const ProcessSummary* p =
        out.other_namespace ? nullptr : context.process(std::atoi(pid.c_str()));
    std::string name = p                     ? context.name(*p)
                       : out.other_namespace ? "pid " + pid + kOtherNamespace
                                             : "pid " + pid + " (not a process of the job)";
    std::optional<uint64_t> used = field_bytes({{"b", size}}, "b");
    join_to(out.text, used ? name + " " + format_bytes(*used) : name);
    if (used.value_or(0) < kWorthNaming) continue;
    if (p && p->role.rank) {
      out.other_ranks.push_back(*p->role.rank);
    } else if (!p && !out.other_namespace) {
      out.outside_names.push_back(name);
    }
  }
  return out;
}

Holders holders(const RuleContext& context, int device, int64_t t_ns, int own_pid) {
  Holders out;
  out.other_namespace = !pids_of_another_namespace(context.evidence).empty();
  for (const store::GpuProcessSample& h : holders_at(context.evidence.gpu, device, t_ns)) {
    uint64_t used = h.used_bytes.value_or(0);
    std::string name = holder_name(context, h, out.other_namespace);
    join_to(out.text, name + " " + (h.used_bytes ? format_bytes(used) : "(size unknown)"), "; ");
    if (h.pid == own_pid) continue;
    if (const ProcessSummary* p = job_process(context, h)) {
      out.job_others += used;
      if (p->role.rank && used >= kWorthNaming) out.other_ranks.push_back(*p->role.rank);
    } else if (h.pid != 0 || !out.other_namespace) {
      out.outside += used;
      if (used >= kWorthNaming) out.outside_names.push_back(name);
    }
  }
  return out;
}

// PyTorch allocator settings ("expandable_segments:True,max_split_size_mb:128"): the value of
// `key` (the last one wins, as in PyTorch's parser), and `others` the entries for other keys.
std::optional<std::string> alloc_option(const std::optional<std::string>& conf,
                                        std::string_view key, std::string* others = nullptr) {
  std::optional<std::string> value;
  std::string_view rest = conf ? std::string_view(*conf) : std::string_view();
  while (!rest.empty()) {
    std::string_view item = rest.substr(0, rest.find(','));
    rest.remove_prefix(std::min(rest.size(), item.size() + 1));
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    if (item.starts_with(key) && item.size() > key.size() && item[key.size()] == ':') {
      value = std::string(item.substr(key.size() + 1));
    } else if (others != nullptr && !item.empty()) {
      *others += std::string(item) + ",";
    }
  }
  return value;
}

// Fragmentation's fix, fitted to the PyTorch version (its message's shape tells) and to what the
// process's allocator settings already hold: advice to set what is set helps nobody.
std::string fragmentation_fix(const std::map<std::string, std::string>& f,
                              const std::optional<std::string>& conf) {
  const std::string shapes =
      "prefer fixed input sizes (crop or pad to one shape, bucket sequences by length) so that "
      "freed blocks fit the next batch.";
  // PyTorch <= 2.0 printed "reserved in total by PyTorch" and had no expandable segments.
  if (f.contains("reserved_bytes")) {
    if (std::optional<std::string> split = alloc_option(conf, "max_split_size_mb")) {
      return "Memory is fragmented although max_split_size_mb is already " + *split +
             ": lower it (64, then 32; smaller costs some speed), reduce the batch size, and " +
             shapes + " PyTorch 2.1 and later offer expandable_segments:True, which is better.";
    }
    return "Memory is fragmented: PyTorch reserved more than it could use. Set "
           "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 (this PyTorch is older than 2.1; from "
           "2.1 on, expandable_segments:True is better), and " +
           shapes;
  }
  std::string others;  // the settings to keep beside expandable_segments
  if (alloc_option(conf, "expandable_segments", &others) == "True") {
    return "Memory is fragmented although expandable_segments:True is already set: segments "
           "grow, but blocks freed between live tensors of varying sizes still cannot hold a "
           "larger one. Make input sizes fixed (crop or pad to one shape, bucket sequences by "
           "length), reduce the batch size (keep the effective batch with gradient "
           "accumulation), add garbage_collection_threshold:0.8 to the setting so that cached "
           "blocks are freed before the limit, and call torch.cuda.empty_cache() between phases "
           "of different shapes (training and evaluation).";
  }
  return "Memory is fragmented: PyTorch reserved more than it could use. Set "
         "PYTORCH_CUDA_ALLOC_CONF=" +
         others + "expandable_segments:True, and " + shapes;
}

std::string fix_for(const PrintedFailure& failure, const std::map<std::string, std::string>& f,
                    const Holders& held, bool fragmented, const std::optional<std::string>& conf) {
  std::optional<uint64_t> requested = field_bytes(f, "requested_bytes");
  std::optional<uint64_t> capacity = field_bytes(f, "capacity_bytes");
  const std::string& id = failure.matches.front().id;
  const SignatureInfo* printed = find_signature(id);
  std::string_view framework = printed != nullptr ? printed->framework : "";
  std::string fix;
  if (requested && capacity && *requested > *capacity) {
    return "One request (" + format_bytes(*requested) + ") is larger than the whole GPU (" +
           format_bytes(*capacity) +
           "): a shape or unit bug (a wrong dimension multiplied in), not a batch size to tune.";
  }
  if (fragmented) return fragmentation_fix(f, conf);
  if (!held.other_ranks.empty()) {
    std::string ranks;
    for (int r : held.other_ranks) join_to(ranks, std::to_string(r));
    join_to(fix,
            "Ranks " + ranks +
                " put memory on this GPU: call torch.cuda.set_device(local_rank) before any "
                "CUDA work (or init_process_group(device_id=...)), and load checkpoints with "
                "torch.load(..., map_location=f'cuda:{local_rank}' or 'cpu').",
            " ");
  }
  if (!held.outside_names.empty()) {
    std::string names;
    for (const std::string& n : held.outside_names) join_to(names, n, "; ");
    join_to(fix,
            "Processes outside the job held the GPU (" + names +
                "): stop them or run on a free GPU (CUDA_VISIBLE_DEVICES).",
            " ");
  }
  if (framework == "jax") {
    join_to(fix,
            "JAX preallocates 75% of the GPU in every process: with another process on the GPU "
            "set XLA_PYTHON_CLIENT_PREALLOCATE=false or XLA_PYTHON_CLIENT_MEM_FRACTION; otherwise "
            "reduce the batch size or rematerialize (jax.checkpoint).",
            " ");
  } else if (framework == "tensorflow" || id == "cuda.driver-out-of-memory") {
    // By id, not framework: the CUDA driver's error as TensorFlow's StreamExecutor logs it.
    join_to(fix,
            "Let TensorFlow grow its memory instead of taking the GPU "
            "(tf.config.experimental.set_memory_growth or TF_FORCE_GPU_ALLOW_GROWTH=true), and "
            "reduce the batch size.",
            " ");
  } else if (fix.empty()) {
    fix = kOwnPeakFix;
  }
  if (held.text.empty()) fix += " (Other processes on the GPU, if any, could not be seen.)";
  if (held.other_namespace) {
    fix +=
        " (Which processes on the GPU are the job's could not be told: NVML gave the pids of "
        "another pid namespace.)";
  }
  return fix;
}

// The failure's fields, with the request that TensorFlow's and XLA's allocators log before the
// exception that names none.
std::map<std::string, std::string> oom_fields(const RuleContext& context,
                                              const PrintedFailure& failure) {
  std::map<std::string, std::string> fields = failure.fields;
  for (const store::LogLine* line : lines_near(context.evidence, *failure.traceback, false)) {
    for (const SignatureMatch& m : match_line(line->text)) {
      if (m.failure &&
          (m.kind == FindingKind::kGpuOom || m.kind == FindingKind::kGpuFragmentation)) {
        fields.insert(m.fields.begin(), m.fields.end());
      }
    }
  }
  return fields;
}

// The numbers of the GPU (`where`) and of this process: what PyTorch allocated, what it
// reserved but could not use, and the rest.
void cite_numbers(const store::GpuEvidence& gpu, const std::map<std::string, std::string>& fields,
                  std::optional<int> device, const std::string& where, Finding& f) {
  std::string numbers;
  join_to(numbers, bytes_field(fields, "requested_bytes", "requested"));
  join_to(numbers, bytes_field(fields, "capacity_bytes", "capacity"));
  join_to(numbers, bytes_field(fields, "free_bytes", "free"));
  if (device) {
    if (const store::GpuDevice* d = find_device(gpu, *device);
        d && !fields.contains("capacity_bytes")) {
      join_to(numbers, "capacity " + format_bytes(d->memory_total) + " (NVML)");
    }
  }
  if (!numbers.empty()) f.evidence.push_back(where + ": " + std::move(numbers));

  std::string self;
  join_to(self, bytes_field(fields, "process_bytes", "in use"));
  join_to(self, bytes_field(fields, "allocated_bytes", "allocated by PyTorch"));
  join_to(self, bytes_field(fields, "reserved_bytes", "reserved by PyTorch"));
  join_to(self, bytes_field(fields, "reserved_unallocated_bytes", "reserved but unallocated"));
  join_to(self, bytes_field(fields, "private_pool_bytes", "in private pools (CUDA graphs)"));
  if (!self.empty()) f.evidence.push_back("this process: " + self);
}

// Who held the device at the moment of the failure, and its peak over the run (NVML), cited.
Holders cite_holders(const RuleContext& context, int device, const PrintedFailure& failure, int pid,
                     Finding& f) {
  const store::GpuEvidence& gpu = context.evidence.gpu;
  Holders held = holders(context, device, failure.t_ns, pid);
  if (!held.text.empty()) {
    f.evidence.push_back("on " + device_label(gpu, device) +
                         " at that moment (NVML): " + held.text);
  }
  if (held.other_namespace) {
    f.evidence.push_back(
        "NVML's process list uses the pids of another pid namespace, likely the host's pids "
        "of this container's processes: the processes it names may be the job's own, this "
        "one included, and are not processes to stop");
  }
  if (auto peak = peak_by_device(gpu); peak.contains(device)) {
    f.evidence.push_back(device_label(gpu, device) +
                         " peak over the run: " + format_bytes(peak.at(device)));
  }
  return held;
}

// What the failure says of the GPU's memory, for the batch-size advice: the capacity (the
// error's, else NVML's), the process's memory in use then and the request refused.
FailureMemory batch_memory(const store::GpuEvidence& gpu,
                           const std::map<std::string, std::string>& fields,
                           std::optional<int> device, int64_t t_ns) {
  FailureMemory out{BatchMemory::kGpu,
                    t_ns,
                    device,
                    field_bytes(fields, "capacity_bytes"),
                    field_bytes(fields, "process_bytes"),
                    field_bytes(fields, "requested_bytes")};
  if (const store::GpuDevice* d = device ? find_device(gpu, *device) : nullptr;
      d && !out.capacity) {
    out.capacity = d->memory_total;
  }
  return out;
}

// Caught and survived (a batch-size search that halves its batch until it fits): no failure,
// where the job then ended well or the process trained on; one that gave up, or left its peers
// for it, failed.
void when_handled(const RuleContext& context, const ProcessSummary* p, int64_t t_ns, Finding& f) {
  if (p != nullptr && p->record.exit_code == 0 &&
      (run_finished(context) || p->trained_after_ns.value_or(0) > t_ns)) {
    f.severity = Severity::kInfo;
    f.title += ", and went on: it handled the error and exited with code 0";
    f.fix =
        "Nothing to do if the process meant to catch it (a search for the batch size that "
        "fits). Otherwise: " +
        f.fix;
  }
}

// The allocator's reading decides fragmentation where it tells, over the message's figures.
bool fragmented_by(const store::AllocatorState* state, bool by_message) {
  AllocatorVerdict verdict = state ? allocator_verdict(*state) : AllocatorVerdict::kUnknown;
  return verdict == AllocatorVerdict::kUnknown ? by_message
                                               : verdict == AllocatorVerdict::kFragmented;
}

// The fix of a fragmented allocator that its reading showed, with when to empty the cache (which
// the fix already says where expandable segments are set).
std::string fragmented_fix(const std::map<std::string, std::string>& fields,
                           const std::optional<std::string>& conf) {
  std::string fix = fragmentation_fix(fields, conf);
  if (alloc_option(conf, "expandable_segments") != "True") fix += kEmptyCacheTiming;
  return fix;
}

// An out-of-memory error the job caught without printing it (a search for the batch that fits,
// a retry with a smaller one): known from the allocator's reading alone, the last of each
// process and device.
void unprinted_errors(const RuleContext& context,
                      const std::set<const store::AllocatorState*>& taken,
                      std::vector<TimedFinding>& out) {
  std::map<std::pair<int, int>, const store::AllocatorState*> last;
  for (const store::AllocatorState& s : context.evidence.allocator_states) {
    if (!taken.contains(&s)) last[{s.pid, s.device}] = &s;
  }
  const store::GpuEvidence& gpu = context.evidence.gpu;
  for (const auto& [key, s] : last) {
    const ProcessSummary* p = context.process(s->pid);
    bool fragmented = allocator_verdict(*s) == AllocatorVerdict::kFragmented;
    std::optional<int> device = p ? nvml_device(context, *p, s->device) : std::nullopt;
    std::string where =
        device ? device_label(gpu, *device) : "CUDA device " + std::to_string(s->device);
    std::string who = p ? context.name(*p) : "pid " + std::to_string(s->pid);
    Finding f;
    f.kind = fragmented ? FindingKind::kGpuFragmentation : FindingKind::kGpuOom;
    f.pids = {s->pid};
    if (p) f.ranks = context.ranks_of(*p);
    f.title = who + (fragmented ? " ran out of memory on " : " ran out of GPU memory on ");
    f.title += where;
    if (fragmented) f.title += " through fragmentation";
    f.title += ", an error it caught";
    f.evidence = allocator_evidence(*s, where);
    const store::CudaEnv* env = p ? find_cuda_env(gpu, p->record) : nullptr;
    std::optional<std::string> conf = env ? env->alloc_conf : std::nullopt;
    if (conf) f.evidence.push_back("PyTorch allocator settings as the process started: " + *conf);
    if (fragmented) {
      f.fix = fragmented_fix({}, conf);
    } else {
      f.fix = kOwnPeakFix;
      if (p) {
        FailureMemory memory = batch_memory(gpu, {}, device, s->t_ns);
        memory.in_use = s->reserved;
        memory.requested = s->requested;
        f.fix = with_batch_advice(context, *p, memory, std::move(f.fix));
      }
    }
    f.confidence = 0.8;
    when_handled(context, p, s->t_ns, f);
    out.push_back({std::move(f), s->t_ns, s->pid});
  }
}

}  // namespace

void rule_gpu_oom(const RuleContext& context, std::vector<TimedFinding>& out) {
  const std::vector<PythonTraceback>& tracebacks = context.texts.all_tracebacks();
  const store::GpuEvidence& gpu = context.evidence.gpu;
  std::set<const store::AllocatorState*> taken;
  for (const PrintedFailure& failure : printed_failures(
           context, tracebacks, {FindingKind::kGpuOom, FindingKind::kGpuFragmentation})) {
    std::map<std::string, std::string> fields = oom_fields(context, failure);
    const store::AllocatorState* state =
        failure.process ? allocator_state_before(context.evidence, failure.process->record.pid,
                                                 failure.t_ns, taken)
                        : nullptr;
    if (state) taken.insert(state);
    bool fragmented = fragmented_by(
        state, std::any_of(failure.matches.begin(), failure.matches.end(),
                           [](const auto& m) { return m.kind == FindingKind::kGpuFragmentation; }));
    Finding f;
    f.kind = fragmented ? FindingKind::kGpuFragmentation : FindingKind::kGpuOom;
    std::string who = failure.process ? context.name(*failure.process) : "a process";
    int pid = failure.process ? failure.process->record.pid : 0;
    if (failure.process) {
      f.pids = {pid};
      f.ranks = context.ranks_of(*failure.process);
    }
    std::optional<int> device = failure_device(context, failure);
    if (!device && state) device = nvml_device(context, *failure.process, state->device);
    std::string where = device                   ? device_label(gpu, *device)
                        : fields.contains("gpu") ? "CUDA device " + fields.at("gpu")
                        : state                  ? "CUDA device " + std::to_string(state->device)
                                                 : "the GPU";
    f.title = who + (fragmented ? " ran out of memory on " : " ran out of GPU memory on ");
    f.title += where;
    if (fragmented) f.title += " through fragmentation";
    std::optional<std::string> caveat =
        device && failure.process ? device_order_caveat(context, *failure.process) : std::nullopt;
    const PythonTraceback& tb = *failure.traceback;
    std::string line = tb.exception_type + ": " + tb.message.substr(0, tb.message.find('\n'));
    f.evidence.push_back(who + ", " + tb.stream + " line " + std::to_string(tb.last_line) + ": " +
                         line.substr(0, 400));

    cite_numbers(gpu, fields, device, where, f);
    if (state) {
      std::vector<std::string> read = allocator_evidence(*state, where);
      f.evidence.insert(f.evidence.end(), read.begin(), read.end());
    }
    const store::CudaEnv* env =
        failure.process ? find_cuda_env(gpu, failure.process->record) : nullptr;
    std::optional<std::string> conf = env ? env->alloc_conf : std::nullopt;
    if (conf) f.evidence.push_back("PyTorch allocator settings as the process started: " + *conf);
    Holders named = named_others(context, fields);
    if (!named.text.empty()) {
      f.evidence.push_back("the OOM message names other processes on the GPU: " + named.text);
    }

    Holders held;
    if (device) {
      held = cite_holders(context, *device, failure, pid, f);
    } else if (!gpu.nvml_loaded && named.text.empty()) {
      f.evidence.push_back("no NVML evidence: who else held the GPU is unknown");
    }
    // NVML's view when it has one; PyTorch's list of the other processes otherwise.
    if (caveat) f.evidence.push_back(*caveat);
    f.fix = fix_for(failure, fields, held.text.empty() ? named : held, fragmented, conf);
    if (fragmented && state) f.fix = fragmented_fix(fields, conf);
    if (!fragmented && failure.process) {
      f.fix = with_batch_advice(context, *failure.process,
                                batch_memory(gpu, fields, device, failure.t_ns), std::move(f.fix));
    }
    f.confidence = 0.9;
    when_handled(context, failure.process, failure.t_ns, f);
    out.push_back({std::move(f), failure.t_ns, pid});
  }
  unprinted_errors(context, taken, out);
}

}  // namespace traindoc::analysis
