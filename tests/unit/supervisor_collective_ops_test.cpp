// What ranks' calls of each collective op must agree in (collective_ops.h): the fields compared
// per op, their values, and the ops' properties the checker's waits rely on.
#include "supervisor/collective_ops.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "store/collective_facts.h"

namespace traindoc::supervisor {
namespace {

using common::CollectiveOp;
using testing::ElementsAre;

uint16_t n(CollectiveOp op) {
  return static_cast<uint16_t>(op);
}

// The names of the fields compared for `op`, in their order.
std::vector<std::string> field_names(CollectiveOp op) {
  std::vector<std::string> out;
  for (const CallField& f : fields_of(n(op))) out.emplace_back(store::to_string(f.field));
  return out;
}

std::string value_of(CollectiveOp op, store::IssueField field, const common::CollectiveCall& c) {
  for (const CallField& f : fields_of(n(op))) {
    if (f.field == field) return f.value(c);
  }
  ADD_FAILURE() << "no field " << store::to_string(field) << " for op " << n(op);
  return {};
}

common::CollectiveCall python_call(CollectiveOp op) {
  common::CollectiveCall c{};
  c.op = n(op);
  c.source = static_cast<uint8_t>(common::CollectiveSource::kPython);
  c.dtype = 7;  // float32
  c.redop = common::kRedOpNone;
  c.peer = -1;
  c.count = 40;
  c.tensor_count = 1;
  c.ndims[0] = 2;
  c.dims[0][0] = 4;
  c.dims[0][1] = 10;
  c.tensor_dtypes[0] = 7;
  c.tensor_devices[0] = static_cast<uint8_t>(common::CollectiveDevice::kCpu);
  return c;
}

common::CollectiveCall nccl_call(CollectiveOp op, uint64_t count) {
  common::CollectiveCall c{};
  c.op = n(op);
  c.source = static_cast<uint8_t>(common::CollectiveSource::kNccl);
  c.dtype = 7;
  c.redop = 0;  // sum
  c.peer = -1;
  c.count = count;
  return c;
}

TEST(CollectiveOps, AllReduceComparesTensorsAndReduceOpButNoRoot) {
  EXPECT_THAT(field_names(CollectiveOp::kAllReduce),
              ElementsAre("op", "shape", "dtype", "device", "count", "reduce op"));
  EXPECT_THAT(field_names(CollectiveOp::kAllReduceCoalesced),
              ElementsAre("op", "shape", "dtype", "device", "count", "reduce op"));
}

TEST(CollectiveOps, RootedOpsCompareTheirRoot) {
  for (CollectiveOp op : {CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kGather,
                          CollectiveOp::kScatter}) {
    SCOPED_TRACE(n(op));
    EXPECT_TRUE(rooted(n(op)));
    EXPECT_THAT(field_names(op),
                ElementsAre("op", "shape", "dtype", "device", "count", "reduce op", "root"));
  }
  common::CollectiveCall c = python_call(CollectiveOp::kBroadcast);
  c.peer = 3;
  EXPECT_EQ(value_of(CollectiveOp::kBroadcast, store::IssueField::kRoot, c), "3");
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather,
                          CollectiveOp::kBarrier, CollectiveOp::kSend, CollectiveOp::kRecv}) {
    EXPECT_FALSE(rooted(n(op))) << n(op);
  }
}

TEST(CollectiveOps, ObjectOpsAndBarriersCompareNoTensors) {
  EXPECT_THAT(field_names(CollectiveOp::kBarrier), ElementsAre("op", "reduce op"));
  EXPECT_THAT(field_names(CollectiveOp::kMonitoredBarrier), ElementsAre("op", "reduce op"));
  EXPECT_THAT(field_names(CollectiveOp::kAllGatherObject), ElementsAre("op", "reduce op"));
  EXPECT_THAT(field_names(CollectiveOp::kGatherObject), ElementsAre("op", "reduce op", "root"));
  EXPECT_THAT(field_names(CollectiveOp::kScatterObject), ElementsAre("op", "reduce op", "root"));
  for (CollectiveOp op : {CollectiveOp::kBarrier, CollectiveOp::kAllGatherObject,
                          CollectiveOp::kBroadcastObject, CollectiveOp::kAllToAll}) {
    EXPECT_FALSE(shapes_compared(n(op))) << n(op);
  }
}

// broadcast_object_list fills the list in place: lists of other lengths pair the wrong bytes.
TEST(CollectiveOps, BroadcastObjectListComparesItsLength) {
  EXPECT_THAT(field_names(CollectiveOp::kBroadcastObject),
              ElementsAre("op", "reduce op", "root", "list length"));
  common::CollectiveCall c = python_call(CollectiveOp::kBroadcastObject);
  c.count = 5;
  EXPECT_EQ(value_of(CollectiveOp::kBroadcastObject, store::IssueField::kListLength, c), "5");
}

// all_to_all splits may differ in shape by design, not in type or device.
TEST(CollectiveOps, AllToAllComparesTypesAndDevicesNotShapes) {
  EXPECT_THAT(field_names(CollectiveOp::kAllToAll),
              ElementsAre("op", "dtype", "device", "reduce op"));
  common::CollectiveCall a = python_call(CollectiveOp::kAllToAll);
  common::CollectiveCall b = a;
  b.tensor_devices[0] = static_cast<uint8_t>(common::CollectiveDevice::kCuda);
  EXPECT_NE(value_of(CollectiveOp::kAllToAll, store::IssueField::kDevice, a),
            value_of(CollectiveOp::kAllToAll, store::IssueField::kDevice, b));
}

TEST(CollectiveOps, SendAndRecvArePointToPointAndAgreeAsAnOp) {
  EXPECT_TRUE(is_p2p(n(CollectiveOp::kSend)));
  EXPECT_TRUE(is_p2p(n(CollectiveOp::kRecv)));
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kBroadcast,
                          CollectiveOp::kScatter, CollectiveOp::kBarrier}) {
    EXPECT_FALSE(is_p2p(n(op))) << n(op);
  }
  common::CollectiveCall send = python_call(CollectiveOp::kSend);
  common::CollectiveCall recv = python_call(CollectiveOp::kRecv);
  EXPECT_EQ(value_of(CollectiveOp::kSend, store::IssueField::kOp, send), "send/recv");
  EXPECT_EQ(value_of(CollectiveOp::kSend, store::IssueField::kOp, recv), "send/recv");
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kOp,
                     python_call(CollectiveOp::kAllReduce)),
            "all_reduce");
  // The two sides' tensors must match: a send of another shape than the recv expects.
  EXPECT_THAT(field_names(CollectiveOp::kSend),
              ElementsAre("op", "shape", "dtype", "device", "count", "reduce op"));
}

TEST(CollectiveOps, LifetimeOpsAreNotComparedButCommSplitIs) {
  for (CollectiveOp op :
       {CollectiveOp::kGroupStart, CollectiveOp::kGroupEnd, CollectiveOp::kCommInit,
        CollectiveOp::kCommDestroy, CollectiveOp::kCommAbort, CollectiveOp::kCommShrink}) {
    EXPECT_TRUE(is_lifetime(n(op))) << n(op);
    EXPECT_FALSE(compared(n(op))) << n(op);
  }
  EXPECT_TRUE(is_lifetime(n(CollectiveOp::kCommSplit)));
  EXPECT_TRUE(compared(n(CollectiveOp::kCommSplit)));
  EXPECT_THAT(field_names(CollectiveOp::kCommSplit), ElementsAre("op", "reduce op"));
  for (uint16_t op = n(CollectiveOp::kAllReduce); op <= n(CollectiveOp::kDdpGradientAllReduce);
       ++op) {
    EXPECT_FALSE(is_lifetime(op)) << op;
    EXPECT_TRUE(compared(op)) << op;
  }
}

// A blocking call of these that returned while a rank never joined failed; a root's broadcast or
// a send may return before the others join.
TEST(CollectiveOps, OnlyOpsWithoutARootOrPeerCompleteTogether) {
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
        CollectiveOp::kAllToAll, CollectiveOp::kBarrier, CollectiveOp::kMonitoredBarrier,
        CollectiveOp::kAllGatherObject, CollectiveOp::kAllReduceCoalesced,
        CollectiveOp::kDdpGradientAllReduce}) {
    EXPECT_TRUE(completes_together(n(op))) << n(op);
  }
  for (CollectiveOp op : {CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kGather,
                          CollectiveOp::kScatter, CollectiveOp::kSend, CollectiveOp::kRecv,
                          CollectiveOp::kBroadcastObject, CollectiveOp::kBroadcastCoalesced,
                          CollectiveOp::kCommInit}) {
    EXPECT_FALSE(completes_together(n(op))) << n(op);
  }
}

// Where rank-dependent code pairs the wrong data: not rooted ops (`if rank == root:`) nor
// barriers ("rank 0 first").
TEST(CollectiveOps, SymmetricOpsAreThoseEveryRankMakesAlike) {
  for (CollectiveOp op : {CollectiveOp::kAllReduce, CollectiveOp::kAllReduceCoalesced,
                          CollectiveOp::kAllGather, CollectiveOp::kReduceScatter,
                          CollectiveOp::kAllToAll, CollectiveOp::kDdpGradientAllReduce}) {
    EXPECT_TRUE(symmetric(n(op))) << n(op);
  }
  for (CollectiveOp op :
       {CollectiveOp::kBroadcast, CollectiveOp::kReduce, CollectiveOp::kBarrier,
        CollectiveOp::kMonitoredBarrier, CollectiveOp::kSend, CollectiveOp::kAllGatherObject,
        CollectiveOp::kBroadcastCoalesced, CollectiveOp::kCommSplit}) {
    EXPECT_FALSE(symmetric(n(op))) << n(op);
  }
}

// The Python hook's count is its first tensor's, which the shapes tell; NCCL's is all there is.
TEST(CollectiveOps, CountIsComparedForNcclRecordsOnly) {
  common::CollectiveCall python = python_call(CollectiveOp::kAllReduce);
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kCount, python), "");
  common::CollectiveCall nccl = nccl_call(CollectiveOp::kAllReduce, 1024);
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kCount, nccl), "1024");
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kShape, nccl), "");
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kShape, python), "[4, 10]");
}

TEST(CollectiveOps, ReduceOpValueIsItsName) {
  common::CollectiveCall c = nccl_call(CollectiveOp::kAllReduce, 8);
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kRedop, c), "sum");
  c.redop = 2;  // max
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kRedop, c), "max");
  c.redop = common::kRedOpNone;
  EXPECT_EQ(value_of(CollectiveOp::kAllReduce, store::IssueField::kRedop, c), "");
}

TEST(CollectiveOps, CallsReturnEarlyWhenAsyncQueuedOrFromNccl) {
  common::CollectiveCall c = python_call(CollectiveOp::kAllReduce);
  EXPECT_TRUE(is_python(c));
  EXPECT_FALSE(returns_early(c));
  c.flags = common::kCollectiveAsync;
  EXPECT_TRUE(returns_early(c));
  c.flags = common::kCollectiveQueued;
  EXPECT_TRUE(returns_early(c));
  c.flags = common::kCollectiveRaised | common::kCollectiveDefaultGroup;
  EXPECT_FALSE(returns_early(c));
  common::CollectiveCall nccl = nccl_call(CollectiveOp::kAllReduce, 8);
  EXPECT_FALSE(is_python(nccl));
  EXPECT_TRUE(returns_early(nccl));
}

}  // namespace
}  // namespace traindoc::supervisor
