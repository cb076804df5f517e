// Rule: the traps the preflight checks found as the run started (run.db's preflight_checks):
// a preflight-<check> warning each, and, where the job then failed the way the trap makes jobs
// fail, that failure cites the trap as its cause (a Bus error in /dev/shm after "/dev/shm has
// 64 MiB free"). Runs last, on the findings of every rule before it. Pure.
#include <algorithm>
#include <initializer_list>
#include <utility>

#include "analysis/preflight_checks.h"
#include "analysis/rules.h"

namespace traindoc::analysis {
namespace {

using store::PreflightCheck;

// The failures each trap leads to.
struct Trap {
  PreflightCheck check;
  std::initializer_list<FindingKind> failures;
};

const Trap kTraps[] = {
    {PreflightCheck::kShmMissing, {FindingKind::kShmExhausted, FindingKind::kBusError}},
    {PreflightCheck::kShmSmall, {FindingKind::kShmExhausted, FindingKind::kBusError}},
    {PreflightCheck::kGpuMemoryTaken, {FindingKind::kGpuOom, FindingKind::kGpuFragmentation}},
    {PreflightCheck::kGpuExclusiveTaken, {FindingKind::kCudaUnavailable}},
    {PreflightCheck::kGpuProhibited, {FindingKind::kCudaUnavailable}},
    {PreflightCheck::kVisibleDevicesInvalid, {FindingKind::kCudaUnavailable}},
    {PreflightCheck::kRanksExceedGpus, {FindingKind::kCudaUnavailable}},
    {PreflightCheck::kTorchCudaNewer, {FindingKind::kCudaUnavailable}},
    {PreflightCheck::kHostMemoryLow, {FindingKind::kHostOomKilled, FindingKind::kHostAllocFailed}},
    {PreflightCheck::kCgroupMemoryLow,
     {FindingKind::kHostOomKilled, FindingKind::kHostAllocFailed}},
    {PreflightCheck::kNofileLow, {FindingKind::kFdExhausted}},
    {PreflightCheck::kStackSmall, {FindingKind::kStackOverflow}},
    {PreflightCheck::kTorchrunRedirects, {FindingKind::kLauncherBug}},
    {PreflightCheck::kMasterAddrUnresolved,
     {FindingKind::kNetworkUnreachable, FindingKind::kRendezvousTimeout}},
    {PreflightCheck::kMasterPortInvalid, {FindingKind::kPythonException}},
    {PreflightCheck::kRendezvousPortMissing, {FindingKind::kPythonException}},
    {PreflightCheck::kMasterPortTaken, {FindingKind::kPortInUse}},
    {PreflightCheck::kMasterPortUnreachable,
     {FindingKind::kNetworkUnreachable, FindingKind::kRendezvousTimeout}},
    {PreflightCheck::kSocketIfnameMissing, {FindingKind::kNetworkUnreachable}},
};

bool leads_to(PreflightCheck check, FindingKind failure) {
  return std::any_of(std::begin(kTraps), std::end(kTraps), [&](const Trap& trap) {
    return trap.check == check &&
           std::find(trap.failures.begin(), trap.failures.end(), failure) != trap.failures.end();
  });
}

}  // namespace

void rule_preflight(const RuleContext& context, std::vector<TimedFinding>& out) {
  const store::Evidence& evidence = context.evidence;
  std::vector<TimedFinding> found;
  for (const store::PreflightResult& result : evidence.preflight) {
    PreflightWords words = describe(result);
    bool will_fail = result.verdict == store::Verdict::kWillFail;
    for (TimedFinding& failure : out) {
      if (failure.finding.severity != Severity::kError ||
          !leads_to(result.check, failure.finding.kind)) {
        continue;
      }
      failure.finding.evidence.push_back(
          "the cause, which traindoc's check found as the run "
          "started: " +
          words.title);
    }
    Finding f;
    f.kind = preflight_kind(result.check);
    f.severity = Severity::kWarning;
    f.title = "before the job started: " + words.title;
    f.evidence.push_back(std::string("traindoc's check as the run started") +
                         (will_fail ? " (will fail)" : " (may fail)") + ": " +
                         std::string(to_string(result.check)));
    if (result.pid) f.pids = {*result.pid};
    f.fix = words.fix;
    f.confidence = will_fail ? 0.8 : 0.5;
    found.push_back({std::move(f), evidence.preflight_ns, 0});
  }
  for (TimedFinding& timed : found) out.push_back(std::move(timed));
}

}  // namespace traindoc::analysis
