// The short summary printed at the end of a run: how the job ended, each process's role and
// end, peak memory per role. Any process; written to the stream it is given (stderr in `run`).
#pragma once

#include <cstdio>
#include <string>

#include "analysis/diagnosis.h"

namespace traindoc::report {

struct TerminalOptions {
  size_t max_rows = 24;  // processes listed before the rest are counted
};

std::string render_summary(const analysis::Diagnosis& diagnosis, const std::string& run_dir,
                           TerminalOptions options = {});

// "exited with code 1", "killed by SIGSEGV (core dumped)", "vanished", "still running"
std::string describe_end(const store::ProcessRecord& process);

}  // namespace traindoc::report
