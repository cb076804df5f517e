// libFuzzer target: read_evidence on a run.db made of the input's bytes, as `traindoc analyze`
// meets a damaged, cut or forged run folder. A StoreError is an answer; any other exception, a
// crash or a sanitizer report is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "store/store_reader.h"

using namespace traindoc::store;

namespace {

// Never destroyed: the removal at exit needs it.
const std::string& db_path() {
  static const std::string& path = *[] {
    std::string dir = (std::filesystem::temp_directory_path() / "fuzz-store-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) abort();
    std::atexit(
        [] { std::filesystem::remove_all(std::filesystem::path(db_path()).parent_path()); });
    return new std::string(dir + "/run.db");
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = db_path();
  for (const char* suffix : {"-wal", "-shm"}) unlink((path + suffix).c_str());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) abort();
  }
  try {
    (void)read_evidence(path);
  } catch (const StoreError&) {
  }
  return 0;
}
