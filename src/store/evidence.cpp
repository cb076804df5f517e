// Names of the evidence model's enums, as stored in run.db and shown in reports.
// Used by the supervisor (writer) and by analyze/report (reader); plain functions, no state.
// The strings are part of the run.db format (docs/run-db.md): never rename one.
#include "store/evidence.h"

#include <array>
#include <utility>

namespace traindoc::store {

namespace {

constexpr std::array<std::pair<EndSource, const char*>, 6> kEndSourceNames{{
    {EndSource::kNone, "none"},
    {EndSource::kSupervisor, "supervisor"},
    {EndSource::kParent, "parent"},
    {EndSource::kZombie, "zombie"},
    {EndSource::kAgentExit, "agent-exit"},
    {EndSource::kVanished, "vanished"},
}};

}  // namespace

const char* to_string(EndSource source) {
  for (const auto& [value, name] : kEndSourceNames) {
    if (value == source) return name;
  }
  return "none";
}

EndSource end_source_from_string(const std::string& text) {
  for (const auto& [value, name] : kEndSourceNames) {
    if (text == name) return value;
  }
  // A name from a newer traindoc: treat as "nothing known" rather than refuse the whole run.
  return EndSource::kNone;
}

}  // namespace traindoc::store
