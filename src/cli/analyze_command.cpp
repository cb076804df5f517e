// `traindoc analyze RUN`: rebuilds report.json and the summary from run.db alone.
// Supervisor process, main thread. Also the last step of `traindoc run`.
#include <filesystem>
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "cli/commands.h"
#include "report/json_report.h"
#include "report/terminal.h"
#include "store/store_reader.h"

namespace traindoc::cli {

int report_run(const std::string& run_dir, Output output, FILE* out) {
  store::Evidence evidence = store::read_evidence(run_dir + "/run.db");
  analysis::Diagnosis diagnosis = analysis::diagnose(evidence);
  report::write_json_report(diagnosis, run_dir);
  std::string text;
  switch (output) {
    case Output::kSummary: {
      report::TerminalOptions options;
      options.colour = report::wants_colour(fileno(out));
      text = report::render_summary(diagnosis, run_dir, options);
      break;
    }
    case Output::kJson:
      text = report::to_json(diagnosis).dump(2) + "\n";
      break;
    case Output::kVerdict:
      text = report::render_verdict(diagnosis, run_dir);
      break;
    case Output::kNothing:
      break;
  }
  fputs(text.c_str(), out);
  return report::shell_status(diagnosis.run);
}

int analyze_command(const AnalyzeArgs& args) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(args.run_dir)) {
    throw std::runtime_error(args.run_dir + " is not a run folder");
  }
  if (!fs::exists(fs::path(args.run_dir) / "run.db")) {
    throw std::runtime_error(args.run_dir + " holds no run.db: not a traindoc run folder");
  }
  report_run(args.run_dir, args.flags.output(), stdout);
  return 0;
}

}  // namespace traindoc::cli
