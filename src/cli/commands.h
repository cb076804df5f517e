// The subcommands' entry points. Supervisor process, main thread; each returns the exit status.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
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
  bool no_error_file = false;          // leave torchrun's TORCHELASTIC_ERROR_FILE to the job
  bool memory_history = false;         // --memory-history
  OutputFlags flags;
  int64_t trial_steps = 0;  // traindoc fit: end the job after this many optimizer steps
  double trial_flat_s = 0;  // ... or once the memory of a job that counts none stayed flat
};

int run_command(const RunArgs& args);

// Claims a folder for a run or a fit: `requested`, else ./traindoc-runs/<prefix><time>-<id>;
// made here, or an empty one of the user's that no other user may write (where they could plant
// links or forge the agent's files), then made private. A run is never overwritten.
std::filesystem::path claim_folder(const std::string& requested, const char* prefix);

struct FitArgs {
  std::string param;  // NAME: {NAME} in the command is each trial's batch size
  std::string env;    // --env NAME: the batch size in this variable too
  int min_batch = 1;
  std::optional<int> max_batch;
  std::optional<int> target_batch;
  double headroom_pct = 10;
  std::string memory_budget;  // "1200MiB"; "": none
  int steps = 3;              // optimizer steps past the first
  double flat_s = 10;         // a job that counts no steps: how long its memory stays flat
  bool json = false;
  std::string out;
  std::vector<std::string> command;
};

int fit_command(const FitArgs& args);

// `traindoc check`: its status when something will fail.
inline constexpr int kCheckWillFail = 1;

struct CheckArgs {
  bool json = false;
  std::vector<std::string> command;  // may be empty: the machine alone
};

int check_command(const CheckArgs& args);

struct AnalyzeArgs {
  // "": the latest run folder in ./traindoc-runs; one folder: a run folder, or a job's folder of
  // node folders; several: the node folders of one job.
  std::vector<std::string> run_dirs;
  OutputFlags flags;
};

// The run folders of a job: RUN itself when it holds a run.db, else each folder in it that
// holds one (a job of several nodes, docs/multi-node.md), in name order. Throws where there are
// none.
std::vector<std::filesystem::path> node_folders(const std::filesystem::path& run_dir);

int analyze_command(const AnalyzeArgs& args);

struct ExportArgs {
  std::string run_dir;
  std::string perfetto;  // the trace file; "-": the standard output
};

// Throws, with a message naming the folder or the file, when the run folder cannot be read or
// the trace not written; nothing is left as the trace's file then.
int export_command(const ExportArgs& args);

// Reads run.db, diagnoses, writes report.json, and prints what `output` asks for to `out`.
// Returns the job's status as a shell would give it.
int report_run(const std::string& run_dir, Output output, FILE* out);

}  // namespace traindoc::cli
