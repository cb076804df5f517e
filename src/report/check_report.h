// What `traindoc check` prints: the traps found, grouped "will fail" then "may fail", each with
// its measured fact and fix; or, with --json, the traindoc.check/1 object (docs/check.md) with
// the facts they were found in. And the one line `traindoc run` says of each as it starts. Any
// process; the words are analysis's (preflight_checks.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/preflight.h"

namespace traindoc::report {

inline constexpr const char* kCheckSchema = "traindoc.check/1";

std::string render_check(const std::vector<store::PreflightResult>& results);

nlohmann::ordered_json check_json(const store::PreflightFacts& facts,
                                  const std::vector<store::PreflightResult>& results);

// "check: may fail: /dev/shm has 64.0 MiB free of 64.0 MiB: ..."
std::string preflight_line(const store::PreflightResult& result);

}  // namespace traindoc::report
