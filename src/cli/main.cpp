// traindoc's entry point: parses the command line and dispatches to a subcommand.
// Supervisor process, main thread; every error ends here as one message and an exit status.
#include <CLI/CLI.hpp>

#include <cmath>
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

// CLI::Range lets NaN through: every comparison with it is false.
const CLI::Validator kFinite(
    [](std::string& text) {
      double value = 0;
      bool number = CLI::detail::lexical_cast(text, value);
      return number && !std::isfinite(value) ? std::string("must be a finite number")
                                             : std::string();
    },
    "FINITE");

void add_output_flags(CLI::App* app, traindoc::cli::OutputFlags& flags) {
  app->add_flag("--json", flags.json, "At the end, print report.json instead of the summary");
  app->add_flag("-q,--quiet", flags.quiet, "At the end, print only a one-line verdict");
  app->add_flag("--silent", flags.silent, "Print nothing of traindoc's own");
}

CLI::App* add_run(CLI::App& app, traindoc::cli::RunArgs& run) {
  CLI::App* cmd = app.add_subcommand("run", "Run a training job under traindoc");
  cmd->prefix_command();
  cmd->add_option("-o,--out", run.out, "Run folder (default ./traindoc-runs/<time>-<id>)");
  cmd->add_option("--interval", run.interval_s, "Seconds between samples")
      ->check(kFinite)
      ->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--stall-seconds", run.stall_s,
                  "Seconds a collective may wait for a missing rank before it is reported")
      ->check(kFinite)
      ->check(CLI::Range(0.5, 86400.0));
  cmd->add_option("--on-mismatch", run.on_mismatch,
                  "At a collective mismatch or hang: report (default) or abort the job")
      ->check(CLI::IsMember({"report", "abort"}));
  cmd->add_flag("--no-error-file", run.no_error_file,
                "Never write TORCHELASTIC_ERROR_FILE for a torchrun rank that failed without one");
  cmd->add_flag("--memory-history", run.memory_history,
                "Record PyTorch's GPU allocation history; at an out-of-memory error, save the "
                "allocator's snapshot (memory_viz) and list the top allocation sites");
  add_output_flags(cmd, run.flags);
  cmd->footer("Usage: traindoc run [OPTIONS] -- COMMAND [ARGS...]");
  return cmd;
}

CLI::App* add_fit(CLI::App& app, traindoc::cli::FitArgs& fit) {
  CLI::App* cmd = app.add_subcommand("fit", "Find the largest batch size that fits on every rank");
  cmd->add_option("--param", fit.param, "NAME: {NAME} in the command is each trial's batch size")
      ->required()
      ->check([](const std::string& name) {
        return name.empty() || name.find_first_of("{}") != std::string::npos
                   ? std::string("a name without braces, as in --param batch for {batch}")
                   : std::string();
      });
  cmd->add_option("--env", fit.env, "Set the batch size in this environment variable too")
      ->check([](const std::string& name) {
        return name.empty() || name.find('=') != std::string::npos
                   ? std::string("a variable's name, without =")
                   : std::string();
      });
  cmd->add_option("--min", fit.min_batch, "The first batch tried (default 1)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--max", fit.max_batch, "Never recommend more")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--target-batch", fit.target_batch,
                  "The global batch to keep with gradient accumulation")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--headroom", fit.headroom_pct, "Percent of the memory kept free (default 10)")
      ->check(kFinite)
      ->check(CLI::Range(0.0, 90.0));
  cmd->add_option("--memory-budget", fit.memory_budget,
                  "What each rank may use, as 1200MiB or 1.5GiB (default: its GPU, the memory "
                  "cgroup's limit, the host's available memory)");
  cmd->add_option("--steps", fit.steps,
                  "Optimizer steps each trial runs past the first (default 3)")
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--flat-seconds", fit.flat_s,
                  "In a job that counts no steps (no PyTorch), end a trial once its memory stayed "
                  "flat this long while it worked (default 10)")
      ->check(kFinite)
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_flag("--json", fit.json, "Print the result as JSON");
  cmd->add_option("-o,--out", fit.out, "Fit folder (default ./traindoc-runs/fit-<time>-<id>)");
  cmd->footer("Usage: traindoc fit --param NAME [OPTIONS] -- COMMAND ... {NAME} ...");
  return cmd;
}

CLI::App* add_check(CLI::App& app, traindoc::cli::CheckArgs& check) {
  CLI::App* cmd = app.add_subcommand(
      "check", "Name what will or may fail on this machine for a command, before it starts");
  cmd->add_flag("--json", check.json, "Print the checks and the facts as JSON");
  cmd->footer(
      "Usage: traindoc check [--json] [-- COMMAND [ARGS...]]\n"
      "Exit status: 0 when nothing will fail, 1 when something will, 2 for a usage error.");
  return cmd;
}

CLI::App* add_export(CLI::App& app, traindoc::cli::ExportArgs& args) {
  CLI::App* cmd = app.add_subcommand("export", "Write a run folder as a trace for ui.perfetto.dev");
  cmd->add_option("run_dir", args.run_dir, "Run folder (or a job's folder of node folders)")
      ->required();
  cmd->add_option("--perfetto", args.perfetto,
                  "FILE: the Chrome trace-event JSON that ui.perfetto.dev opens; - for stdout")
      ->required();
  cmd->footer("Usage: traindoc export RUN_FOLDER --perfetto FILE");
  return cmd;
}

// An argument CLI11 did not take: an option of ours mistyped, or a command given without the --
// that fit and check take it after.
int extra_argument(CLI::App& app, const std::string& message) {
  CLI::App* where = &app;
  for (CLI::App* sub : app.get_subcommands()) where = sub;  // the one parsed
  std::string typed = message.substr(message.find_last_of(' ') + 1);
  std::string name = where->get_name();
  if ((name == "fit" || name == "check") && !typed.starts_with("-")) {
    fprintf(stderr, "traindoc %s: the command goes after --\n%s\n", name.c_str(),
            where->get_footer().c_str());
    return kUsageError;
  }
  return unknown_option(where, typed);
}

int dispatch(int argc, char** argv) {
  CLI::App app{"traindoc: tells you why a training job died, ran out of memory, leaked or hung."};
  app.set_version_flag("--version", std::string(TRAINDOC_VERSION));
  app.require_subcommand(1);

  traindoc::cli::RunArgs run;
  CLI::App* run_cmd = add_run(app, run);

  traindoc::cli::AnalyzeArgs analyze;
  CLI::App* analyze_cmd = app.add_subcommand("analyze", "Rebuild the report of a run folder");
  analyze_cmd->add_option("run_dir", analyze.run_dirs,
                          "Run folder (default: the latest in ./traindoc-runs), a job's folder of "
                          "node folders, or the node folders of one job");
  add_output_flags(analyze_cmd, analyze.flags);

  traindoc::cli::ExportArgs export_args;
  CLI::App* export_cmd = add_export(app, export_args);

  traindoc::cli::FitArgs fit;
  CLI::App* fit_cmd = add_fit(app, fit);

  traindoc::cli::CheckArgs check;
  CLI::App* check_cmd = add_check(app, check);

  // Everything after the first `--` is the job's command, whatever it looks like.
  std::vector<std::string> after_dashes;
  int ours = argc;
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--") {
      after_dashes.assign(argv + i + 1, argv + argc);
      ours = i;
      break;
    }
  }
  try {
    app.parse(ours, argv);
  } catch (const CLI::ParseError& error) {
    if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
      return extra_argument(app, error.what());
    }
    // Help and version exit 0; every other parse error is a usage error.
    return app.exit(error) == 0 ? 0 : kUsageError;
  }

  try {
    if (run_cmd->parsed()) {
      run.command = run_cmd->remaining();
      if (!run.command.empty() && run.command.front().starts_with("-")) {
        return unknown_option(run_cmd, run.command.front());
      }
      run.command.insert(run.command.end(), after_dashes.begin(), after_dashes.end());
      if (run.command.empty()) {
        fprintf(stderr, "traindoc run: no command given\n%s", run_cmd->help().c_str());
        return kUsageError;
      }
      return traindoc::cli::run_command(run);
    }
    if (fit_cmd->parsed()) {
      fit.command = after_dashes;
      if (fit.command.empty()) {
        fprintf(stderr, "traindoc fit: no command given\n%s", fit_cmd->help().c_str());
        return kUsageError;
      }
      return traindoc::cli::fit_command(fit);
    }
    if (check_cmd->parsed()) {
      check.command = after_dashes;
      return traindoc::cli::check_command(check);
    }
    if (export_cmd->parsed()) return traindoc::cli::export_command(export_args);
    return traindoc::cli::analyze_command(analyze);
  } catch (const std::exception& error) {
    fprintf(stderr, "traindoc: %s\n", error.what());
    return traindoc::cli::kOwnFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& error) {
    fprintf(stderr, "traindoc: %s\n", error.what());
  } catch (...) {
    fprintf(stderr, "traindoc: unexpected error\n");
  }
  return traindoc::cli::kOwnFailure;
}
