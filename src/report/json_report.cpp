// report.json writer. Any process.
// Absent values are left out rather than written as null, so later versions only add fields.
#include "report/json_report.h"

#include <fmt/format.h>

#include "report/elapsed.h"
#include "report/report_file.h"

namespace traindoc::report {
namespace {

using json = nlohmann::ordered_json;

template <typename T>
void put(json& object, const char* key, const std::optional<T>& value) {
  if (value) object[key] = *value;
}

const char* end_how(const store::ProcessRecord& p) {
  if (p.exit_signal) return "signaled";
  if (p.exit_code) return "exited";
  // The guard saw its process gone; the wait status went to the process's new parent.
  if (p.end_source == store::EndSource::kVanished || p.end_source == store::EndSource::kGuard) {
    return "vanished";
  }
  return "running";
}

json process_json(const analysis::ProcessSummary& summary) {
  const store::ProcessRecord& p = summary.record;
  json out;
  out["pid"] = p.pid;
  if (!summary.node.empty()) out["node"] = summary.node;
  out["parent"] = p.ppid;
  out["role"] = analysis::to_string(summary.role.role);
  out["role_text"] = analysis::describe(summary.role);
  put(out, "rank", summary.role.rank);
  put(out, "local_rank", summary.role.local_rank);
  put(out, "node_rank", summary.role.node_rank);
  put(out, "worker", summary.role.worker);
  put(out, "world_size", p.world_size);
  out["cmdline"] = p.cmdline;
  out["start_ns"] = p.start_ns;
  out["agent"] = p.agent;
  json exit;
  exit["how"] = end_how(p);
  put(exit, "code", p.exit_code);
  if (p.exit_signal) {
    exit["signal"] = *p.exit_signal;
    exit["signal_name"] = signal_name(*p.exit_signal);
    exit["core_dumped"] = p.core_dumped;
  }
  if (p.end_ns != 0) exit["time_ns"] = p.end_ns;
  exit["source"] = store::to_string(p.end_source);
  out["exit"] = exit;
  json memory = json::object();
  put(memory, "peak_rss", summary.peak_rss);
  put(memory, "peak_pss", summary.peak_pss);
  put(memory, "peak_uss", summary.peak_uss);
  put(memory, "peak_swap", summary.peak_swap);
  out["memory"] = memory;
  put(out, "peak_fds", summary.peak_fds);
  put(out, "fd_limit", summary.fd_limit);
  put(out, "peak_threads", summary.peak_threads);
  out["cpu_s"] = summary.cpu_s;
  if (!summary.steps.empty()) {
    json steps;
    for (const auto& [kind, count] : summary.steps) steps[store::to_string(kind)] = count;
    out["steps"] = steps;
  }
  return out;
}

// Times not known (0) are left out.
json repeats_json(const analysis::Repeats& r) {
  json examples = json::array();
  for (const analysis::Repeats::Example& e : r.examples) {
    json example = {{"title", e.title}, {"pids", e.pids}};
    if (e.t_ns != 0) example["time_ns"] = e.t_ns;
    examples.push_back(example);
  }
  json out = {{"count", r.count}};
  if (r.first_ns != 0) out["first_ns"] = r.first_ns;
  if (r.last_ns != 0) out["last_ns"] = r.last_ns;
  out["examples"] = examples;
  return out;
}

json gpu_json(const analysis::GpuSummary& g) {
  json out;
  if (!g.node.empty()) out["node"] = g.node;
  out["index"] = g.device.index;
  out["uuid"] = g.device.uuid;
  out["pci_bus_id"] = g.device.pci_bus_id;
  out["name"] = g.device.name;
  out["memory_total"] = g.device.memory_total;
  put(out, "peak_used", g.peak_used);
  json processes = json::array();
  for (const auto& h : g.holders) {
    processes.push_back({{"pid", h.pid}, {"who", h.who}, {"in_job", h.in_job}, {"peak", h.peak}});
  }
  out["processes"] = processes;
  return out;
}

}  // namespace

nlohmann::ordered_json finding_json(const analysis::Finding& f) {
  json out = {{"kind", std::string(analysis::to_string(f.kind))},
              {"severity", analysis::to_string(f.severity)},
              {"root_cause", f.root_cause},
              {"title", f.title},
              {"ranks", f.ranks},
              {"pids", f.pids},
              {"evidence", f.evidence},
              {"fix", f.fix},
              {"confidence", f.confidence},
              {"consequences", f.consequences}};
  if (f.t_ns != 0) out["time_ns"] = f.t_ns;
  if (f.repeats) out["repeated"] = repeats_json(*f.repeats);
  return out;
}

int shell_status(const store::RunInfo& run) {
  // 128 + N for the signals a process can die of; a number beyond them (a damaged run.db) still
  // reads as a failure, the largest status a shell gives, rather than overflowing.
  if (!run.exit_signal) return run.exit_code.value_or(0);
  int signal = *run.exit_signal;
  return signal > 0 && signal < 128 ? 128 + signal : 255;
}

json to_json(const analysis::Diagnosis& d) {
  json run;
  run["command"] = d.run.command;
  run["hostname"] = d.run.hostname;
  run["traindoc_version"] = d.run.version;
  run["supervisor_pid"] = d.run.supervisor_pid;
  run["root_pid"] = d.run.root_pid;
  run["start_ns"] = d.run.start_ns;
  if (d.run.end_ns != 0) run["end_ns"] = d.run.end_ns;
  if (std::optional<int64_t> duration = run_duration_ns(d.run)) {
    run["duration_s"] = static_cast<double>(*duration) / 1e9;
  }
  put(run, "exit_code", d.run.exit_code);
  if (d.run.exit_signal) {
    run["exit_signal"] = *d.run.exit_signal;
    run["signal_name"] = signal_name(*d.run.exit_signal);
  }
  if (d.run.exit_code || d.run.exit_signal) run["status"] = shell_status(d.run);
  if (!d.run.exec_error.empty()) run["exec_error"] = d.run.exec_error;

  json processes = json::array();
  for (const auto& p : d.processes) processes.push_back(process_json(p));
  json findings = json::array();
  for (const auto& f : d.findings) findings.push_back(finding_json(f));
  json out = {{"schema", kReportSchema},
              {"run", run},
              {"processes", processes},
              {"findings", findings},
              {"missing_evidence", d.missing_evidence}};
  // Only for a job of several nodes: a run's report stays as it was.
  if (!d.nodes.empty()) {
    json nodes = json::array();
    for (const analysis::NodeSummary& node : d.nodes) {
      json entry = {{"name", node.name},
                    {"hostname", node.hostname},
                    {"ended", node.ended},
                    {"ranks", node.ranks},
                    {"clock_aligned", node.clock.calls > 0}};
      if (node.clock.calls > 0) {
        entry["clock_offset_ns"] = node.clock.offset_ns;
        entry["clock_residual_ns"] = node.clock.residual_ns;
        entry["clock_calls"] = node.clock.calls;
      }
      nodes.push_back(entry);
    }
    out["nodes"] = nodes;
  }
  // Only where NVML listed devices: reports of runs without GPUs stay as they were.
  if (!d.gpus.empty()) {
    json gpus = json::array();
    for (const auto& g : d.gpus) gpus.push_back(gpu_json(g));
    out["gpus"] = gpus;
  }
  return out;
}

std::string json_dump(const json& value, int indent) {
  std::string text = value.dump(indent, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    // The text is valid UTF-8 by now, so 0xC2 always leads a two-byte character: with 0x80 to
    // 0x9F, a C1 control. These bytes occur only inside strings, where an escape means the same.
    if (byte == 0x7F) {
      out += "\\u007f";
    } else if (byte == 0xC2 && next >= 0x80 && next <= 0x9F) {
      out += fmt::format("\\u{:04x}", next);
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string json_text(const analysis::Diagnosis& diagnosis) {
  return json_dump(to_json(diagnosis), 2) + "\n";
}

void write_json_report(const analysis::Diagnosis& diagnosis, const std::string& run_dir) {
  write_report_file(run_dir, "report.json", json_text(diagnosis));
}

}  // namespace traindoc::report
