// libFuzzer target: `traindoc analyze` on a run.db made of the input's bytes, past the reading:
// the diagnosis of the evidence read, then every report writer (JSON, terminal summary and
// verdict, HTML) into memory. run.db's values are whatever the file holds (times at int64's
// limits, an end before its start); only the reader's StoreError may be thrown.
#include <cstddef>
#include <cstdint>

#include "analysis/diagnosis.h"
#include "report/html_report.h"
#include "report/json_report.h"
#include "report/terminal.h"
#include "run_db_input.h"
#include "store/store_reader.h"

using namespace traindoc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  store::Evidence evidence;
  try {
    evidence = store::read_evidence(fuzz::write_run_db(data, size));
  } catch (const store::StoreError&) {
    return 0;
  }
  analysis::Diagnosis diagnosis = analysis::diagnose(evidence);
  (void)report::json_text(diagnosis);
  (void)report::render_summary(diagnosis, "run", {.max_rows = 24, .colour = true});
  (void)report::render_verdict(diagnosis, "run");
  (void)report::render_html(diagnosis, evidence);
  (void)report::shell_status(diagnosis.run);
  return 0;
}
