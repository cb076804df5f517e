// The short summary printed at the end of a run: how the job ended, the findings (root cause,
// its consequences, the others), each process's role and end, peak memory per role. Any
// process; written to the stream it is given (stderr in `run`).
#pragma once

#include <cstdio>
#include <string>

#include "analysis/diagnosis.h"

namespace traindoc::report {

struct TerminalOptions {
  size_t max_rows = 24;  // processes listed before the rest are counted
  bool colour = false;   // ANSI colours: only on a terminal, never with NO_COLOR
};

// The job's own words in it (messages, commands, errors) are made safe to print first
// (terminal_safe): an escape sequence in them is shown, not obeyed by the terminal.
std::string render_summary(const analysis::Diagnosis& diagnosis, const std::string& run_dir,
                           TerminalOptions options = {});

// One line for quiet mode: how the job ended, the root cause (else the first warning) and how
// many other findings there are. Made safe to print as the summary.
std::string render_verdict(const analysis::Diagnosis& diagnosis, const std::string& run_dir);

// Whether to colour what is written to `fd`: a terminal, and NO_COLOR unset or empty.
bool wants_colour(int fd);

// "the job exited with code 1 after 3.2 s", "the job could not start: ..."; without the duration
// where the run's times tell none (run_duration_ns). The text is the job's, unescaped.
std::string describe_run_end(const store::RunInfo& run);

// "3.2 GiB", or "-" where nothing was measured.
std::string peak_text(const std::optional<uint64_t>& bytes);

// Who held memory on a GPU, with their peak: "rank 1 3.0 GiB", "pid 4242 outside the job 20 GiB".
std::string describe_holder(const analysis::GpuSummary::Holder& holder);

// "exited with code 1", "killed by SIGSEGV (core dumped)", "vanished", "still running"
std::string describe_end(const store::ProcessRecord& process);

}  // namespace traindoc::report
