// What a job's command line says about the job, read without running it: its launcher, torchrun's
// ranks, nodes and --redirects, its rendezvous address, the script and the DataLoader flags the
// script's arguments name. Supervisor process, main thread (traindoc check, the start of a run).
// Pure.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/preflight.h"

namespace traindoc::supervisor {

struct ParsedCommand {
  store::CommandFacts facts;
  std::string python;  // the Python program when the command names one ("python3"), else ""
  // What an `env` prefix does to the command's environment and working folder, as GNU env's
  // options (-i, -u NAME, -C DIR, -S STRING, combined or long) and NAME=VALUE operands say.
  std::map<std::string, std::string> env;  // set
  std::set<std::string> unset;
  bool ignore_environment = false;  // -i: only `env` is the command's
  std::string chdir;                // -C: where the command starts; "" for here
};

// Where `path`, as the command names it, is from here: under the command's -C folder when
// relative.
std::string from_here(const ParsedCommand& command, const std::string& path);

// A count or index as a launcher's option or variable gives it ("8", "0"); nullopt for a
// negative number or text.
std::optional<int> parse_count(std::string_view text);

// A TCP port as torch takes it, 0 to 65535; nullopt for another number or text.
std::optional<int> parse_port(std::string_view text);

// The words GNU env's -S makes of `text`: split at spaces, tabs and newlines, with '...' and
// "..." quoting, backslash escapes (\_ a separator, \c the end) and a # that begins a word
// beginning a comment. ${NAME} is kept as it is written.
std::vector<std::string> split_string(std::string_view text);

// `command`: the job's command as `traindoc run` would start it.
ParsedCommand parse_command(const std::vector<std::string>& command);

// Whether `name` (a path or a program's name) is a Python interpreter: python, python3,
// python3.11, python3.12d.
bool is_python_name(const std::string& name);

}  // namespace traindoc::supervisor
