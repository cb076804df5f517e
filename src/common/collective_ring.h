// The one writer of collective records: claims a ring entry, copies a filled record into it and
// publishes it. Job processes (agent: Python hook entry points, NCCL interposers), any thread.
// Header-only so that the benchmark measures exactly the agent's code; lock-free, no allocation.
#pragma once

#include <cstring>

#include "common/layout.h"

namespace traindoc::common {

// Claims the next entry for writing; nullptr when another writer holds it (claim_entry: the
// record is lost rather than mixed with another, and the reader counts what it never saw).
// Multi-producer, never blocks.
inline CollectiveCall* claim_collective(CollectiveRing& ring, uint64_t& pos) {
  pos = ring.next.fetch_add(1, std::memory_order_relaxed);
  CollectiveRecord& record = ring.records[pos % kCollectiveRecords];
  return claim_entry(record.seq, pos + 1) ? &record.call : nullptr;
}

// Publishes the entry claimed at `pos`: the reader sees all of it or none.
inline void publish_collective(CollectiveRing& ring, uint64_t pos) {
  CollectiveRecord& record = ring.records[pos % kCollectiveRecords];
  record.pos = pos;
  publish_entry(record.seq, pos + 1);
}

// Appends a whole call.
inline void append_collective(CollectiveRing& ring, const CollectiveCall& call) {
  uint64_t pos = 0;
  if (CollectiveCall* entry = claim_collective(ring, pos)) {
    *entry = call;
    publish_collective(ring, pos);
  }
}

// Copies `text` into a call's call-site field, keeping its tail when too long (the file name
// matters more than the folders). Async-signal-safe.
inline void set_call_site(CollectiveCall& call, const char* text, size_t length) {
  if (length >= kCallSiteSize) {
    text += length - (kCallSiteSize - 1);
    length = kCallSiteSize - 1;
  }
  memcpy(call.site, text, length);
  call.site[length] = '\0';
}

}  // namespace traindoc::common
