// The fuzzer's bytes as a run.db file, for the targets that read run.db as `traindoc analyze`
// does. libFuzzer process, one input at a time.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace traindoc::fuzz {

// Never destroyed: the removal at exit needs it.
inline const std::string& run_db_path() {
  static const std::string& path = *[] {
    std::string dir = (std::filesystem::temp_directory_path() / "fuzz-store-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) abort();
    std::atexit(
        [] { std::filesystem::remove_all(std::filesystem::path(run_db_path()).parent_path()); });
    return new std::string(dir + "/run.db");
  }();
  return path;
}

// Writes the input as run.db, with no journal of an earlier input beside it; returns its path.
inline const std::string& write_run_db(const uint8_t* data, size_t size) {
  const std::string& path = run_db_path();
  for (const char* suffix : {"-wal", "-shm"}) unlink((path + suffix).c_str());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) abort();
  return path;
}

}  // namespace traindoc::fuzz
