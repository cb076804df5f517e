// The caching allocator's state at an out-of-memory error, read into a verdict and words.
// Pure.
#include "analysis/allocator_facts.h"

#include <filesystem>

#include "analysis/diagnosis.h"

namespace traindoc::analysis {
namespace {

// A traceback is printed after the observer ran, within moments; a reading much older belongs to
// an earlier error the job caught.
constexpr int64_t kPrintedWithinNs = 10'000'000'000;

// The free cached bytes: reserved but not allocated, else the free blocks' sum.
std::optional<uint64_t> cached_free(const store::AllocatorState& s) {
  if (s.reserved && s.allocated && *s.reserved >= *s.allocated) return *s.reserved - *s.allocated;
  return s.inactive;
}

std::string percent_of(uint64_t part, uint64_t whole) {
  return whole == 0 ? "" : " (" + std::to_string(part * 100 / whole) + "%)";
}

std::string site_words(const store::AllocationSite& site) {
  std::string sizes = site.largest == site.smallest ? " of " + format_bytes(site.largest)
                                                    : " of " + format_bytes(site.smallest) +
                                                          " to " + format_bytes(site.largest);
  return std::filesystem::path(site.file).filename().string() + ":" + std::to_string(site.line) +
         (site.function.empty() ? "" : " in " + site.function) + " " + format_bytes(site.bytes) +
         " in " + std::to_string(site.blocks) + (site.blocks == 1 ? " block" : " blocks") + sizes;
}

}  // namespace

AllocatorVerdict allocator_verdict(const store::AllocatorState& s) {
  std::optional<uint64_t> free = cached_free(s);
  if (!free || !s.requested) return AllocatorVerdict::kUnknown;
  // A fiftieth of the pool at least: less is a sliver of a full GPU, as the signature's test.
  bool held = *free >= *s.requested && *free * 50 >= s.reserved.value_or(*free);
  if (held && s.largest_free && *s.largest_free < *s.requested)
    return AllocatorVerdict::kFragmented;
  return held && !s.largest_free ? AllocatorVerdict::kUnknown : AllocatorVerdict::kLiveTensors;
}

std::vector<std::string> allocator_evidence(const store::AllocatorState& s,
                                            const std::string& where) {
  std::vector<std::string> out;
  std::string line = "PyTorch's allocator on " + where + " at the error (its own reading):";
  std::string parts;
  auto add = [&](const std::string& part) { parts += (parts.empty() ? " " : ", ") + part; };
  uint64_t reserved = s.reserved.value_or(0);
  if (s.allocated)
    add("live tensors " + format_bytes(*s.allocated) + percent_of(*s.allocated, reserved));
  if (std::optional<uint64_t> free = cached_free(s)) {
    add("free cached blocks " + format_bytes(*free) + percent_of(*free, reserved));
  }
  if (s.reserved) add("reserved " + format_bytes(*s.reserved));
  std::string request = s.requested ? "a request of " + format_bytes(*s.requested) : "";
  if (s.largest_free) {
    add("the largest free block " + format_bytes(*s.largest_free) +
        (request.empty() ? "" : " for " + request));
  } else if (!request.empty()) {
    add("for " + request);
  }
  switch (allocator_verdict(s)) {
    case AllocatorVerdict::kFragmented:
      add("fragmented: the free blocks together would hold the request, none alone does");
      break;
    case AllocatorVerdict::kLiveTensors:
      add("live tensors filled it: the free blocks together could not hold the request");
      break;
    case AllocatorVerdict::kUnknown:
      break;
  }
  out.push_back(line + parts);
  std::string more;
  auto add_more = [&](const std::string& part) { more += (more.empty() ? "" : ", ") + part; };
  if (s.inactive_split) add_more("free parts of split blocks " + format_bytes(*s.inactive_split));
  if (s.pending_free && *s.pending_free > 0) {
    add_more("freed but still in use by another stream " + format_bytes(*s.pending_free));
  }
  if (s.segments) add_more(std::to_string(*s.segments) + " segments");
  if (s.alloc_retries) {
    add_more(std::to_string(*s.alloc_retries) + " cache flushes and retries before this error");
  }
  if (s.ooms) add_more(std::to_string(*s.ooms) + " out-of-memory errors in the process so far");
  if (s.device_free) add_more("the driver had " + format_bytes(*s.device_free) + " free");
  if (!more.empty()) out.push_back("allocator on " + where + ": " + more);
  if (!s.sites.empty()) {
    std::string sites;
    for (const store::AllocationSite& site : s.sites) {
      sites += (sites.empty() ? "" : "; ") + site_words(site);
    }
    out.push_back("live allocations by site (allocation history): " + sites);
  }
  if (!s.snapshot.empty()) {
    out.push_back("allocator snapshot with its history: " + s.snapshot +
                  " in the run folder (open it at https://pytorch.org/memory_viz)");
  } else if (!s.history) {
    out.push_back(
        "no allocation history was recorded: traindoc run --memory-history saves a snapshot "
        "and names the lines that allocated the live memory");
  }
  return out;
}

const store::AllocatorState* allocator_state_before(
    const store::Evidence& evidence, int pid, int64_t t_ns,
    const std::set<const store::AllocatorState*>& taken) {
  const store::AllocatorState* found = nullptr;
  for (const store::AllocatorState& s : evidence.allocator_states) {
    if (s.pid == pid && s.t_ns <= t_ns && s.t_ns + kPrintedWithinNs >= t_ns &&
        !taken.contains(&s)) {
      found = &s;
    }
  }
  return found;
}

}  // namespace traindoc::analysis
