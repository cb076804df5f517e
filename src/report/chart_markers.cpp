// Markers of the error findings on report.html's charts. Any process; pure.
// A marker's x is on the charts' clock (seconds since the run started), held within the span the
// charts draw, so that a damaged time lands at an edge instead of squeezing every line to one.
#include "report/chart_markers.h"

#include <fmt/format.h>

#include <algorithm>

#include "report/chart_series.h"
#include "report/elapsed.h"

namespace traindoc::report {

ChartMarkers chart_markers(const analysis::Diagnosis& d, const store::Evidence& e) {
  ChartMarkers out;
  std::vector<const analysis::Finding*> timed;
  for (const analysis::Finding& f : d.findings) {
    if (f.severity != analysis::Severity::kError) continue;
    if (f.t_ns == 0) {
      ++out.not_marked;
      continue;
    }
    timed.push_back(&f);
  }
  // The root cause first: kept and labelled before any other.
  std::stable_sort(timed.begin(), timed.end(),
                   [](const analysis::Finding* a, const analysis::Finding* b) {
                     if (a->root_cause != b->root_cause) return a->root_cause;
                     return a->t_ns < b->t_ns;
                   });
  if (timed.size() > kMarkerLines) {
    out.not_marked += timed.size() - kMarkerLines;
    timed.resize(kMarkerLines);
  }
  int64_t start = e.run.start_ns;
  double end = std::max(0.0, elapsed_s(start, last_sample_ns(e)));
  for (const analysis::Finding* f : timed) {
    std::string kind(analysis::to_string(f->kind));
    double x = std::clamp(elapsed_s(start, f->t_ns), 0.0, end);
    out.lines.push_back({x, kind, f->root_cause ? "root cause: " + kind : kind,
                         fmt::format("{} (+{:.1f} s)", f->title, x), f->root_cause,
                         out.lines.size() < kMarkerLabels});
  }
  return out;
}

}  // namespace traindoc::report
