// Writes report.json (schema traindoc.report/1, DESIGN.md contract 4) from a diagnosis.
// Any process; no analysis logic here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "analysis/diagnosis.h"

namespace traindoc::report {

inline constexpr const char* kReportSchema = "traindoc.report/1";

nlohmann::ordered_json to_json(const analysis::Diagnosis& diagnosis);
// One finding as report.json's `findings` hold it.
nlohmann::ordered_json finding_json(const analysis::Finding& finding);

// JSON text of `value` (indented by `indent` spaces, on one line when -1) that any strings can be
// written to: bytes that are not UTF-8 become U+FFFD rather than an error, and DEL and the C1
// controls, which JSON leaves as they are, are written \u escaped so that printing the text to a
// terminal is safe. Every JSON the report writes goes through here.
std::string json_dump(const nlohmann::ordered_json& value, int indent = -1);

// report.json's text: the diagnosis's JSON, indented, with a final newline.
std::string json_text(const analysis::Diagnosis& diagnosis);

// Writes <run>/report.json through a temporary file, so a reader never sees half a report.
void write_json_report(const analysis::Diagnosis& diagnosis, const std::string& run_dir);

// The exit status a shell would give for the job: its code, or 128 + the signal (255 for a number
// no signal has).
int shell_status(const store::RunInfo& run);

using analysis::signal_name;

}  // namespace traindoc::report
