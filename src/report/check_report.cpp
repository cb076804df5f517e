// What `traindoc check` prints, and the line `traindoc run` says of each trap as it starts.
// Any process.
#include "report/check_report.h"

#include "analysis/preflight_checks.h"
#include "report/safe_text.h"

namespace traindoc::report {
namespace {

using nlohmann::ordered_json;

template <typename T>
ordered_json optional(const std::optional<T>& value) {
  return value ? ordered_json(*value) : ordered_json(nullptr);
}

ordered_json result_json(const store::PreflightResult& r) {
  analysis::PreflightWords words = analysis::describe(r);
  return {{"check", to_string(r.check)},
          {"verdict", to_string(r.verdict)},
          {"title", words.title},
          {"fix", words.fix},
          {"measured", optional(r.measured)},
          {"threshold", optional(r.threshold)},
          {"total", optional(r.total)},
          {"device", optional(r.device)},
          {"pid", optional(r.pid)},
          {"subject", r.subject}};
}

ordered_json limit_json(const store::Limit& limit) {
  return {{"soft", optional(limit.soft)}, {"hard", optional(limit.hard)}};
}

ordered_json gpus_json(const store::NvmlFacts& nvml) {
  ordered_json gpus = ordered_json::array();
  for (const store::GpuFacts& gpu : nvml.gpus) {
    ordered_json processes = ordered_json::array();
    for (const store::GpuProcessFacts& p : gpu.processes) {
      processes.push_back(
          {{"pid", p.pid}, {"command", p.command}, {"used_bytes", optional(p.used_bytes)}});
    }
    gpus.push_back({{"index", gpu.index},
                    {"name", gpu.name},
                    {"uuid", gpu.uuid},
                    {"memory_total", gpu.total},
                    {"memory_used", gpu.used},
                    {"compute_mode", optional(gpu.compute_mode)},
                    {"processes", processes}});
  }
  return {{"loaded", nvml.loaded},
          {"status", nvml.status},
          {"driver_version", nvml.driver_version},
          {"cuda_version", optional(nvml.cuda_version)},
          {"gpus", gpus}};
}

ordered_json command_json(const store::PreflightFacts& facts) {
  const store::CommandFacts& c = facts.command;
  return {{"launcher", to_string(c.launcher)},
          {"program", c.program},
          {"script", c.script},
          {"script_imports_torch", c.script_imports_torch},
          {"script_uses_cuda", c.script_uses_cuda},
          {"local_ranks", analysis::local_ranks(facts)},
          {"nproc_per_node", optional(c.nproc_per_node)},
          {"nnodes", optional(c.nnodes)},
          {"node_rank", optional(c.node_rank)},
          {"redirects", c.redirects_given ? optional(c.redirects) : ordered_json(nullptr)},
          {"workers", optional(c.workers)},
          {"batch_size", optional(c.batch_size)}};
}

ordered_json python_json(const store::PythonFacts& p) {
  return {{"interpreter", p.interpreter},  {"version", p.version},
          {"torch_dir", p.torch_dir},      {"torch_version", p.torch_version},
          {"torch_cuda", p.torch_cuda},    {"torch_python", p.torch_python},
          {"nccl_version", p.nccl_version}};
}

ordered_json network_json(const store::NetworkFacts& n) {
  ordered_json ifnames = ordered_json::array();
  for (const store::NetworkFacts::Ifname& i : n.ifnames) {
    ifnames.push_back({{"variable", i.variable}, {"value", i.value}, {"matches", i.matches}});
  }
  return {{"master_addr", n.master_addr},
          {"master_addr_resolved", n.master_addr_resolved},
          {"master_port", optional(n.master_port)},
          {"port_invalid", n.port_invalid},
          {"endpoint_port_missing", n.endpoint_port_missing},
          {"port_checked", n.port_checked},
          {"port_in_use", n.port_in_use},
          {"connect_error", optional(n.connect_error)},
          {"connect_ms", n.connect_error ? ordered_json(n.connect_ms) : ordered_json(nullptr)},
          {"socket_ifnames", ifnames},
          {"interfaces", n.interfaces}};
}

ordered_json facts_json(const store::PreflightFacts& f) {
  std::string invalid;
  std::vector<int> visible = analysis::visible_gpus(f, invalid);
  return {{"shm",
           {{"exists", f.shm.exists},
            {"tmpfs", f.shm.tmpfs},
            {"total", f.shm.total},
            {"free", f.shm.free}}},
          {"memory",
           {{"mem_total", f.memory.mem_total},
            {"mem_available", optional(f.memory.mem_available)},
            {"swap_total", f.memory.swap_total},
            {"swap_free", f.memory.swap_free},
            {"cgroup_version", f.memory.cgroup_version},
            {"cgroup_max", optional(f.memory.cgroup_max)},
            {"cgroup_current", optional(f.memory.cgroup_current)}}},
          {"limits",
           {{"nofile", limit_json(f.limits.nofile)},
            {"memlock", limit_json(f.limits.memlock)},
            {"stack", limit_json(f.limits.stack)},
            {"core", limit_json(f.limits.core)},
            {"core_pattern", f.limits.core_pattern},
            {"infiniband", f.limits.infiniband}}},
          {"nvml", gpus_json(f.nvml)},
          {"cuda_visible_devices", f.cuda_visible_devices_set ? ordered_json(f.cuda_visible_devices)
                                                              : ordered_json(nullptr)},
          {"visible_gpus", visible},
          {"command", command_json(f)},
          {"python", python_json(f.python)},
          {"network", network_json(f.network)}};
}

}  // namespace

std::string render_check(const std::vector<store::PreflightResult>& results) {
  if (results.empty()) return "traindoc check: nothing found that will or may fail\n";
  std::string text;
  for (store::Verdict verdict : {store::Verdict::kWillFail, store::Verdict::kMayFail}) {
    std::string group;
    for (const store::PreflightResult& r : results) {
      if (r.verdict != verdict) continue;
      analysis::PreflightWords words = analysis::describe(r);
      // The words may hold a command line or a path of the machine's.
      group += "  - " + terminal_safe(words.title) + " [" + std::string(to_string(r.check)) +
               "]\n    fix: " + terminal_safe(words.fix) + "\n";
    }
    if (group.empty()) continue;
    text += (text.empty() ? "" : "\n") +
            std::string(verdict == store::Verdict::kWillFail ? "will fail:\n" : "may fail:\n") +
            group;
  }
  return text;
}

ordered_json check_json(const store::PreflightFacts& facts,
                        const std::vector<store::PreflightResult>& results) {
  ordered_json checks = ordered_json::array();
  size_t will_fail = 0;
  for (const store::PreflightResult& r : results) {
    checks.push_back(result_json(r));
    will_fail += r.verdict == store::Verdict::kWillFail ? 1 : 0;
  }
  return {{"schema", kCheckSchema},
          {"will_fail", will_fail},
          {"may_fail", results.size() - will_fail},
          {"checks", checks},
          {"facts", facts_json(facts)}};
}

std::string preflight_line(const store::PreflightResult& result) {
  return std::string("check: ") +
         (result.verdict == store::Verdict::kWillFail ? "will fail: " : "may fail: ") +
         analysis::describe(result).title;
}

}  // namespace traindoc::report
