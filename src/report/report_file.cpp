// Whole-or-nothing writes of the report files. Any process (the supervisor at the end of a run,
// `traindoc analyze`). Everything is done relative to the run folder's descriptor, so that the
// folder cannot be swapped for another between the temporary's creation and its rename.
#include "report/report_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "common/file_descriptor.h"
#include "common/write_all.h"

namespace traindoc::report {
namespace {

// Attempts at a fresh temporary name: each is 64 random bits, so only a name planted on purpose
// (or a broken random source) is ever taken.
constexpr int kNameAttempts = 100;

// Why a step failed, as errno said it.
[[noreturn]] void fail(const std::string& path, std::string_view step, int error) {
  throw std::runtime_error(fmt::format("cannot write {}: {}: {}", path, step, strerror(error)));
}

uint64_t random_bits(int attempt) {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, 0) == static_cast<ssize_t>(sizeof bits)) return bits;
  // O_EXCL keeps a foreseeable name safe; it only makes a planted one block this write.
  auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return now ^ (static_cast<uint64_t>(getpid()) << 32) ^ static_cast<uint64_t>(attempt);
}

}  // namespace

void write_report_file(const std::string& run_dir, std::string_view name, std::string_view text) {
  std::string path = fmt::format("{}/{}", run_dir, name);
  common::FileDescriptor dir(open(run_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) fail(path, "open the folder", errno);

  std::string temporary;
  int fd = -1;
  for (int attempt = 0; attempt < kNameAttempts && fd < 0; ++attempt) {
    temporary = fmt::format(".{}.{:016x}.tmp", name, random_bits(attempt));
    fd = openat(dir.get(), temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                S_IRUSR | S_IWUSR);
    if (fd < 0 && errno != EEXIST) fail(path, "create a temporary file", errno);
  }
  if (fd < 0) fail(path, "create a temporary file", EEXIST);

  common::FileDescriptor file(fd);
  try {
    if (!common::write_all(file.get(), text.data(), text.size())) fail(path, "write", errno);
    // On disk before the rename: after a crash of the machine, the old report or the new one.
    if (fsync(file.get()) != 0) fail(path, "fsync", errno);
    if (file.close() != 0) fail(path, "close", errno);
    if (renameat(dir.get(), temporary.c_str(), dir.get(), std::string(name).c_str()) != 0) {
      fail(path, "rename", errno);
    }
  } catch (...) {
    file.close();
    unlinkat(dir.get(), temporary.c_str(), 0);
    throw;
  }
}

}  // namespace traindoc::report
