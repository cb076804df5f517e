#include "analysis/finding_kind.h"

#include <array>
#include <ostream>

#include "common/enum_names.h"

namespace traindoc::analysis {
namespace {

constexpr std::array kKinds = {
#define TRAINDOC_FINDING_KIND_VALUE(enumerator, name) FindingKind::enumerator,
    TRAINDOC_FINDING_KINDS(TRAINDOC_FINDING_KIND_VALUE)
#undef TRAINDOC_FINDING_KIND_VALUE
#define TRAINDOC_PREFLIGHT_KIND_VALUE(name, text) FindingKind::kPreflight##name,
        TRAINDOC_PREFLIGHT_CHECKS(TRAINDOC_PREFLIGHT_KIND_VALUE)
#undef TRAINDOC_PREFLIGHT_KIND_VALUE
};

constexpr std::array<std::string_view, kKinds.size()> kNames = {
#define TRAINDOC_FINDING_KIND_NAME(enumerator, name) name,
    TRAINDOC_FINDING_KINDS(TRAINDOC_FINDING_KIND_NAME)
#undef TRAINDOC_FINDING_KIND_NAME
#define TRAINDOC_PREFLIGHT_KIND_NAME(name, text) "preflight-" text,
        TRAINDOC_PREFLIGHT_CHECKS(TRAINDOC_PREFLIGHT_KIND_NAME)
#undef TRAINDOC_PREFLIGHT_KIND_NAME
};

// The preflight kinds follow the others, in the checks' order.
constexpr size_t kFirstPreflight = kKinds.size() - store::kPreflightCheckCount;

}  // namespace

std::string_view to_string(FindingKind kind) {
  return kNames[static_cast<size_t>(kind)];
}

FindingKind preflight_kind(store::PreflightCheck check) {
  return kKinds[kFirstPreflight + static_cast<size_t>(check)];
}

std::optional<FindingKind> finding_kind_named(std::string_view name) {
  return common::value_named(kKinds, kNames, name);
}

std::span<const FindingKind> all_finding_kinds() {
  return kKinds;
}

std::ostream& operator<<(std::ostream& out, FindingKind kind) {
  return out << to_string(kind);
}

}  // namespace traindoc::analysis
