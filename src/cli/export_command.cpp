// `traindoc export RUN --perfetto FILE`: the run folder as a trace that ui.perfetto.dev and
// chrome://tracing open (report/perfetto_trace.h). Supervisor process (the CLI), main thread;
// errors are thrown and told by main.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "analysis/diagnosis.h"
#include "cli/commands.h"
#include "report/perfetto_trace.h"
#include "report/report_file.h"
#include "store/store_reader.h"

namespace traindoc::cli {
namespace {

namespace fs = std::filesystem;

// Whole or not at all: nothing half-written is ever left as `file`.
void write_trace(const std::string& file, const std::string& text) {
  if (file == "-") {
    if (fwrite(text.data(), 1, text.size(), stdout) != text.size() || fflush(stdout) != 0) {
      throw std::runtime_error("cannot write the trace to the standard output");
    }
    return;
  }
  fs::path path(file);
  if (!path.has_filename()) throw std::runtime_error(file + " names a folder, not a file");
  std::string dir = path.has_parent_path() ? path.parent_path().string() : ".";
  report::write_report_file(dir, path.filename().string(), text);
}

}  // namespace

int export_command(const ExportArgs& args) {
  std::vector<fs::path> folders = node_folders(args.run_dir);
  std::vector<store::Evidence> evidence;
  std::vector<analysis::Diagnosis> diagnoses;
  evidence.reserve(folders.size());
  diagnoses.reserve(folders.size());
  std::vector<report::TraceNode> nodes;
  for (const fs::path& folder : folders) {
    evidence.push_back(store::read_evidence((folder / "run.db").string()));
    diagnoses.push_back(analysis::diagnose(evidence.back()));
    // One node: its host; several: their folders, which are named for the nodes.
    std::string name = folders.size() > 1 || evidence.back().run.hostname.empty()
                           ? folder.filename().string()
                           : evidence.back().run.hostname;
    nodes.push_back({name, &evidence.back(), &diagnoses.back()});
  }
  write_trace(args.perfetto, report::perfetto_trace(nodes));
  if (args.perfetto != "-") {
    fprintf(stderr, "traindoc: wrote %s; open it in ui.perfetto.dev or chrome://tracing\n",
            args.perfetto.c_str());
  }
  return 0;
}

}  // namespace traindoc::cli
