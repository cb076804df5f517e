#include "store/event_kind.h"

#include <array>
#include <ostream>

#include "common/enum_names.h"

namespace traindoc::store {
namespace {

constexpr std::array kKinds = {
#define TRAINDOC_EVENT_KIND_VALUE(enumerator, name) EventKind::enumerator,
    TRAINDOC_EVENT_KINDS(TRAINDOC_EVENT_KIND_VALUE)
#undef TRAINDOC_EVENT_KIND_VALUE
};

constexpr std::array<std::string_view, kKinds.size()> kNames = {
#define TRAINDOC_EVENT_KIND_NAME(enumerator, name) name,
    TRAINDOC_EVENT_KINDS(TRAINDOC_EVENT_KIND_NAME)
#undef TRAINDOC_EVENT_KIND_NAME
};

}  // namespace

std::string_view to_string(EventKind kind) {
  return kNames[static_cast<size_t>(kind)];
}

std::optional<EventKind> event_kind_named(std::string_view name) {
  return common::value_named(kKinds, kNames, name);
}

std::span<const EventKind> all_event_kinds() {
  return kKinds;
}

std::ostream& operator<<(std::ostream& out, EventKind kind) {
  return out << to_string(kind);
}

}  // namespace traindoc::store
