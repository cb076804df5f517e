// Writes report.html: the report as one page that opens anywhere, offline (its chart library,
// styles and data are inside it): how the job ended, the findings with all their evidence, charts
// of memory and training steps over time, the processes, the GPUs and the logs. Any process; no
// analysis logic here.
#pragma once

#include <string>

#include "analysis/diagnosis.h"

namespace traindoc::report {

std::string render_html(const analysis::Diagnosis& diagnosis, const store::Evidence& evidence);

// Writes <run>/report.html through a temporary file, as report.json.
void write_html_report(const analysis::Diagnosis& diagnosis, const store::Evidence& evidence,
                       const std::string& run_dir);

// Text made safe to place in HTML, as element content or in a quoted attribute.
std::string html_escape(std::string_view text);

}  // namespace traindoc::report
