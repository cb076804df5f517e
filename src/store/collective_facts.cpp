// The name tables of collective_facts.h, made from its X-macros. Plain functions, no state;
// used by the store (writer and reader) and by anything that shows a fact by its name.
#include "store/collective_facts.h"

#include <array>
#include <string_view>

#include "common/enum_names.h"

namespace traindoc::store {
namespace {

constexpr std::array kIssueKinds = {
#define TRAINDOC_FACT_VALUE(enumerator, name) IssueKind::enumerator,
    TRAINDOC_COLLECTIVE_ISSUE_KINDS(TRAINDOC_FACT_VALUE)
#undef TRAINDOC_FACT_VALUE
};
constexpr std::array kFields = {
#define TRAINDOC_FACT_VALUE(enumerator, name) IssueField::enumerator,
    TRAINDOC_COLLECTIVE_FIELDS(TRAINDOC_FACT_VALUE)
#undef TRAINDOC_FACT_VALUE
};
constexpr std::array kWaitEnds = {
#define TRAINDOC_FACT_VALUE(enumerator, name) WaitEnd::enumerator,
    TRAINDOC_WAIT_ENDS(TRAINDOC_FACT_VALUE)
#undef TRAINDOC_FACT_VALUE
};
constexpr std::array kRankStates = {
#define TRAINDOC_FACT_VALUE(enumerator, name) RankState::enumerator,
    TRAINDOC_RANK_STATES(TRAINDOC_FACT_VALUE)
#undef TRAINDOC_FACT_VALUE
};

#define TRAINDOC_FACT_NAME(enumerator, name) name,
constexpr std::array<std::string_view, kIssueKinds.size()> kIssueKindNames = {
    TRAINDOC_COLLECTIVE_ISSUE_KINDS(TRAINDOC_FACT_NAME)};
constexpr std::array<std::string_view, kFields.size()> kFieldNames = {
    TRAINDOC_COLLECTIVE_FIELDS(TRAINDOC_FACT_NAME)};
constexpr std::array<std::string_view, kWaitEnds.size()> kWaitEndNames = {
    TRAINDOC_WAIT_ENDS(TRAINDOC_FACT_NAME)};
constexpr std::array<std::string_view, kRankStates.size()> kRankStateNames = {
    TRAINDOC_RANK_STATES(TRAINDOC_FACT_NAME)};
#undef TRAINDOC_FACT_NAME

}  // namespace

std::string_view to_string(IssueKind kind) {
  return kIssueKindNames[static_cast<size_t>(kind)];
}
std::optional<IssueKind> issue_kind_named(std::string_view name) {
  return common::value_named(kIssueKinds, kIssueKindNames, name);
}
std::span<const IssueKind> all_issue_kinds() {
  return kIssueKinds;
}

std::string_view to_string(IssueField field) {
  return kFieldNames[static_cast<size_t>(field)];
}
std::optional<IssueField> issue_field_named(std::string_view name) {
  return common::value_named(kFields, kFieldNames, name);
}
std::span<const IssueField> all_issue_fields() {
  return kFields;
}

std::string_view to_string(WaitEnd end) {
  return kWaitEndNames[static_cast<size_t>(end)];
}
std::optional<WaitEnd> wait_end_named(std::string_view name) {
  return common::value_named(kWaitEnds, kWaitEndNames, name);
}
std::span<const WaitEnd> all_wait_ends() {
  return kWaitEnds;
}

std::string_view to_string(RankState state) {
  return kRankStateNames[static_cast<size_t>(state)];
}
std::optional<RankState> rank_state_named(std::string_view name) {
  return common::value_named(kRankStates, kRankStateNames, name);
}
std::span<const RankState> all_rank_states() {
  return kRankStates;
}

}  // namespace traindoc::store
