// The subcommands' entry points. Supervisor process, main thread; each returns the exit status.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace traindoc::cli {

// Exit statuses of traindoc's own failures; a job's status passes through unchanged.
inline constexpr int kUsageError = 2;
inline constexpr int kOwnFailure = 125;  // as env(1) and timeout(1): the wrapper itself failed

struct RunArgs {
  std::vector<std::string> command;
  std::string out;
  double interval_s = 1.0;
  bool quiet = false;
};

int run_command(const RunArgs& args);

struct AnalyzeArgs {
  std::string run_dir;
  bool json = false;
  bool quiet = false;
};

int analyze_command(const AnalyzeArgs& args);

// Reads run.db, diagnoses, writes report.json, and prints the summary (or the JSON) to `out`
// unless it is null. Returns the job's status as a shell would give it.
int report_run(const std::string& run_dir, bool json, FILE* out);

}  // namespace traindoc::cli
