// The time limit a process's command line sets: coreutils' `timeout DURATION COMMAND...`. Read by
// the supervisor (the job's stacks just before the limit runs out) and by the analysis (a job
// stopped by its limit). Pure text parsing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace traindoc::store {

struct TimeLimit {
  int64_t limit_ns = 0;
  std::string words;  // "timeout -s INT 4h": the program and its options, up to the duration
};

// nullopt for another program or no limit (a duration of 0, one it cannot read, or beyond any
// job).
std::optional<TimeLimit> time_limit_of(const std::string& cmdline);

}  // namespace traindoc::store
