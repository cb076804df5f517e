// The moments report.html's time charts mark: each error finding's, a vertical line at its time,
// the root cause set apart, so that the growth before an OOM or the stall before a hang is seen
// against it. A few lines carry a label; every line names its finding when hovered. Any process;
// pure.
#pragma once

#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::report {

struct ChartMarker {
  double x = 0;       // seconds since the run started, on the charts' x axis
  std::string kind;   // the finding's kind
  std::string label;  // short, drawn beside the line: "root cause: host-oom-killed"
  std::string title;  // the finding's title and moment, shown when the line is hovered
  bool root_cause = false;
  bool labelled = false;  // offered a label; the page draws it where it overlaps none before it
};

struct ChartMarkers {
  std::vector<ChartMarker> lines;  // the root cause first, then the others in time order
  size_t not_marked = 0;           // error findings left out: no known time, or past kMarkerLines
};

inline constexpr size_t kMarkerLines = 40;  // lines on a chart, at most
inline constexpr size_t kMarkerLabels = 4;  // of them labelled, at most

ChartMarkers chart_markers(const analysis::Diagnosis& diagnosis, const store::Evidence& evidence);

}  // namespace traindoc::report
