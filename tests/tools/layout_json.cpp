// Prints, as JSON on stdout, what the Python hook copies from src/common/layout.h: the layout of
// CollectiveCall (each field's offset, size, element type and array shape), the numbers of
// CollectiveOp, StepKind and CollectiveDevice, and the sizes and flags of a collective record.
// Run by tests/integration/test_hook_layout.py; no part of traindoc.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iostream>
#include <string>
#include <type_traits>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/layout.h"

namespace {

using nlohmann::json;
using traindoc::common::CollectiveCall;
using traindoc::common::CollectiveDevice;
using traindoc::common::CollectiveOp;
using traindoc::common::StepKind;

// An array's extents, outermost first: uint32_t[4][6] gives [4, 6].
template <typename T>
void add_extents(json& shape) {
  if constexpr (std::is_array_v<T>) {
    shape.push_back(std::extent_v<T>);
    add_extents<std::remove_extent_t<T>>(shape);
  }
}

// A field of CollectiveCall as ctypes describes one: where it is, how big, of what element.
template <typename T>
json field(const char* name, size_t offset) {
  using Element = std::remove_all_extents_t<T>;
  json shape = json::array();
  add_extents<T>(shape);
  return {{"name", name},
          {"offset", offset},
          {"size", sizeof(T)},
          {"element",
           {{"kind", std::is_same_v<Element, char> ? "char" : "int"},
            {"signed", std::is_signed_v<Element>},
            {"size", sizeof(Element)}}},
          {"shape", shape}};
}

#define TRAINDOC_FIELD(name) \
  field<decltype(CollectiveCall::name)>(#name, offsetof(CollectiveCall, name))

// A named number of layout.h, as one member of a JSON object.
template <typename T>
std::pair<std::string, int64_t> value(const char* name, T number) {
  return {name, static_cast<int64_t>(number)};
}
#define TRAINDOC_VALUE(scope, name) value(#name, scope::name)

// Everything the Python hook copies from layout.h.
json layout() {
  return {
      {"CollectiveCall",
       {{"size", sizeof(CollectiveCall)},
        {"align", alignof(CollectiveCall)},
        {"fields", json::array({TRAINDOC_FIELD(group),
                                TRAINDOC_FIELD(number),
                                TRAINDOC_FIELD(time_ns),
                                TRAINDOC_FIELD(count),
                                TRAINDOC_FIELD(step),
                                TRAINDOC_FIELD(group_rank),
                                TRAINDOC_FIELD(group_size),
                                TRAINDOC_FIELD(peer),
                                TRAINDOC_FIELD(line),
                                TRAINDOC_FIELD(op),
                                TRAINDOC_FIELD(event),
                                TRAINDOC_FIELD(source),
                                TRAINDOC_FIELD(dtype),
                                TRAINDOC_FIELD(redop),
                                TRAINDOC_FIELD(tensor_count),
                                TRAINDOC_FIELD(flags),
                                TRAINDOC_FIELD(ndims),
                                TRAINDOC_FIELD(tensor_dtypes),
                                TRAINDOC_FIELD(tensor_devices),
                                TRAINDOC_FIELD(dims),
                                TRAINDOC_FIELD(site)})}}},
      {"CollectiveOp",
       {TRAINDOC_VALUE(CollectiveOp, kAllReduce), TRAINDOC_VALUE(CollectiveOp, kBroadcast),
        TRAINDOC_VALUE(CollectiveOp, kReduce), TRAINDOC_VALUE(CollectiveOp, kAllGather),
        TRAINDOC_VALUE(CollectiveOp, kReduceScatter), TRAINDOC_VALUE(CollectiveOp, kAllToAll),
        TRAINDOC_VALUE(CollectiveOp, kGather), TRAINDOC_VALUE(CollectiveOp, kScatter),
        TRAINDOC_VALUE(CollectiveOp, kBarrier), TRAINDOC_VALUE(CollectiveOp, kMonitoredBarrier),
        TRAINDOC_VALUE(CollectiveOp, kSend), TRAINDOC_VALUE(CollectiveOp, kRecv),
        TRAINDOC_VALUE(CollectiveOp, kAllGatherObject),
        TRAINDOC_VALUE(CollectiveOp, kBroadcastObject), TRAINDOC_VALUE(CollectiveOp, kGatherObject),
        TRAINDOC_VALUE(CollectiveOp, kScatterObject),
        TRAINDOC_VALUE(CollectiveOp, kAllReduceCoalesced),
        TRAINDOC_VALUE(CollectiveOp, kBroadcastCoalesced),
        TRAINDOC_VALUE(CollectiveOp, kDdpGradientAllReduce)}},
      {"StepKind",
       {TRAINDOC_VALUE(StepKind, kOptimizer), TRAINDOC_VALUE(StepKind, kBackward),
        TRAINDOC_VALUE(StepKind, kDdpForward)}},
      {"CollectiveDevice",
       {TRAINDOC_VALUE(CollectiveDevice, kCpu), TRAINDOC_VALUE(CollectiveDevice, kCuda),
        TRAINDOC_VALUE(CollectiveDevice, kOther)}},
      {"constants",
       {TRAINDOC_VALUE(traindoc::common, kCollectiveTensors),
        TRAINDOC_VALUE(traindoc::common, kCollectiveDims),
        TRAINDOC_VALUE(traindoc::common, kCallSiteSize),
        TRAINDOC_VALUE(traindoc::common, kDtypeUnknown),
        TRAINDOC_VALUE(traindoc::common, kRedOpNone),
        TRAINDOC_VALUE(traindoc::common, kCollectiveAsync),
        TRAINDOC_VALUE(traindoc::common, kCollectiveTruncated),
        TRAINDOC_VALUE(traindoc::common, kCollectiveQueued),
        TRAINDOC_VALUE(traindoc::common, kCollectiveRaised),
        TRAINDOC_VALUE(traindoc::common, kCollectiveDefaultGroup),
        TRAINDOC_VALUE(traindoc::common, kCollectiveJoinShadow)}}};
}

}  // namespace

int main() {
  try {
    std::cout << layout().dump(2) << '\n';
  } catch (const std::exception& error) {
    std::cerr << "layout_json: " << error.what() << '\n';
    return 1;
  }
  return 0;
}
