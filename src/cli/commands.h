// The subcommands' entry points. Supervisor process, main thread; each returns the exit status.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace traindoc::cli {

// Exit statuses of traindoc's own failures; a job's status passes through unchanged.
inline constexpr int kUsageError = 2;
inline constexpr int kOwnFailure = 125;  // as env(1) and timeout(1): the wrapper itself failed

// Where `traindoc run` puts a run folder when --out is not given, and where `traindoc analyze`
// looks for the latest one.
inline constexpr const char* kRunsFolder = "traindoc-runs";

// What traindoc prints of its own when a run ends.
enum class Output { kSummary, kJson, kVerdict, kNothing };

struct OutputFlags {
  bool json = false;
  bool quiet = false;
  bool silent = false;

  Output output() const {
    return silent  ? Output::kNothing
           : json  ? Output::kJson
           : quiet ? Output::kVerdict
                   : Output::kSummary;
  }
};

struct RunArgs {
  std::vector<std::string> command;
  std::string out;
  double interval_s = 1.0;
  double stall_s = 30.0;
  std::string on_mismatch = "report";  // or "abort"
  OutputFlags flags;
};

int run_command(const RunArgs& args);

struct AnalyzeArgs {
  std::string run_dir;  // "": the latest run folder in ./traindoc-runs
  OutputFlags flags;
};

int analyze_command(const AnalyzeArgs& args);

// Reads run.db, diagnoses, writes report.json, and prints what `output` asks for to `out`.
// Returns the job's status as a shell would give it.
int report_run(const std::string& run_dir, Output output, FILE* out);

}  // namespace traindoc::cli
