#include "report/collective_timeline.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "report/chart_series.h"
#include "report/elapsed.h"
#include "report/html_report.h"
#include "store/collective_words.h"

namespace traindoc::report {
namespace {

// The drawing, in SVG units; the page scales it to its width.
constexpr double kWidth = 1100;
constexpr double kLabelWidth = 200;
constexpr double kRightMargin = 16;
constexpr double kRowHeight = 24;
constexpr double kBarHeight = 14;
constexpr double kAxisHeight = 30;
constexpr double kMinBarWidth = 1.5;  // a call of a microsecond stays visible
// Calls drawn in one row, the latest: more would not be told apart at this width, and would make
// the page heavy (run.db may keep 200,000 calls).
constexpr size_t kRowCalls = 1000;
// The narrowest window drawn, and the most ticks on its axis.
constexpr int64_t kMinWindowNs = 1'000'000;
constexpr int kMaxTicks = 20;

struct Row {
  const analysis::ProcessSummary* process = nullptr;
  std::vector<const store::CollectiveCall*> calls;  // in the window
  const store::CollectiveCall* last = nullptr;      // the latest recorded, in the window or not
  bool capped = false;                              // more calls in the window than drawn
};

// Calls are timed by the kernel's tick (1 to 4 ms, common/clock.h): nothing finer is claimed.
std::string duration_text(int64_t ns) {
  if (ns >= 1'000'000'000) return "took " + analysis::format_seconds(ns);
  if (ns >= 1'000'000) return fmt::format("took {} ms", (ns + 500'000) / 1'000'000);
  return "returned within a tick of the clock (1 to 4 ms)";
}

// A call that returns once it is queued: its return says nothing of when the others came.
bool returns_queued(const store::CollectiveCall& c) {
  return c.async || c.source == "nccl";
}

// A blocking call with no return recorded: it was still waiting when its process or the run ended.
bool never_returned(const store::CollectiveCall& c) {
  return c.end_ns == 0 && !returns_queued(c);
}

// How long a call that returned took: never negative, whatever times its record holds.
int64_t took_ns(const store::CollectiveCall& c) {
  return std::max<int64_t>(0, elapsed_ns(c.t_ns, c.end_ns));
}

std::string call_text(const store::CollectiveCall& c, int64_t run_start_ns) {
  std::string out = fmt::format("{} #{}", c.op, c.number);
  if (!c.site.empty()) out += " at " + c.site;
  out += fmt::format(
      " ({} of {} ranks",
      c.group_rank >= 0 ? "rank " + std::to_string(c.group_rank) : std::string("a rank"),
      c.group_size);
  if (!c.tensors.empty()) out += "; " + c.tensors;
  out += fmt::format("), at {:.3f} s: ", elapsed_s(run_start_ns, c.t_ns));
  if (returns_queued(c)) return out + "returns once queued";
  if (never_returned(c)) return out + "did not return";
  if (c.raised) {
    return out + "raised after " + analysis::format_seconds(took_ns(c)) +
           ": it gave up waiting (a timeout, or a rank that left)";
  }
  return out + duration_text(took_ns(c));
}

// Tick spacing of 1, 2 or 5 times a power of ten, for about eight ticks across `span_s`.
double tick_step(double span_s) {
  double raw = span_s / 8;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::vector<Row> rows_of(const analysis::Diagnosis& d, const store::Evidence& e, int64_t from_ns,
                         int64_t to_ns) {
  std::map<std::pair<int, uint64_t>, Row> by_process;
  for (const store::CollectiveCall& c : e.collectives) {
    Row& row = by_process[{c.pid, c.start_ticks}];
    if (row.last == nullptr || c.t_ns >= row.last->t_ns) row.last = &c;
    if (c.t_ns <= to_ns && (never_returned(c) || std::max(c.t_ns, c.end_ns) >= from_ns)) {
      row.calls.push_back(&c);
    }
  }
  std::vector<Row> rows;
  for (const analysis::ProcessSummary& p : d.processes) {
    auto it = by_process.find({p.record.pid, p.record.start_ticks});
    if (it == by_process.end()) continue;
    Row& row = it->second;
    row.process = &p;
    if (row.calls.size() > kRowCalls) {
      std::stable_sort(row.calls.begin(), row.calls.end(),
                       [](const auto* a, const auto* b) { return a->t_ns < b->t_ns; });
      row.calls.erase(row.calls.begin(), row.calls.end() - kRowCalls);
      row.capped = true;
    }
    rows.push_back(std::move(row));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.process->role.rank.value_or(INT_MAX) < b.process->role.rank.value_or(INT_MAX);
  });
  return rows;
}

// The window drawn and where a time falls in it. The window ends with the run, or with the last
// record of a run whose end is unknown (a call open then was still waiting); it is saturated at
// int64's limits (elapsed.h), whatever times run.db holds: it is then 1 ms to a minute wide, and
// its width fits in an int64.
struct Plot {
  int64_t first_ns = INT64_MAX;  // the first call recorded
  int64_t from_ns = 0;
  int64_t to_ns = 0;
  double span = 0;     // to_ns - from_ns
  double width = 0;    // of the plot, right of the labels
  double start_s = 0;  // from_ns, in seconds since the run's start
  double end_s = 0;    // to_ns, likewise
  double height = 0;   // of the whole drawing

  double x(int64_t t) const {
    return kLabelWidth +
           width * static_cast<double>(std::clamp(t, from_ns, to_ns) - from_ns) / span;
  }
};

Plot plot_window(const analysis::Diagnosis& d, const store::Evidence& e) {
  Plot p;
  p.to_ns = d.run.end_ns != 0 ? d.run.end_ns : last_sample_ns(e);
  for (const store::CollectiveCall& c : e.collectives) {
    p.first_ns = std::min(p.first_ns, c.t_ns);
    if (d.run.end_ns == 0) p.to_ns = std::max({p.to_ns, c.t_ns, c.end_ns});
  }
  p.from_ns = std::max(p.first_ns, shifted_ns(p.to_ns, -kTimelineWindowNs));
  p.from_ns = std::min(p.from_ns, INT64_MAX - kMinWindowNs);
  p.to_ns = std::max(p.to_ns, p.from_ns + kMinWindowNs);
  p.width = kWidth - kLabelWidth - kRightMargin;
  p.span = static_cast<double>(p.to_ns - p.from_ns);
  p.start_s = elapsed_s(d.run.start_ns, p.from_ns);
  p.end_s = p.start_s + p.span / 1e9;
  return p;
}

// Ticks at whole steps of seconds since the start, placed by their distance from the window's
// start; at most kMaxTicks, so that the loop ends whatever a clock set far off makes of the
// seconds' doubles.
std::string ticks(const Plot& p) {
  std::string out;
  double step = tick_step(p.span / 1e9);
  double first_tick = std::ceil(p.start_s / step) * step;
  for (int i = 0; i < kMaxTicks; ++i) {
    double s = first_tick + step * i;
    if (s > p.end_s + 1e-9) break;
    double x = kLabelWidth + p.width * std::clamp((s - p.start_s) * 1e9 / p.span, 0.0, 1.0);
    out += fmt::format(
        "<line class=\"grid\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\"/>"
        "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\">{4:g} s</text>\n",
        x, kAxisHeight - 6, p.height, kAxisHeight - 12, s);
  }
  return out;
}

// One rank's row: its name, with its last call, and a bar for each call.
std::string row_svg(const Row& row, double top, const Plot& p, int64_t run_start_ns) {
  std::string last = row.last ? call_text(*row.last, run_start_ns) : "none";
  std::string out = fmt::format(
      "<g class=\"rank\" data-pid=\"{}\"><text class=\"who\" x=\"0\" y=\"{:.1f}\">{}"
      "<title>last call: {}</title></text>\n",
      row.process->record.pid, top + kRowHeight / 2 + 4,
      html_escape(analysis::process_name(*row.process)), html_escape(last));
  for (const store::CollectiveCall* c : row.calls) {
    bool queued = returns_queued(*c);
    bool open = never_returned(*c);
    double x = p.x(c->t_ns);
    double width =
        queued ? kMinBarWidth : std::max(kMinBarWidth, p.x(open ? p.to_ns : c->end_ns) - x);
    out += fmt::format(
        "<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\">"
        "<title>{}</title></rect>\n",
        queued      ? "queued"
        : open      ? "open"
        : c->raised ? "raised"
                    : "call",
        x, top + (kRowHeight - kBarHeight) / 2, width, kBarHeight,
        html_escape(call_text(*c, run_start_ns)));
  }
  return out + "</g>\n";
}

}  // namespace

std::string collective_timeline_html(const analysis::Diagnosis& d, const store::Evidence& e) {
  if (e.collectives.empty()) return "";
  Plot p = plot_window(d, e);
  std::vector<Row> rows = rows_of(d, e, p.from_ns, p.to_ns);
  if (rows.empty()) return "";
  p.height = kAxisHeight + kRowHeight * static_cast<double>(rows.size());

  std::string out = "<section id=\"collectives\">\n<h2>Collectives</h2>\n";
  out += fmt::format(
      "<p>Each rank's collective and point-to-point calls from {:.1f} s to {:.1f} s after the "
      "start{}: a bar from the call to its return, <span class=\"open-key\">red</span> where it "
      "did not return or raised, grey where it returns once queued (<code>async_op</code>, NCCL); "
      "a dashed line where traindoc found an issue. Hover for each call's details. run.db keeps "
      "the first 200 calls of each rank and group, the last 64 and those around each finding; "
      "the others are not drawn{}.</p>\n",
      p.start_s, p.end_s, p.from_ns > p.first_ns ? " (the last minute)" : "",
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.capped; })
          ? fmt::format(", nor more than the latest {} of a rank", kRowCalls)
          : "");
  out += fmt::format(
      "<svg class=\"timeline\" viewBox=\"0 0 {} {}\" role=\"img\" "
      "aria-label=\"Collective calls of each rank over time\">\n",
      kWidth, p.height);
  out += ticks(p);
  for (size_t i = 0; i < rows.size(); ++i) {
    out += row_svg(rows[i], kAxisHeight + kRowHeight * static_cast<double>(i), p, d.run.start_ns);
  }
  for (const store::CollectiveIssue& issue : e.collective_issues) {
    if (issue.t_ns < p.from_ns || issue.t_ns > p.to_ns) continue;
    out += fmt::format(
        "<line class=\"issue\" x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\">"
        "<title>{3}</title></line>\n",
        p.x(issue.t_ns), kAxisHeight - 6, p.height, html_escape(store::issue_line(issue)));
  }
  return out + "</svg>\n</section>\n";
}

}  // namespace traindoc::report
