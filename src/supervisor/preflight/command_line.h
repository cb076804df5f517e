// What a job's command line says about the job, read without running it: its launcher, torchrun's
// ranks, nodes and --redirects, its rendezvous address, the script and the DataLoader flags the
// script's arguments name. Supervisor process, main thread (traindoc check, the start of a run).
// Pure.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "store/preflight.h"

namespace traindoc::supervisor {

struct ParsedCommand {
  store::CommandFacts facts;
  std::string python;  // the Python program when the command names one ("python3"), else ""
  // The variables an `env NAME=VALUE ...` prefix sets for the command.
  std::map<std::string, std::string> env;
};

// `argv`: the job's command as `traindoc run` would start it.
ParsedCommand parse_command(const std::vector<std::string>& argv);

// Whether `name` (a path or a program's name) is a Python interpreter: python, python3,
// python3.11, python3.12d.
bool is_python_name(const std::string& name);

}  // namespace traindoc::supervisor
