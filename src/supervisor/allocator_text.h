// Reads the caching allocator's state at an out-of-memory error, as the Python hook wrote it to
// the run folder (common::kAllocatorStateFile): outside input, whatever a job process left there.
// Supervisor process, main loop thread.
#pragma once

#include <cstddef>
#include <string_view>

#include "store/allocator_state.h"

namespace traindoc::supervisor {

inline constexpr size_t kAllocatorStateMaxBytes = 64 << 10;
inline constexpr size_t kAllocatorSitesMax = 10;
inline constexpr size_t kAllocatorNameMax = 512;  // a site's file or function, cut there

// Fills `state`'s numbers from "name<TAB>value" lines (device, requested, device_free,
// allocated, reserved, inactive_split, alloc_retries, ooms, segments, active_allocated,
// pending_free, inactive, largest_free, history) and its sites from
// "site<TAB>bytes<TAB>blocks<TAB>largest<TAB>smallest<TAB>line<TAB>function<TAB>file" lines, at
// most kAllocatorSitesMax, largest first. A line of another form, a name it does not know and a
// value that is not a number in range are skipped. The pid, number, time and snapshot are the
// caller's.
void allocator_text(std::string_view text, store::AllocatorState& state);

}  // namespace traindoc::supervisor
