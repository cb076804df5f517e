// Writes report.json (schema traindoc.report/1, DESIGN.md contract 4) from a diagnosis.
// Any process; no analysis logic here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/diagnosis.h"

namespace traindoc::report {

inline constexpr const char* kReportSchema = "traindoc.report/1";

nlohmann::ordered_json to_json(const analysis::Diagnosis& diagnosis);

// Writes <run>/report.json through a temporary file, so a reader never sees half a report.
void write_json_report(const analysis::Diagnosis& diagnosis, const std::string& run_dir);

// Writes `text` to `path` through a temporary file beside it, so a reader never sees half of it.
void write_report_file(const std::string& path, const std::string& text);

// The exit status a shell would give for the job: its code, or 128 + the signal.
int shell_status(const store::RunInfo& run);

using analysis::signal_name;

}  // namespace traindoc::report
