// `traindoc analyze RUN`: rebuilds report.json, report.html and the summary from run.db alone.
// Supervisor process, main thread. Also the last step of `traindoc run`.
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "cli/commands.h"
#include "report/html_report.h"
#include "report/json_report.h"
#include "report/terminal.h"
#include "store/store_reader.h"

namespace traindoc::cli {

int report_run(const std::string& run_dir, Output output, FILE* out) {
  store::Evidence evidence = store::read_evidence(run_dir + "/run.db");
  analysis::Diagnosis diagnosis = analysis::diagnose(evidence);
  // A report file that cannot be written (a full disk) is named in the next one and in the
  // summary, which is still printed.
  auto write = [&](const char* name, const std::function<void()>& writer) {
    try {
      writer();
    } catch (const std::exception& error) {
      diagnosis.missing_evidence.push_back(std::string(name) + " was not written: " + error.what());
    }
  };
  write("report.json", [&] { report::write_json_report(diagnosis, run_dir); });
  write("report.html", [&] { report::write_html_report(diagnosis, evidence, run_dir); });
  std::string text;
  switch (output) {
    case Output::kSummary: {
      report::TerminalOptions options;
      options.colour = report::wants_colour(fileno(out));
      text = report::render_summary(diagnosis, run_dir, options);
      break;
    }
    case Output::kJson:
      text = report::json_text(diagnosis);
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

namespace {

namespace fs = std::filesystem;

// The newest run folder `traindoc run` made here without --out: their names begin with the
// time they started, so the greatest name is the latest.
std::string latest_run() {
  std::string latest;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(kRunsFolder, error)) {
    std::string name = entry.path().filename().string();
    if (fs::exists(entry.path() / "run.db", error) && name > latest) latest = name;
  }
  if (latest.empty()) {
    throw std::runtime_error(std::string("no run folder given, and ./") + kRunsFolder +
                             " holds none: name one (traindoc analyze RUN_FOLDER)");
  }
  return std::string(kRunsFolder) + "/" + latest;
}

}  // namespace

int analyze_command(const AnalyzeArgs& args) {
  std::string run_dir = args.run_dir.empty() ? latest_run() : args.run_dir;
  if (!fs::is_directory(run_dir)) {
    throw std::runtime_error(run_dir + " is not a run folder");
  }
  if (!fs::exists(fs::path(run_dir) / "run.db")) {
    throw std::runtime_error(run_dir + " holds no run.db: not a traindoc run folder");
  }
  report_run(run_dir, args.flags.output(), stdout);
  return 0;
}

}  // namespace traindoc::cli
