// Writes one file of the run folder (report.json, report.html) whole or not at all, and never
// through a name someone else prepared there. Any process.
#pragma once

#include <string>
#include <string_view>

namespace traindoc::report {

// Writes `text` to `run_dir`/`name`: into a new temporary file beside it (a name no one can
// foresee, created only where nothing is, never through a link, readable by its owner only), then
// renamed over `name`, so that a reader sees the old file or the new one, whole. On any failure
// (disk full, a short write, a folder gone or read-only) the temporary is removed and a
// std::runtime_error says which file and why.
void write_report_file(const std::string& run_dir, std::string_view name, std::string_view text);

}  // namespace traindoc::report
