// Names of the evidence model's enums, as stored in run.db and shown in reports.
// Used by the supervisor (writer) and by analyze/report (reader); plain functions, no state.
// The strings are part of the run.db format (docs/run-db.md): never rename one.
#include "store/evidence.h"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace traindoc::store {

namespace {

constexpr std::array<std::pair<EndSource, const char*>, 7> kEndSourceNames{{
    {EndSource::kNone, "none"},
    {EndSource::kSupervisor, "supervisor"},
    {EndSource::kParent, "parent"},
    {EndSource::kZombie, "zombie"},
    {EndSource::kAgentExit, "agent-exit"},
    {EndSource::kVanished, "vanished"},
    {EndSource::kGuard, "guard"},
}};

constexpr std::array<std::pair<StepKind, const char*>, 3> kStepKindNames{{
    {StepKind::kOptimizer, "optimizer"},
    {StepKind::kBackward, "backward"},
    {StepKind::kDdpForward, "ddp-forward"},
}};

template <typename Enum, size_t N>
using Names = std::array<std::pair<Enum, const char*>, N>;

template <typename Enum, size_t N>
std::optional<const char*> name_in(const Names<Enum, N>& names, Enum value) {
  for (const auto& [known, name] : names) {
    if (known == value) return name;
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
std::optional<Enum> value_in(const Names<Enum, N>& names, const std::string& text) {
  for (const auto& [value, name] : names) {
    if (text == name) return value;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(EndSource source) {
  return name_in(kEndSourceNames, source).value_or("none");
}

EndSource end_source_from_string(const std::string& text) {
  // A name from a newer traindoc: treat as "nothing known" rather than refuse the whole run.
  return value_in(kEndSourceNames, text).value_or(EndSource::kNone);
}

const char* to_string(StepKind kind) {
  return name_in(kStepKindNames, kind).value_or("optimizer");
}

std::optional<StepKind> step_kind_from_string(const std::string& text) {
  return value_in(kStepKindNames, text);
}

std::optional<bool> same_step_counts(const std::map<StepKind, int64_t>& a,
                                     const std::map<StepKind, int64_t>& b) {
  for (StepKind kind : {StepKind::kBackward, StepKind::kOptimizer, StepKind::kDdpForward}) {
    auto x = a.find(kind);
    auto y = b.find(kind);
    if (x != a.end() && y != b.end()) return x->second == y->second;
  }
  return std::nullopt;
}

}  // namespace traindoc::store
