// `traindoc check [--json] [-- CMD ...]`: the traps of this machine, and of the command when one
// is given, before the job starts: the preflight checks' results, grouped "will fail" and "may
// fail". Supervisor process, main thread. Exits 1 when something will fail, so that a job script
// can gate on it; starts nothing of the command.
#include <cstdio>

#include "analysis/preflight_checks.h"
#include "cli/commands.h"
#include "report/check_report.h"
#include "report/json_report.h"
#include "supervisor/preflight/preflight_probe.h"

namespace traindoc::cli {

int check_command(const CheckArgs& args) {
  supervisor::GpuSampler gpu;
  store::PreflightFacts facts = supervisor::probe_preflight(args.command, gpu);
  std::vector<store::PreflightResult> results = analysis::preflight_checks(facts);
  std::string text = args.json ? report::json_dump(report::check_json(facts, results), 2) + "\n"
                               : report::render_check(results);
  fputs(text.c_str(), stdout);
  for (const store::PreflightResult& r : results) {
    if (r.verdict == store::Verdict::kWillFail) return kCheckWillFail;
  }
  return 0;
}

}  // namespace traindoc::cli
