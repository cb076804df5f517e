// The NCCL functions the agent knows, one entry each (an X-macro, as memray and heaptrack keep
// their hooks), for the interposers of every job process (LD_PRELOAD). nccl_hooks.cpp, its only
// includer, makes from it the functions' numbers, names, real types and interposers.
#pragma once

#include <cstddef>

namespace traindoc::agent {

// The stable C ABI of NCCL 2.x (nccl.h): enums are ints, handles are pointers. NCCL's names.
// NOLINTBEGIN(readability-identifier-naming)
using ncclResult_t = int;
using ncclComm_t = struct ncclComm*;
using cudaStream_t = void*;
using ncclConfig_t = void;
struct ncclUniqueId {
  char internal[128];
};
// NOLINTEND(readability-identifier-naming)

}  // namespace traindoc::agent

// One entry per function: how its interposer is made, its name without "nccl", its parameters
// (every one returns ncclResult_t) and, where the body is made here, its arguments and what it
// records (an expression of the parameters, calling nccl_hooks.cpp):
//   BEFORE(name, params, args, what): records `what`, then calls the real function.
//   AFTER(name, params, args, what): calls the real function, then records `what`, in which
//     `result` is what it returned (a communicator exists only once made).
//   CUSTOM(name, params): the body is written by hand in nccl_hooks.cpp, to these parameters.
//   QUERY(name, params): not interposed; the agent asks the real one.
// Adding a function is one entry here (and, where it records something new, a function there).
// clang-format off
#define TRAINDOC_NCCL_FUNCTIONS(BEFORE, AFTER, CUSTOM, QUERY)                                     \
  BEFORE(AllReduce, (const void* send, void* recv, size_t count, int dtype, int op,              \
                     ncclComm_t comm, cudaStream_t stream),                                      \
         (send, recv, count, dtype, op, comm, stream),                                           \
         record(CollectiveOp::kAllReduce, comm, count, dtype, op, -1))                           \
  BEFORE(Broadcast, (const void* send, void* recv, size_t count, int dtype, int root,            \
                     ncclComm_t comm, cudaStream_t stream),                                      \
         (send, recv, count, dtype, root, comm, stream),                                         \
         record(CollectiveOp::kBroadcast, comm, count, dtype, -1, root))                         \
  BEFORE(Bcast, (void* buff, size_t count, int dtype, int root, ncclComm_t comm,                 \
                 cudaStream_t stream),                                                           \
         (buff, count, dtype, root, comm, stream),                                               \
         record(CollectiveOp::kBroadcast, comm, count, dtype, -1, root))                         \
  BEFORE(Reduce, (const void* send, void* recv, size_t count, int dtype, int op, int root,       \
                  ncclComm_t comm, cudaStream_t stream),                                         \
         (send, recv, count, dtype, op, root, comm, stream),                                     \
         record(CollectiveOp::kReduce, comm, count, dtype, op, root))                            \
  BEFORE(AllGather, (const void* send, void* recv, size_t sendcount, int dtype, ncclComm_t comm, \
                     cudaStream_t stream),                                                       \
         (send, recv, sendcount, dtype, comm, stream),                                           \
         record(CollectiveOp::kAllGather, comm, sendcount, dtype, -1, -1))                       \
  BEFORE(ReduceScatter, (const void* send, void* recv, size_t recvcount, int dtype, int op,      \
                         ncclComm_t comm, cudaStream_t stream),                                  \
         (send, recv, recvcount, dtype, op, comm, stream),                                       \
         record(CollectiveOp::kReduceScatter, comm, recvcount, dtype, op, -1))                   \
  BEFORE(AlltoAll, (const void* send, void* recv, size_t count, int dtype, ncclComm_t comm,      \
                    cudaStream_t stream),                                                        \
         (send, recv, count, dtype, comm, stream),                                               \
         record(CollectiveOp::kAllToAll, comm, count, dtype, -1, -1))                            \
  BEFORE(Gather, (const void* send, void* recv, size_t count, int dtype, int root,               \
                  ncclComm_t comm, cudaStream_t stream),                                         \
         (send, recv, count, dtype, root, comm, stream),                                         \
         record(CollectiveOp::kGather, comm, count, dtype, -1, root))                            \
  BEFORE(Scatter, (const void* send, void* recv, size_t count, int dtype, int root,              \
                   ncclComm_t comm, cudaStream_t stream),                                        \
         (send, recv, count, dtype, root, comm, stream),                                         \
         record(CollectiveOp::kScatter, comm, count, dtype, -1, root))                           \
  BEFORE(Send, (const void* send, size_t count, int dtype, int peer, ncclComm_t comm,            \
                cudaStream_t stream),                                                            \
         (send, count, dtype, peer, comm, stream),                                               \
         record_p2p(true, comm, count, dtype, peer))                                             \
  BEFORE(Recv, (void* recv, size_t count, int dtype, int peer, ncclComm_t comm,                  \
                cudaStream_t stream),                                                            \
         (recv, count, dtype, peer, comm, stream),                                               \
         record_p2p(false, comm, count, dtype, peer))                                            \
  BEFORE(GroupStart, (), (), enter_group())                                                      \
  BEFORE(GroupEnd, (), (), leave_group())                                                        \
  BEFORE(GetUniqueId, (ncclUniqueId* id), (id), record_nothing())                                \
  AFTER(CommInitRank, (ncclComm_t* comm, int nranks, ncclUniqueId id, int rank),                 \
        (comm, nranks, id, rank),                                                                \
        add_initialized(result, comm, &id, 1, rank, nranks))                                     \
  AFTER(CommInitRankConfig, (ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,            \
                             ncclConfig_t* config),                                              \
        (comm, nranks, id, rank, config),                                                        \
        add_initialized(result, comm, &id, 1, rank, nranks))                                     \
  AFTER(CommInitRankScalable, (ncclComm_t* comm, int nranks, int rank, int nids,                 \
                               ncclUniqueId* ids, ncclConfig_t* config),                         \
        (comm, nranks, rank, nids, ids, config),                                                 \
        add_initialized(result, comm, ids, nids, rank, nranks))                                  \
  AFTER(CommInitAll, (ncclComm_t* comms, int ndev, const int* devlist),                          \
        (comms, ndev, devlist),                                                                  \
        add_clique(result, comms, ndev))                                                         \
  CUSTOM(CommSplit, (ncclComm_t comm, int color, int key, ncclComm_t* newcomm,                   \
                     ncclConfig_t* config))                                                      \
  CUSTOM(CommShrink, (ncclComm_t comm, int* exclude, int exclude_count, ncclComm_t* newcomm,     \
                      ncclConfig_t* config, int flags))                                          \
  BEFORE(CommDestroy, (ncclComm_t comm), (comm),                                                 \
         record_lifetime(CollectiveOp::kCommDestroy, comm))                                      \
  BEFORE(CommAbort, (ncclComm_t comm), (comm),                                                   \
         record_lifetime(CollectiveOp::kCommAbort, comm))                                        \
  QUERY(CommUserRank, (ncclComm_t comm, int* rank))                                              \
  QUERY(CommCount, (ncclComm_t comm, int* count))                                                \
  QUERY(CommGetAsyncError, (ncclComm_t comm, ncclResult_t* state))
// clang-format on
