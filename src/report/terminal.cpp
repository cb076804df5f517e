// Terminal summary renderer. Any process.
// Plain text, one screen: the verdict, the root cause and what it caused, the other findings,
// then the process table, then where the details are.
#include "report/terminal.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "report/elapsed.h"
#include "report/finding_order.h"
#include "report/json_report.h"
#include "report/safe_text.h"

namespace traindoc::report {
namespace {

struct Palette {
  const char* bold = "";
  const char* red = "";
  const char* yellow = "";
  const char* green = "";
  const char* dim = "";
  const char* reset = "";
};

Palette palette(bool colour) {
  if (!colour) return {};
  return {"\033[1m", "\033[1;31m", "\033[1;33m", "\033[32m", "\033[2m", "\033[0m"};
}

// Evidence lines shown: all a root cause needs, a few for a finding of its own; report.json has
// them all.
constexpr size_t kRootEvidenceLines = 10;
constexpr size_t kOtherEvidenceLines = 3;

// A finding's heading, its first evidence lines and its fix.
std::string render_finding(const analysis::Finding& f, const char* label, const char* colour,
                           size_t evidence_lines, const Palette& c) {
  std::string out = fmt::format("  {}{}{} [{}] {}\n", colour, label, c.reset,
                                analysis::to_string(f.kind), f.title);
  size_t shown = std::min(f.evidence.size(), evidence_lines);
  for (size_t e = 0; e < shown; ++e) out += "      " + f.evidence[e] + "\n";
  if (shown < f.evidence.size()) {
    out += fmt::format("      ... {} more lines in report.json\n", f.evidence.size() - shown);
  }
  if (!f.fix.empty()) out += std::string("    ") + c.green + "fix:" + c.reset + " " + f.fix + "\n";
  return out;
}

// Root cause first, with its evidence and fix; then what it caused, one line each (as
// report.json's `consequences` link them); then the findings it did not cause (warnings, and
// failures not linked to it), each with a little evidence and its fix.
std::string render_findings(const analysis::Diagnosis& d, const Palette& c) {
  std::string out;
  FindingOrder order = order_for_reading(d);
  for (const FindingOrder::Root& root : order.roots) {
    out += render_finding(d.findings[root.index], "ROOT CAUSE", c.red, kRootEvidenceLines, c);
    if (!root.consequences.empty()) out += "  which caused:\n";
    for (size_t k : root.consequences) {
      const analysis::Finding& f = d.findings[k];
      out += std::string(c.dim) + fmt::format("    [{}] {}", analysis::to_string(f.kind), f.title) +
             c.reset + "\n";
      // A group of alike findings also names a few of them: its first evidence line.
      if (f.repeats && !f.evidence.empty()) {
        out += std::string(c.dim) + "        " + f.evidence.front() + c.reset + "\n";
      }
    }
  }
  if (!order.roots.empty() && !order.others.empty()) out += "  not caused by the root cause:\n";
  for (size_t i : order.others) {
    const analysis::Finding& f = d.findings[i];
    const char* colour = f.severity == analysis::Severity::kError ? c.red : c.yellow;
    out += render_finding(f, analysis::to_string(f.severity), colour, kOtherEvidenceLines, c);
  }
  return out;
}

// A job of several nodes: each node, its ranks, and how its clock was aligned with the first's.
std::string render_nodes(const analysis::Diagnosis& d) {
  std::string out;
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    const analysis::NodeSummary& node = d.nodes[i];
    std::string ranks;
    for (int rank : node.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    std::string clock =
        i == 0 ? "its clock is the report's"
        : node.clock.calls > 0
            ? fmt::format("clock {:+.3f} s, within {:.1f} ms ({} calls)",
                          static_cast<double>(node.clock.offset_ns) / 1e9,
                          static_cast<double>(node.clock.residual_ns) / 1e6, node.clock.calls)
            : "clock not aligned";
    out += fmt::format(
        "  node {}{}: {}{}; {}\n", node.name,
        node.hostname.empty() || node.hostname == node.name ? "" : " (" + node.hostname + ")",
        ranks.empty() ? "no rank" : "ranks " + ranks, node.ended ? "" : ", cut short", clock);
  }
  return out;
}

// One line per GPU: its peak against its capacity and the largest holders.
std::string render_gpus(const analysis::Diagnosis& d) {
  constexpr size_t kHolders = 4;
  std::string out;
  for (const analysis::GpuSummary& g : d.gpus) {
    std::string holders;
    for (size_t i = 0; i < g.holders.size() && i < kHolders; ++i) {
      holders += (i == 0 ? "" : ", ") + describe_holder(g.holders[i]);
    }
    if (g.holders.size() > kHolders)
      holders += fmt::format(", +{} more", g.holders.size() - kHolders);
    out += fmt::format("  GPU {}{} {}: peak {} of {}{}\n", g.device.index,
                       g.node.empty() ? "" : " on " + g.node, g.device.pci_bus_id,
                       peak_text(g.peak_used), analysis::format_bytes(g.device.memory_total),
                       holders.empty() ? "" : " (" + holders + ")");
  }
  return out;
}

// The diagnosis with every text in it made safe to print (terminal_safe): the one place where
// words of the job (its messages, commands, errors, the names its devices gave) enter the
// terminal's text, so that one carrying an escape sequence is shown, never obeyed. The renderers
// below read only this copy; their own newlines and colours are added after.
analysis::Diagnosis printable(const analysis::Diagnosis& d) {
  analysis::Diagnosis out = d;
  auto clean = [](std::string& text) { text = terminal_safe(text); };
  for (std::string& word : out.run.command) clean(word);
  clean(out.run.hostname);
  clean(out.run.version);
  clean(out.run.exec_error);
  for (analysis::NodeSummary& node : out.nodes) {
    clean(node.name);
    clean(node.hostname);
  }
  for (analysis::ProcessSummary& p : out.processes) {
    clean(p.node);
    clean(p.record.argv0);
    clean(p.record.cmdline);
  }
  for (analysis::GpuSummary& g : out.gpus) {
    clean(g.node);
    clean(g.device.uuid);
    clean(g.device.pci_bus_id);
    clean(g.device.name);
    for (analysis::GpuSummary::Holder& h : g.holders) clean(h.who);
  }
  for (analysis::Finding& f : out.findings) {
    clean(f.title);
    clean(f.fix);
    for (std::string& line : f.evidence) clean(line);
  }
  for (std::string& note : out.missing_evidence) clean(note);
  return out;
}

std::string verdict_text(const analysis::Diagnosis& d, const std::string& run_dir) {
  std::string out = "traindoc: " + describe_run_end(d.run);
  // The root cause; without one (the job did not fail), the first warning, so that a quiet run
  // still says that something deserves a look, or who asked the job to stop.
  if (!d.findings.empty() &&
      (d.findings.front().root_cause || d.findings.front().severity != analysis::Severity::kInfo ||
       d.findings.front().kind == analysis::FindingKind::kStopRequested)) {
    const analysis::Finding& f = d.findings.front();
    out += fmt::format("; {} [{}] {}", f.root_cause ? "root cause" : to_string(f.severity),
                       analysis::to_string(f.kind), f.title);
    size_t rest = static_cast<size_t>(std::count_if(
        d.findings.begin() + 1, d.findings.end(),
        [](const analysis::Finding& o) { return o.severity != analysis::Severity::kInfo; }));
    if (rest > 0) out += fmt::format(" (+{} more findings)", rest);
  }
  return out + " (" + run_dir + ")\n";
}

std::string summary_text(const analysis::Diagnosis& d, const std::string& run_dir,
                         TerminalOptions options) {
  Palette c = palette(options.colour);
  std::string out = std::string(c.bold) + "traindoc: " + describe_run_end(d.run) + c.reset + "\n";
  out += render_findings(d, c);
  if (!d.processes.empty()) {
    // A job of several nodes names each process's node before its pid.
    size_t node_width = 0;
    for (const analysis::NodeSummary& node : d.nodes) {
      node_width = std::max(node_width, node.name.size() + 1);
    }
    out += fmt::format("  {:<{}}{:>8}  {:<22} {:<33} {:>10} {:>10} {:>7}\n",
                       node_width > 0 ? "node" : "", node_width, "pid", "role", "end", "peak RSS",
                       "peak USS", "steps");
    size_t shown = std::min(d.processes.size(), options.max_rows);
    for (size_t i = 0; i < shown; ++i) {
      const analysis::ProcessSummary& p = d.processes[i];
      // Ranks that ran different numbers of steps are told apart here at a glance.
      std::optional<int64_t> steps = p.step_count();
      out += fmt::format("  {:<{}}{:>8}  {:<22} {:<33} {:>10} {:>10} {:>7}\n", p.node, node_width,
                         p.record.pid, analysis::describe(p.role), describe_end(p.record),
                         peak_text(p.peak_rss), peak_text(p.peak_uss),
                         steps ? std::to_string(*steps) : "-");
    }
    if (shown < d.processes.size()) {
      out += fmt::format("  ... and {} more processes (report.json lists them all)\n",
                         d.processes.size() - shown);
    }
    // Peak memory per role: the largest single process, and how many there were.
    std::map<std::string, std::pair<std::optional<uint64_t>, int>> by_role;
    for (const auto& p : d.processes) {
      auto& [peak, count] = by_role[analysis::to_string(p.role.role)];
      if (p.peak_rss) peak = std::max(peak.value_or(0), *p.peak_rss);
      ++count;
    }
    std::string line;
    for (const char* role : {"launcher", "rank", "worker", "other"}) {
      auto it = by_role.find(role);
      if (it == by_role.end()) continue;
      line += fmt::format("{}{} {} (max of {})", line.empty() ? "" : ", ", role,
                          peak_text(it->second.first), it->second.second);
    }
    out += "  peak RSS by role: " + line + "\n";
  }
  out += render_nodes(d);
  out += render_gpus(d);
  for (const auto& note : d.missing_evidence) out += "  note: " + note + "\n";
  out +=
      "  run folder: " + run_dir + "  (report.json, report.html; `traindoc analyze` redoes them)\n";
  return out;
}

}  // namespace

std::string describe_run_end(const store::RunInfo& run) {
  if (!run.exec_error.empty()) return "the job could not start: " + run.exec_error;
  if (run.end_ns == 0) return "the run has no recorded end: traindoc stopped while the job ran";
  std::string how = run.exit_signal ? "was killed by " + signal_name(*run.exit_signal)
                    : run.exit_code ? fmt::format("exited with code {}", *run.exit_code)
                                    : std::string("ended");
  // Times that tell no duration (a clock set far off, a damaged run.db): none is claimed.
  std::optional<int64_t> duration = run_duration_ns(run);
  if (!duration) return "the job " + how;
  return fmt::format("the job {} after {:.1f} s", how, static_cast<double>(*duration) / 1e9);
}

std::string peak_text(const std::optional<uint64_t>& bytes) {
  return bytes ? analysis::format_bytes(*bytes) : "-";
}

std::string describe_holder(const analysis::GpuSummary::Holder& h) {
  return (h.in_job ? h.who : fmt::format("pid {} outside the job", h.pid)) + " " +
         analysis::format_bytes(h.peak);
}

bool wants_colour(int fd) {
  const char* no_colour = getenv("NO_COLOR");
  return isatty(fd) && (no_colour == nullptr || *no_colour == '\0');
}

std::string describe_end(const store::ProcessRecord& p) {
  if (p.exit_signal) {
    return "killed by " + signal_name(*p.exit_signal) + (p.core_dumped ? " (core dumped)" : "");
  }
  if (p.exit_code) return fmt::format("exit {}", *p.exit_code);
  if (p.end_source == store::EndSource::kVanished) return "vanished";
  if (p.end_source == store::EndSource::kGuard) return "ended by the guard";
  return "still running";
}

std::string render_summary(const analysis::Diagnosis& d, const std::string& run_dir,
                           TerminalOptions options) {
  return summary_text(printable(d), terminal_safe(run_dir), options);
}

std::string render_verdict(const analysis::Diagnosis& d, const std::string& run_dir) {
  return verdict_text(printable(d), terminal_safe(run_dir));
}

}  // namespace traindoc::report
