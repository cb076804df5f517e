// The collectives section of report.html: each rank's recorded collective and point-to-point calls
// in the last minute of the run, as bars on one time axis (inline SVG, drawn without script), so
// that a wait that never returned, a rank that stopped calling, or one that every other rank
// waits for shows at a glance. Any process; pure.
#pragma once

#include <string>

#include "analysis/diagnosis.h"

namespace traindoc::report {

inline constexpr int64_t kTimelineWindowNs = 60'000'000'000;

// The section's HTML; "" when no call was recorded.
std::string collective_timeline_html(const analysis::Diagnosis& diagnosis,
                                     const store::Evidence& evidence);

}  // namespace traindoc::report
