// Secrets kept out of run.db: the values of arguments whose names say key, token, secret,
// password or credentials, and the passwords and such query values of URLs. Pure; applied where
// command lines enter the supervisor, so that nothing it prints or writes (run.db, then the
// reports) holds them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace traindoc::supervisor {

inline constexpr std::string_view kRedacted = "***";

// `--api-key X` and `--token=Y` become `--api-key ***` and `--token=***`; so do `PASSWORD=Z`
// (as `env` takes it) and `https://user:pass@host/?token=T` (`https://user:***@host/?token=***`).
std::vector<std::string> redact_arguments(std::vector<std::string> argv);

// The same over a command line joined with spaces (a process's cmdline as recorded).
std::string redact_command_line(std::string_view line);

}  // namespace traindoc::supervisor
