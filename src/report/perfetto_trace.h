// The run as a trace in the Chrome trace-event JSON format, which ui.perfetto.dev and
// chrome://tracing open: a process track per job process (named by role) grouped by node, its
// collective calls as slices, training steps, crashes, signals and its end as instants, memory as
// counters, and every finding as an instant. Any process; pure: evidence and findings in, text out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/diagnosis.h"

namespace traindoc::report {

// At most this many events per track (a process's collective calls, its steps, its events, each
// counter); beyond it, those within kTraceFindingWindowNs of a finding are kept first, then the
// latest. Findings and the tracks' names are never left out.
inline constexpr size_t kTraceEventsPerTrack = 10'000;
inline constexpr int64_t kTraceFindingWindowNs = 30'000'000'000;

// One node's run folder: its name (the folder's, or the host's) and what was read and found there.
struct TraceNode {
  std::string name;
  const store::Evidence* evidence = nullptr;
  const analysis::Diagnosis* diagnosis = nullptr;
};

struct TraceOptions {
  size_t events_per_track = kTraceEventsPerTrack;
};

// The trace's JSON text ({"traceEvents": [...], ...}), one event per line. Times are
// microseconds since the earliest start of the nodes' runs, on the one clock all of them share.
std::string perfetto_trace(const std::vector<TraceNode>& nodes, const TraceOptions& options = {});

}  // namespace traindoc::report
