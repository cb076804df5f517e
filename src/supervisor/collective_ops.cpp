// What ranks' calls of each collective op must agree in. Supervisor process, main loop thread.
// The op numbering is layout.h's; the names compared are collective_text.h's.
#include "supervisor/collective_ops.h"

#include "supervisor/collective_text.h"

namespace traindoc::supervisor {

using common::CollectiveCall;
using common::CollectiveOp;

bool is_lifetime(uint16_t op) {
  return op >= static_cast<uint16_t>(CollectiveOp::kGroupStart);
}

bool compared(uint16_t op) {
  return !is_lifetime(op) || static_cast<CollectiveOp>(op) == CollectiveOp::kCommSplit;
}

bool is_p2p(uint16_t op) {
  return op == static_cast<uint16_t>(CollectiveOp::kSend) ||
         op == static_cast<uint16_t>(CollectiveOp::kRecv);
}

bool is_python(const CollectiveCall& call) {
  return call.source == static_cast<uint8_t>(common::CollectiveSource::kPython);
}

bool returns_early(const CollectiveCall& call) {
  return !is_python(call) ||
         (call.flags & (common::kCollectiveAsync | common::kCollectiveQueued)) != 0;
}

bool completes_together(uint16_t op) {
  switch (static_cast<CollectiveOp>(op)) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kDdpGradientAllReduce:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kBarrier:
    case CollectiveOp::kMonitoredBarrier:
    case CollectiveOp::kAllGatherObject:
    case CollectiveOp::kAllReduceCoalesced:
      return true;
    default:
      return false;
  }
}

bool rooted(uint16_t op) {
  switch (static_cast<CollectiveOp>(op)) {
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce:
    case CollectiveOp::kGather:
    case CollectiveOp::kScatter:
    case CollectiveOp::kBroadcastObject:
    case CollectiveOp::kGatherObject:
    case CollectiveOp::kScatterObject:
    case CollectiveOp::kBroadcastCoalesced:
      return true;
    default:
      return false;
  }
}

// Rooted ops differ by place in the usual `if rank == root:`, and barriers, which carry nothing,
// in the usual "rank 0 first" (`if rank != 0: barrier()`, work, `if rank == 0: barrier()`).
bool symmetric(uint16_t op) {
  switch (static_cast<CollectiveOp>(op)) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kDdpGradientAllReduce:
    case CollectiveOp::kAllReduceCoalesced:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return true;
    default:
      return false;
  }
}

bool shapes_compared(uint16_t op) {
  switch (static_cast<CollectiveOp>(op)) {
    case CollectiveOp::kAllToAll:
    case CollectiveOp::kBarrier:
    case CollectiveOp::kMonitoredBarrier:
    case CollectiveOp::kAllGatherObject:
    case CollectiveOp::kBroadcastObject:
    case CollectiveOp::kGatherObject:
    case CollectiveOp::kScatterObject:
    case CollectiveOp::kCommSplit:
      return false;
    default:
      return true;
  }
}

std::vector<CallField> fields_of(uint16_t op) {
  std::vector<CallField> out;
  out.push_back({store::IssueField::kOp, [](const CollectiveCall& c) {
                   // The two sides of a point-to-point pair agree when they are send and recv.
                   return is_p2p(c.op) ? std::string("send/recv") : op_name(c.op);
                 }});
  if (shapes_compared(op)) {
    out.push_back(
        {store::IssueField::kShape, [](const CollectiveCall& c) { return shapes_text(c, false); }});
    out.push_back({store::IssueField::kDtype, types_text});
    out.push_back({store::IssueField::kDevice, devices_text});
    // NCCL's records have a count and no shapes; the Python hook's count is its first tensor's,
    // which the shapes already tell.
    out.push_back({store::IssueField::kCount, [](const CollectiveCall& c) {
                     return is_python(c) ? std::string() : std::to_string(c.count);
                   }});
  } else if (static_cast<CollectiveOp>(op) == CollectiveOp::kAllToAll) {
    // Splits may differ in shape, never in element type or device.
    out.push_back({store::IssueField::kDtype, types_text});
    out.push_back({store::IssueField::kDevice, devices_text});
  }
  out.push_back(
      {store::IssueField::kRedop, [](const CollectiveCall& c) { return redop_name(c.redop); }});
  if (rooted(op)) {
    out.push_back(
        {store::IssueField::kRoot, [](const CollectiveCall& c) { return std::to_string(c.peer); }});
  }
  if (static_cast<CollectiveOp>(op) == CollectiveOp::kBroadcastObject) {
    // The hook's count of a broadcast_object_list is the list's length.
    out.push_back({store::IssueField::kListLength,
                   [](const CollectiveCall& c) { return std::to_string(c.count); }});
  }
  return out;
}

}  // namespace traindoc::supervisor
