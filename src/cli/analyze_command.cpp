// `traindoc analyze RUN`: rebuilds report.json, report.html and the summary from run.db alone;
// of a job's node folders, each node's report and one for the job (docs/multi-node.md).
// Supervisor process, main thread. Also the last step of `traindoc run`.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "analysis/diagnosis.h"
#include "analysis/job_diagnosis.h"
#include "cli/commands.h"
#include "report/html_report.h"
#include "report/json_report.h"
#include "report/terminal.h"
#include "store/store_reader.h"

namespace traindoc::cli {

namespace {

// Writes report.json and report.html of `diagnosis` into `dir` and prints what `output` asks.
void write_reports(analysis::Diagnosis& diagnosis, const store::Evidence& evidence,
                   const std::string& run_dir, Output output, FILE* out) {
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
}

namespace fs = std::filesystem;

// The folder that holds every one of `folders`.
fs::path common_parent(const std::vector<fs::path>& folders) {
  fs::path parent = fs::absolute(folders.front()).lexically_normal().parent_path();
  for (const fs::path& folder : folders) {
    fs::path mine = fs::absolute(folder).lexically_normal().parent_path();
    while (std::mismatch(parent.begin(), parent.end(), mine.begin(), mine.end()).first !=
           parent.end()) {
      parent = parent.parent_path();
    }
  }
  return parent;
}

// Each node's own report, then the job's, in `job_dir`.
void report_job(const std::vector<fs::path>& folders, const fs::path& job_dir, Output output,
                FILE* out) {
  std::vector<store::Evidence> evidence;
  evidence.reserve(folders.size());
  std::vector<analysis::NodeEvidence> nodes;
  for (const fs::path& folder : folders) {
    report_run(folder.string(), Output::kNothing, out);
    evidence.push_back(store::read_evidence((folder / "run.db").string()));
    std::string name = fs::absolute(folder).lexically_normal().filename().string();
    evidence.back().run.node = name;
    nodes.push_back({name, &evidence.back()});
  }
  analysis::Diagnosis job = analysis::diagnose_job(nodes);
  write_reports(job, store::Evidence{}, job_dir.string(), output, out);
}

}  // namespace

int report_run(const std::string& run_dir, Output output, FILE* out) {
  store::Evidence evidence = store::read_evidence(run_dir + "/run.db");
  analysis::Diagnosis diagnosis = analysis::diagnose(evidence);
  write_reports(diagnosis, evidence, run_dir, output, out);
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

std::vector<fs::path> node_folders(const fs::path& run_dir) {
  if (!fs::is_directory(run_dir)) {
    throw std::runtime_error(run_dir.string() + " is not a run folder");
  }
  if (fs::exists(run_dir / "run.db")) return {run_dir};
  std::vector<fs::path> nodes;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(run_dir, error)) {
    if (fs::exists(entry.path() / "run.db", error)) nodes.push_back(entry.path());
  }
  if (nodes.empty()) {
    throw std::runtime_error(
        run_dir.string() +
        " holds no run.db, nor node folders with one: not a traindoc run folder");
  }
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

int analyze_command(const AnalyzeArgs& args) {
  Output output = args.flags.output();
  if (args.run_dirs.size() > 1) {
    std::vector<fs::path> folders;
    for (const std::string& dir : args.run_dirs) {
      if (!fs::exists(fs::path(dir) / "run.db")) {
        throw std::runtime_error(dir + " holds no run.db: not a node folder of a traindoc run");
      }
      folders.emplace_back(dir);
    }
    report_job(folders, common_parent(folders), output, stdout);
    return 0;
  }
  fs::path run_dir = args.run_dirs.empty() ? fs::path(latest_run()) : fs::path(args.run_dirs[0]);
  std::vector<fs::path> folders = node_folders(run_dir);
  if (folders.size() == 1 && folders.front() == run_dir) {
    report_run(run_dir.string(), output, stdout);
  } else {
    report_job(folders, run_dir, output, stdout);
  }
  return 0;
}

}  // namespace traindoc::cli
