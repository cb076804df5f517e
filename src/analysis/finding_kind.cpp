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
};

constexpr std::array<std::string_view, kKinds.size()> kNames = {
#define TRAINDOC_FINDING_KIND_NAME(enumerator, name) name,
    TRAINDOC_FINDING_KINDS(TRAINDOC_FINDING_KIND_NAME)
#undef TRAINDOC_FINDING_KIND_NAME
};

}  // namespace

std::string_view to_string(FindingKind kind) {
  return kNames[static_cast<size_t>(kind)];
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
