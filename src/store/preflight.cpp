// The name tables of the preflight checks, verdicts and launchers (preflight.h). Any process;
// pure.
#include "store/preflight.h"

#include <array>

#include "common/enum_names.h"

namespace traindoc::store {
namespace {

constexpr std::array<PreflightCheck, kPreflightCheckCount> kChecks =
    std::to_array(kAllPreflightChecks);

constexpr std::array<std::string_view, kChecks.size()> kCheckNames = {
#define TRAINDOC_PREFLIGHT_NAME(name, text) text,
    TRAINDOC_PREFLIGHT_CHECKS(TRAINDOC_PREFLIGHT_NAME)
#undef TRAINDOC_PREFLIGHT_NAME
};

constexpr std::array kVerdicts = {Verdict::kWillFail, Verdict::kMayFail};
constexpr std::array<std::string_view, kVerdicts.size()> kVerdictNames = {"will-fail", "may-fail"};

constexpr std::array<std::string_view, 4> kLauncherNames = {"none", "python", "torchrun", "other"};

}  // namespace

std::string_view to_string(PreflightCheck check) {
  return kCheckNames[static_cast<size_t>(check)];
}

std::optional<PreflightCheck> preflight_check_named(std::string_view name) {
  return common::value_named(kChecks, kCheckNames, name);
}

std::span<const PreflightCheck> all_preflight_checks() {
  return kChecks;
}

std::string_view to_string(Verdict verdict) {
  return kVerdictNames[static_cast<size_t>(verdict)];
}

std::optional<Verdict> verdict_named(std::string_view name) {
  return common::value_named(kVerdicts, kVerdictNames, name);
}

std::string_view to_string(Launcher launcher) {
  return kLauncherNames[static_cast<size_t>(launcher)];
}

}  // namespace traindoc::store
