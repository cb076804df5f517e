// The rules in the order they run (rules.h): adding a rule is its file and one line here, in the
// phase of what it needs to have been found before it. Pure.
#include <iterator>

#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

using enum RulePhase;

constexpr Rule kRules[] = {
    // Crash records first: the signals and exits that follow a crash are its consequences.
    {"native_crash", kProcessEnds, rule_native_crash},
    // Before rule_killed, which leaves the processes a stop ended to it.
    {"stop_request", kProcessEnds, rule_stop_request},
    {"killed", kProcessEnds, rule_killed},
    // Before rule_failed_exit, which leaves the processes they explained alone.
    {"gpu_oom", kGpuFailures, rule_gpu_oom},
    {"cuda_error", kGpuFailures, rule_cuda_error},
    {"failed_exit", kExceptions, rule_failed_exit},
    {"thread_exception", kExceptions, rule_thread_exception},
    {"framework_warning", kExceptions, rule_framework_warning},
    {"peer_exited", kCauses, rule_peer_exited},
    // After the rules that find a process out of memory, which a leak before it then explains.
    {"memory_leak", kCauses, rule_memory_leak},
    {"gpu_placement", kJob, rule_gpu_placement},
    {"hardware_fault", kJob, rule_hardware_fault},
    {"collectives", kJob, rule_collectives},
    {"idle", kJob, rule_idle},
    // Last: a failure found by any rule above may be a trap's consequence.
    {"preflight", kJob, rule_preflight},
};

constexpr bool in_phase_order() {
  for (size_t i = 1; i < std::size(kRules); ++i) {
    if (kRules[i].phase < kRules[i - 1].phase) return false;
  }
  return true;
}
static_assert(in_phase_order(), "the rule table lists its rules phase by phase");

}  // namespace

std::span<const Rule> rule_table() {
  return kRules;
}

}  // namespace traindoc::analysis
