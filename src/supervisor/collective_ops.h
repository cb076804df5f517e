// What a collective op is and what ranks' calls of it must agree in: which ops are compared,
// rooted, point-to-point or complete on every rank together, and the fields compared for each.
// Supervisor process, main loop thread (the collective checker). Pure: no state, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/layout.h"
#include "store/evidence.h"

namespace traindoc::supervisor {

// NCCL group calls and communicator lifetime (comm init, split, destroy, ...).
bool is_lifetime(uint16_t op);
// Whether the ranks' k-th calls of this op are compared: every op but the lifetime ones, except
// a comm split, which every rank of the parent makes alike.
bool compared(uint16_t op);
// send and recv, made on the pair group of sender and receiver.
bool is_p2p(uint16_t op);
// Ops that return on no rank before every rank has joined: one that returned while a rank never
// joined failed (a timeout, a closed connection). A root's broadcast or a send may return first.
bool completes_together(uint16_t op);
// Ops with a root: broadcast, reduce, gather, scatter and their object variants.
bool rooted(uint16_t op);
// Ops that every rank makes alike, with no root or peer, and whose results depend on what each
// rank passes: the same call from different places pairs the wrong data.
bool symmetric(uint16_t op);
// Whether the tensors' shapes, types, devices and count are compared: not where they may differ
// across ranks by design (all_to_all splits, object payloads) or where there are none (barriers).
bool shapes_compared(uint16_t op);

// A call recorded by the Python hook (not by the NCCL interposers).
bool is_python(const common::CollectiveCall& call);
// Whether the call's return says nothing of its peers: it returns once issued (async_op=True,
// isend/irecv) or once queued (NCCL, CUDA tensors), and completes later, out of sight.
bool returns_early(const common::CollectiveCall& call);

// One thing the ranks' calls must agree in, and its value in a call ("" where that call's source
// does not record it).
struct CallField {
  store::IssueField field;
  std::string (*value)(const common::CollectiveCall&);
};

// What must agree for calls of `op`, in the order a user should hear about it. A field whose
// value is "" on every rank agrees.
std::vector<CallField> fields_of(uint16_t op);

}  // namespace traindoc::supervisor
