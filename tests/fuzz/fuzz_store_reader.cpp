// libFuzzer target: read_evidence on a run.db made of the input's bytes, as `traindoc analyze`
// meets a damaged, cut or forged run folder. A StoreError is an answer; any other exception, a
// crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>

#include "run_db_input.h"
#include "store/store_reader.h"

using namespace traindoc::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = traindoc::fuzz::write_run_db(data, size);
  try {
    (void)read_evidence(path);
  } catch (const StoreError&) {
  }
  return 0;
}
