// report.html writer. Any process.
// The text is written here, as HTML, so that the page reads without JavaScript; the script only
// draws the charts, with uPlot (embedded from the npm registry's package at build time), from the
// series in a JSON block.
#include "report/html_report.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string_view>

#include "report/chart_library.h"
#include "report/chart_markers.h"
#include "report/chart_series.h"
#include "report/collective_timeline.h"
#include "report/finding_order.h"
#include "report/json_report.h"
#include "report/report_file.h"
#include "report/safe_text.h"
#include "report/terminal.h"

namespace traindoc::report {
namespace {

// Processes listed in the table; report.json has them all.
constexpr size_t kProcessRows = 500;
// Ranks and pids named in a finding's line (a group of alike findings names thousands); likewise.
constexpr size_t kNumbersShown = 20;

constexpr std::string_view kStyle = R"css(
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto;
  max-width: 1200px; padding: 0 24px 48px; color: #1d2125; background: #fff; }
h1 { font-size: 22px; margin: 24px 0 4px; }
h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid #dde1e5; padding-bottom: 4px; }
h3 { font-size: 16px; margin: 0 0 6px; }
code, pre, .evidence { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, monospace; }
.verdict { font-size: 17px; font-weight: 600; margin: 4px 0; }
.verdict.failed { color: #b3261e; }
.meta { color: #5c6670; margin: 2px 0; }
.finding { border: 1px solid #dde1e5; border-left: 5px solid #8a939c; border-radius: 4px;
  padding: 10px 14px; margin: 10px 0; }
.finding.error { border-left-color: #b3261e; }
.finding.warning { border-left-color: #c77c02; }
.finding.info { border-left-color: #2f6fb3; }
.finding.root { background: #fdf6f5; }
.label { font-size: 12px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em;
  color: #fff; background: #8a939c; border-radius: 3px; padding: 1px 6px; margin-right: 6px; }
.error > h3 .label { background: #b3261e; }
.warning > h3 .label { background: #c77c02; }
.info > h3 .label { background: #2f6fb3; }
.kind { color: #5c6670; font-weight: 400; }
.evidence { list-style: none; padding: 6px 10px; margin: 6px 0; background: #f4f6f8;
  border-radius: 3px; max-height: 480px; overflow: auto; }
.evidence li { white-space: pre-wrap; word-break: break-word; }
.fix { margin: 6px 0 0; }
.fix b { color: #1e7b34; }
details { margin: 6px 0 0 12px; }
summary { cursor: pointer; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #eceff1; vertical-align: top; }
th { background: #f4f6f8; }
td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
td.command { max-width: 360px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.chart { margin: 12px 0 24px; }
.chart h3 { font-weight: 600; }
#chart-status { color: #b3261e; }
.timeline { width: 100%; height: auto; }
.timeline text { font-size: 12px; fill: #1d2125; }
.timeline .tick { fill: #5c6670; text-anchor: middle; }
.timeline .grid { stroke: #eceff1; }
.timeline rect.call { fill: #2f6fb3; }
.timeline rect.open, .timeline rect.raised { fill: #b3261e; }
.timeline rect.queued { fill: #8a939c; }
.timeline line.issue { stroke: #c77c02; stroke-width: 2; stroke-dasharray: 5 3; }
.open-key { color: #b3261e; font-weight: 600; }
.u-over .marker { position: absolute; top: 0; bottom: 0; width: 9px; margin-left: -4px; }
.u-over .marker::before { content: ""; position: absolute; left: 4px; top: 0; bottom: 0;
  border-left: 1px dashed #b3261e; }
.u-over .marker.root::before { left: 3px; border-left: 3px solid #b3261e; }
.marker-label { position: absolute; left: 8px; white-space: nowrap; font-size: 12px;
  line-height: 16px; color: #b3261e; background: rgba(255, 255, 255, .85); padding: 0 3px; }
.marker-label.before { left: auto; right: 8px; }
.marker.root .marker-label { font-weight: 700; }
)css";

// Draws every chart of the JSON block into its box, with a line at each marker's moment (the
// x range widened to hold them all); marks the page when done (or why not), so that a reader,
// or a test in a browser, can tell. A marker's label goes in the first of a few rows at the top
// where it overlaps no label placed before it (the root cause's first), else the line stays
// bare and its tooltip names it.
constexpr std::string_view kScript = R"js(
(function () {
  const status = document.getElementById('chart-status');
  try {
    const charts = JSON.parse(document.getElementById('traindoc-charts').textContent);
    const markers = JSON.parse(document.getElementById('traindoc-markers').textContent);
    const labelRows = 3;
    const addMarkers = (u) => {
      const lines = markers.map((m) => {
        const line = document.createElement('div');
        line.className = 'marker' + (m.root_cause ? ' root' : '');
        line.dataset.kind = m.kind;
        line.dataset.x = String(m.x);
        line.title = m.title;
        if (m.labelled) {
          const label = document.createElement('span');
          label.className = 'marker-label';
          label.textContent = m.label;
          line.appendChild(label);
        }
        u.over.appendChild(line);
        return line;
      });
      // On every redraw (a resize, a zoom): each line to its x, each label to a free row.
      return () => {
        const rows = Array.from({ length: labelRows }, () => []);
        const width = u.valToPos(u.scales.x.max, 'x');  // the plot's, laid out or not
        markers.forEach((m, i) => {
          const line = lines[i];
          const left = u.valToPos(m.x, 'x');
          const shown = left >= -0.5 && left <= width + 0.5;
          line.style.display = shown ? '' : 'none';
          line.style.left = left + 'px';
          const label = line.firstChild;
          if (!label || !shown) return;
          label.style.display = '';
          const size = label.offsetWidth;
          // The label's box: from 4 px right of the line, or ending 3 px left of it near the
          // right edge (the line's box is 9 px wide, its label 8 px in from either side).
          const before = left + 4 + size > width;
          label.classList.toggle('before', before);
          const from = before ? left - 3 - size : left + 4;
          const span = [from - 4, from + size + 4];
          const row = rows.findIndex((taken) => taken.every(([a, b]) => span[1] <= a || b <= span[0]));
          if (row < 0) {
            label.style.display = 'none';
            line.dataset.labelRow = '';
            return;
          }
          rows[row].push(span);
          label.style.top = (2 + row * 18) + 'px';
          line.dataset.labelRow = String(row);
        });
      };
    };
    const first = markers.length ? Math.min(...markers.map((m) => m.x)) : 0;
    const last = markers.length ? Math.max(...markers.map((m) => m.x)) : 0;
    const colours = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
      '#17becf', '#bcbd22', '#7f7f7f'];
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    const bytes = (v) => {
      if (v == null) return '-';
      let u = 0;
      while (Math.abs(v) >= 1024 && u < units.length - 1) { v /= 1024; u++; }
      return (u === 0 || Math.abs(v) >= 100 ? Math.round(v) : v.toFixed(1)) + ' ' + units[u];
    };
    const count = (v) => (v == null ? '-' : String(Math.round(v)));
    // Ticks at whole steps, and at powers of two of bytes (128 MiB, 256 MiB), not at 1.5 steps
    // or 191 MiB.
    const powers = Array.from({ length: 51 }, (_, i) => 2 ** i);
    const wholes = [1, 2, 5].flatMap((m) => [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8].map((p) => m * p))
      .sort((a, b) => a - b);
    const plots = [];
    for (const chart of charts) {
      const box = document.getElementById('chart-' + chart.id);
      const format = chart.unit === 'bytes' ? bytes : count;
      const series = [{ label: 'time', value: (u, v) => (v == null ? '-' : v.toFixed(1) + ' s') }];
      // Lines that coincide (ranks in step) would hide one another: each is drawn narrower than
      // the one before it, on top of it, so that every colour shows at its edges.
      const lines = chart.series.filter((s) => !s.limit).length;
      const layer = lines > 1 ? Math.min(2, 6 / (lines - 1)) : 0;
      chart.series.forEach((s, i) => series.push({
        label: s.label, spanGaps: true, width: s.limit ? 1 : 1.5 + layer * (lines - 1 - i),
        stroke: s.limit ? '#5c6670' : colours[i % colours.length], dash: s.limit ? [6, 4] : [],
        value: (u, v) => format(v),
      }));
      let place = null;
      const options = {
        width: Math.max(320, box.clientWidth), height: 280, series,
        scales: { x: { time: false } },
        hooks: { draw: [() => place && place()] },
        axes: [{ label: 'seconds since the start' },
          { size: 80, incrs: chart.unit === 'bytes' ? powers : wholes,
            values: (u, ticks) => ticks.map(format) }],
      };
      if (markers.length) {
        options.scales.x.range = (u, min, max) =>
          (min == null ? [first, last] : [Math.min(min, first), Math.max(max, last)]);
      }
      const plot = new uPlot(options, [chart.x].concat(chart.series.map((s) => s.values)), box);
      if (markers.length) {
        place = addMarkers(plot);
        place();
      }
      plots.push([plot, box]);
    }
    window.addEventListener('resize', () => {
      for (const [plot, box] of plots) plot.setSize({ width: Math.max(320, box.clientWidth), height: 280 });
    });
    document.body.dataset.chartsDrawn = String(plots.length);
  } catch (error) {
    status.textContent = 'The charts could not be drawn: ' + error;
    document.body.dataset.chartsError = String(error);
  }
})();
)js";

// "4250, 4251, 4252", then "and 1711 more" past kNumbersShown.
std::string join_numbers(const std::vector<int>& numbers) {
  std::string out;
  size_t shown = std::min(numbers.size(), kNumbersShown);
  for (size_t i = 0; i < shown; ++i) out += (i == 0 ? "" : ", ") + std::to_string(numbers[i]);
  if (shown < numbers.size()) out += fmt::format(" and {} more", numbers.size() - shown);
  return out;
}

// The count of alike findings a finding stands for, for tools: ` data-repeated="1714"`.
std::string repeated_attribute(const analysis::Finding& f) {
  return f.repeats ? fmt::format(" data-repeated=\"{}\"", f.repeats->count) : "";
}

// "2026-11-27 23:48:04 UTC"; "at an unknown time" for one not recorded (a wall-clock time, so
// after 1970) or past what a calendar date holds.
std::string utc_time(int64_t ns) {
  time_t seconds = static_cast<time_t>(ns / 1'000'000'000);
  tm parts{};
  char text[64];
  if (ns <= 0 || gmtime_r(&seconds, &parts) == nullptr ||
      strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &parts) == 0) {
    return "at an unknown time";
  }
  return text;
}

// A path relative to the run folder as a link target: every byte outside a safe few escaped.
std::string url_path(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '_' || c == '-') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// Text of a title or a fix, escaped, with what it quotes in backticks set as code.
std::string html_text(std::string_view text) {
  std::string out;
  size_t at = 0;
  for (;;) {
    size_t open = text.find('`', at);
    size_t close = open == std::string_view::npos ? open : text.find('`', open + 1);
    if (close == std::string_view::npos) return out + html_escape(text.substr(at));
    out += html_escape(text.substr(at, open - at)) + "<code>" +
           html_escape(text.substr(open + 1, close - open - 1)) + "</code>";
    at = close + 1;
  }
}

std::string finding_body(const analysis::Finding& f) {
  std::string out;
  std::string who;
  if (!f.ranks.empty()) who = (f.ranks.size() == 1 ? "rank " : "ranks ") + join_numbers(f.ranks);
  if (!f.pids.empty()) {
    who += (who.empty() ? "" : " · ") + std::string(f.pids.size() == 1 ? "pid " : "pids ") +
           join_numbers(f.pids);
  }
  who += fmt::format("{}confidence {:.0f}%", who.empty() ? "" : " · ", f.confidence * 100);
  out += "<p class=\"meta\">" + html_escape(who) + "</p>\n";
  if (!f.evidence.empty()) {
    out += "<ul class=\"evidence\">\n";
    for (const std::string& line : f.evidence) out += "<li>" + html_escape(line) + "</li>\n";
    out += "</ul>\n";
  }
  if (!f.fix.empty()) out += "<p class=\"fix\"><b>Fix:</b> " + html_text(f.fix) + "</p>\n";
  return out;
}

// A finding as an article; `inside` (what it caused) goes at its end.
std::string finding_html(const analysis::Finding& f, std::string_view label, bool root,
                         const std::string& inside) {
  std::string out = fmt::format("<article class=\"finding {}{}\" data-kind=\"{}\"{}>\n",
                                analysis::to_string(f.severity), root ? " root" : "",
                                html_escape(analysis::to_string(f.kind)), repeated_attribute(f));
  out +=
      fmt::format("<h3><span class=\"label\">{}</span>{} <span class=\"kind\">[{}]</span></h3>\n",
                  html_escape(label), html_text(f.title), html_escape(analysis::to_string(f.kind)));
  return out + finding_body(f) + inside + "</article>\n";
}

// As the terminal tells them: each root cause with what it caused (folded, whole), then the
// findings it did not cause.
std::string findings_html(const analysis::Diagnosis& d) {
  std::string out = "<section id=\"findings\">\n<h2>Findings</h2>\n";
  if (d.findings.empty()) out += "<p>traindoc found nothing to report.</p>\n";
  FindingOrder order = order_for_reading(d);
  for (const FindingOrder::Root& root : order.roots) {
    std::string caused;
    for (size_t k : root.consequences) {
      const analysis::Finding& f = d.findings[k];
      caused += fmt::format(
          "<details class=\"consequence\" data-kind=\"{}\"{}><summary>{} "
          "<span class=\"kind\">[{}]</span></summary>\n{}</details>\n",
          html_escape(analysis::to_string(f.kind)), repeated_attribute(f), html_text(f.title),
          html_escape(analysis::to_string(f.kind)), finding_body(f));
    }
    if (!caused.empty()) caused.insert(0, "<p><b>Which caused:</b></p>\n");
    out += finding_html(d.findings[root.index], "root cause", true, caused);
  }
  if (!order.roots.empty() && !order.others.empty()) {
    out += "<h3>Not caused by the root cause</h3>\n";
  }
  for (size_t i : order.others) {
    const analysis::Finding& f = d.findings[i];
    out += finding_html(f, analysis::to_string(f.severity), false, "");
  }
  for (const std::string& note : d.missing_evidence) {
    out += "<p class=\"meta\">Note: " + html_escape(note) + "</p>\n";
  }
  return out + "</section>\n";
}

// A section holding one table. Cells are HTML already; a column's class (`number`, `command`)
// is set on each of its cells.
class TableSection {
 public:
  struct Column {
    std::string_view name;
    std::string_view css_class;
  };

  TableSection(std::string_view id, std::string_view title, std::vector<Column> columns)
      : m_columns(std::move(columns)) {
    m_html = fmt::format("<section id=\"{}\">\n<h2>{}</h2>\n<table>\n<tr>", id, title);
    for (const Column& column : m_columns) m_html += cell("th", column, column.name);
    m_html += "</tr>\n";
  }

  void row(const std::vector<std::string>& cells) {
    m_html += "<tr>";
    for (size_t i = 0; i < cells.size() && i < m_columns.size(); ++i) {
      m_html += cell("td", m_columns[i], cells[i]);
    }
    m_html += "</tr>\n";
  }

  // The section, with `after` (HTML) below its table.
  std::string finish(const std::string& after = "") const {
    return m_html + "</table>\n" + after + "</section>\n";
  }

 private:
  static std::string cell(std::string_view tag, const Column& column, std::string_view content) {
    if (column.css_class.empty()) return fmt::format("<{0}>{1}</{0}>", tag, content);
    return fmt::format("<{0} class=\"{1}\">{2}</{0}>", tag, column.css_class, content);
  }

  std::vector<Column> m_columns;
  std::string m_html;
};

// A job of several nodes: each node with a link to its own report (its charts and logs).
std::string nodes_html(const analysis::Diagnosis& d) {
  if (d.nodes.empty()) return "";
  TableSection table("nodes", "Nodes",
                     {{"node", ""}, {"host", ""}, {"ranks", ""}, {"clock", ""}, {"end", ""}});
  for (size_t i = 0; i < d.nodes.size(); ++i) {
    const analysis::NodeSummary& node = d.nodes[i];
    std::string ranks;
    for (int rank : node.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(rank);
    std::string clock =
        i == 0 ? "the report's"
        : node.clock.calls > 0
            ? fmt::format("{:+.3f} s, within {:.1f} ms ({} calls)",
                          static_cast<double>(node.clock.offset_ns) / 1e9,
                          static_cast<double>(node.clock.residual_ns) / 1e6, node.clock.calls)
            : "not aligned";
    table.row({fmt::format("<a href=\"{0}/report.html\">{1}</a>", url_path(node.name),
                           html_escape(node.name)),
               html_escape(node.hostname), ranks, clock,
               node.ended ? "ended" : "cut short: its traindoc did not see the end"});
  }
  return table.finish();
}

std::string processes_html(const analysis::Diagnosis& d) {
  if (d.processes.empty()) return "";
  std::vector<TableSection::Column> columns = {
      {"pid", "number"},      {"role", ""},           {"command", "command"}, {"end", ""},
      {"peak RSS", "number"}, {"peak PSS", "number"}, {"peak USS", "number"}, {"CPU", "number"},
      {"steps", "number"}};
  if (!d.nodes.empty()) columns.insert(columns.begin(), {"node", ""});
  TableSection table("processes", "Processes", std::move(columns));
  size_t shown = std::min(d.processes.size(), kProcessRows);
  for (size_t i = 0; i < shown; ++i) {
    const analysis::ProcessSummary& p = d.processes[i];
    std::optional<int64_t> steps = p.step_count();
    std::string command = html_escape(p.record.cmdline);
    std::vector<std::string> cells = {std::to_string(p.record.pid),
                                      html_escape(analysis::describe(p.role)),
                                      fmt::format("<code title=\"{0}\">{0}</code>", command),
                                      html_escape(describe_end(p.record)),
                                      peak_text(p.peak_rss),
                                      peak_text(p.peak_pss),
                                      peak_text(p.peak_uss),
                                      fmt::format("{:.1f} s", p.cpu_s),
                                      steps ? std::to_string(*steps) : "-"};
    if (!d.nodes.empty()) cells.insert(cells.begin(), html_escape(p.node));
    table.row(cells);
  }
  std::string more;
  if (shown < d.processes.size()) {
    more = fmt::format(
        "<p class=\"meta\">... and {} more processes (report.json lists them all)"
        "</p>\n",
        d.processes.size() - shown);
  }
  return table.finish(more);
}

std::string gpus_html(const analysis::Diagnosis& d) {
  if (d.gpus.empty()) return "";
  TableSection table("gpus", "GPUs",
                     {{"GPU", ""},
                      {"name", ""},
                      {"PCI bus", ""},
                      {"peak used", "number"},
                      {"capacity", "number"},
                      {"who held it (peak)", ""}});
  for (const analysis::GpuSummary& g : d.gpus) {
    std::string holders;
    for (const auto& h : g.holders) holders += (holders.empty() ? "" : ", ") + describe_holder(h);
    table.row({std::to_string(g.device.index), html_escape(g.device.name),
               html_escape(g.device.pci_bus_id), peak_text(g.peak_used),
               analysis::format_bytes(g.device.memory_total), html_escape(holders)});
  }
  return table.finish();
}

std::string logs_html(const store::Evidence& e) {
  if (e.logs.empty()) return "";
  TableSection table(
      "logs", "Output",
      {{"stream", ""}, {"bytes", "number"}, {"lines", "number"}, {"kept in the run folder", ""}});
  for (const store::LogStream& log : e.logs) {
    std::string files;
    for (const std::string& file : log.files) {
      files += fmt::format("{}<a href=\"{}\">{}</a>", files.empty() ? "" : " ", url_path(file),
                           html_escape(file));
    }
    if (log.bytes_not_kept > 0) {
      files += fmt::format(" ({} not kept)", analysis::format_bytes(log.bytes_not_kept));
    }
    table.row({"<code>" + html_escape(log.name) + "</code>", std::to_string(log.bytes),
               std::to_string(log.lines), files});
  }
  return table.finish();
}

using json = nlohmann::ordered_json;

// JSON text for inside a script block: `<` written as \u003c, so that no text in a label can
// close the block.
std::string script_json(const json& value) {
  std::string text = json_dump(value);
  std::string safe;
  for (char c : text) safe += c == '<' ? std::string("\\u003c") : std::string(1, c);
  return safe;
}

std::string charts_json(const std::vector<Chart>& charts) {
  json out = json::array();
  for (const Chart& chart : charts) {
    json series = json::array();
    for (const ChartSeries& s : chart.series) {
      json values = json::array();
      for (const std::optional<double>& v : s.values) {
        values.push_back(v ? json(*v) : json(nullptr));
      }
      series.push_back({{"label", s.label}, {"limit", s.limit}, {"values", values}});
    }
    out.push_back({{"id", chart.id},
                   {"title", chart.title},
                   {"unit", chart.unit},
                   {"x", chart.x},
                   {"series", series}});
  }
  return script_json(out);
}

std::string markers_json(const ChartMarkers& markers) {
  json out = json::array();
  for (const ChartMarker& m : markers.lines) {
    out.push_back({{"x", m.x},
                   {"kind", m.kind},
                   {"label", m.label},
                   {"title", m.title},
                   {"root_cause", m.root_cause},
                   {"labelled", m.labelled}});
  }
  return script_json(out);
}

std::string charts_html(const std::vector<Chart>& charts, const ChartMarkers& markers) {
  std::string out = "<section id=\"charts\">\n<h2>Over time</h2>\n<p id=\"chart-status\"></p>\n";
  if (charts.empty()) out += "<p>No samples were taken.</p>\n";
  if (!charts.empty() && !markers.lines.empty()) {
    out += fmt::format(
        "<p class=\"meta\" id=\"chart-markers\">Red lines mark when each error finding happened: "
        "solid for the root cause, dashed for the others; hover a line for its finding.{}</p>\n",
        markers.not_marked == 0
            ? ""
            : fmt::format(" {} not marked (no known time, or past the first {}).",
                          analysis::counted(static_cast<int>(markers.not_marked),
                                            "error finding is", "error findings are"),
                          kMarkerLines));
  }
  for (const Chart& chart : charts) {
    out += fmt::format("<div class=\"chart\"><h3>{}</h3><div id=\"chart-{}\"></div></div>\n",
                       html_escape(chart.title), html_escape(chart.id));
  }
  return out + "</section>\n";
}

std::string command_text(const store::RunInfo& run) {
  std::string out;
  for (const std::string& word : run.command) out += (out.empty() ? "" : " ") + word;
  return out;
}

std::string header_html(const analysis::Diagnosis& d) {
  bool failed = shell_status(d.run) != 0 || !d.run.exec_error.empty();
  std::string out = "<header>\n<h1>traindoc report</h1>\n";
  out += fmt::format("<p class=\"verdict{}\">{}</p>\n", failed ? " failed" : "",
                     html_escape(describe_run_end(d.run)));
  out += "<p class=\"meta\"><code>" + html_escape(command_text(d.run)) + "</code></p>\n";
  std::string where =
      d.nodes.empty() ? html_escape(d.run.hostname) : std::to_string(d.nodes.size()) + " nodes";
  out += fmt::format("<p class=\"meta\">on {}, started {} · traindoc {}</p>\n", where,
                     utc_time(d.run.start_ns), html_escape(d.run.version));
  return out + "</header>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string valid = valid_utf8(text);
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string render_html(const analysis::Diagnosis& d, const store::Evidence& e) {
  std::vector<Chart> charts = build_charts(d, e);
  ChartMarkers markers = chart_markers(d, e);
  std::string out =
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>traindoc: " + html_escape(command_text(d.run)) + "</title>\n<style>";
  out += chart_library_css();
  out += kStyle;
  out += "</style>\n</head>\n<body>\n";
  out += header_html(d) + findings_html(d) + nodes_html(d) + charts_html(charts, markers) +
         collective_timeline_html(d, e) + processes_html(d) + gpus_html(d) + logs_html(e);
  out += "<script type=\"application/json\" id=\"traindoc-charts\">" + charts_json(charts) +
         "</script>\n<script type=\"application/json\" id=\"traindoc-markers\">" +
         markers_json(markers) + "</script>\n<script>";
  out += chart_library_js();
  out += "</script>\n<script>";
  out += kScript;
  out += "</script>\n</body>\n</html>\n";
  return out;
}

void write_html_report(const analysis::Diagnosis& diagnosis, const store::Evidence& evidence,
                       const std::string& run_dir) {
  write_report_file(run_dir, "report.html", render_html(diagnosis, evidence));
}

}  // namespace traindoc::report
