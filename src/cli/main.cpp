// traindoc's entry point: parses the command line and dispatches to a subcommand.
// Supervisor process, main thread; every error ends here as one message and an exit status.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "cli/suggest.h"

namespace {

using traindoc::cli::kUsageError;

std::vector<std::string> option_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app->get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
  }
  return names;
}

// CLI11 stops `run` at the first argument it does not know; one that looks like an option
// before the command is a typo of ours, not the command.
int unknown_option(const CLI::App* app, const std::string& typed) {
  std::string hint = traindoc::cli::nearest(typed, option_names(app));
  fprintf(stderr, "traindoc %s: unknown option %s%s\n", app->get_name().c_str(), typed.c_str(),
          hint.empty() ? "" : (" (did you mean " + hint + "?)").c_str());
  fprintf(stderr, "Run 'traindoc %s --help' for usage.\n", app->get_name().c_str());
  return kUsageError;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"traindoc: tells you why a training job died, ran out of memory, leaked or hung."};
  app.set_version_flag("--version", std::string(TRAINDOC_VERSION));
  app.require_subcommand(1);

  traindoc::cli::RunArgs run;
  CLI::App* run_cmd = app.add_subcommand("run", "Run a training job under traindoc");
  run_cmd->prefix_command();
  run_cmd->add_option("-o,--out", run.out, "Run folder (default ./traindoc-runs/<time>-<id>)");
  run_cmd->add_option("--interval", run.interval_s, "Seconds between samples")
      ->check(CLI::Range(0.1, 3600.0));
  run_cmd->add_flag("-q,--quiet", run.quiet, "Print nothing of traindoc's own");
  run_cmd->footer("Usage: traindoc run [OPTIONS] -- COMMAND [ARGS...]");

  traindoc::cli::AnalyzeArgs analyze;
  CLI::App* analyze_cmd = app.add_subcommand("analyze", "Rebuild the report of a run folder");
  analyze_cmd->add_option("run_dir", analyze.run_dir, "Run folder")->required();
  analyze_cmd->add_flag("--json", analyze.json, "Print report.json");
  analyze_cmd->add_flag("-q,--quiet", analyze.quiet, "Print nothing");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (auto* extras = dynamic_cast<const CLI::ExtrasError*>(&error)) {
      (void)extras;
      std::string message = error.what();
      CLI::App* where = analyze_cmd->parsed() ? analyze_cmd : &app;
      std::string typed = message.substr(message.find_last_of(' ') + 1);
      return unknown_option(where, typed);
    }
    return app.exit(error);
  }

  try {
    if (run_cmd->parsed()) {
      run.command = run_cmd->remaining();
      if (!run.command.empty() && run.command.front() == "--") run.command.erase(run.command.begin());
      else if (!run.command.empty() && run.command.front().starts_with("-")) {
        return unknown_option(run_cmd, run.command.front());
      }
      if (run.command.empty()) {
        fprintf(stderr, "traindoc run: no command given\n%s", run_cmd->help().c_str());
        return kUsageError;
      }
      return traindoc::cli::run_command(run);
    }
    return traindoc::cli::analyze_command(analyze);
  } catch (const std::exception& error) {
    fprintf(stderr, "traindoc: %s\n", error.what());
    return traindoc::cli::kOwnFailure;
  }
}
