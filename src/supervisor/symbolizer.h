// Turns the raw native addresses of a crashed job process into module, function, file:line and
// inlined chain, from the /proc/<pid>/maps text captured while it lived and the files on disk.
// Supervisor process (crash records, `traindoc analyze`), any one thread per Symbolizer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "store/evidence.h"

namespace traindoc::supervisor {

// One line of /proc/<pid>/maps.
struct MappedModule {
  uint64_t start = 0;
  uint64_t end = 0;     // one past the last byte
  uint64_t offset = 0;  // file offset mapped at start
  uint64_t inode = 0;
  std::string perms;  // "r-xp"
  // The mapped file without the " (deleted)" suffix; "" for anonymous memory; pseudo names as
  // the kernel writes them ("[stack]", "[heap]", "[vdso]", "[anon:name]").
  std::string path;
  bool deleted = false;

  bool operator==(const MappedModule&) const = default;
};

// Total: lines that do not parse are skipped. Sorted by start.
std::vector<MappedModule> parse_maps(std::string_view maps);

struct SymbolizerOptions {
  // Where separate debug files are looked for: <root>/.build-id/xx/yyyy.debug and
  // <root>/<directory of the file>/<.gnu_debuglink name>, besides <dir>/ and <dir>/.debug/.
  // Never debuginfod: symbolizing a crash must not reach the network.
  std::vector<std::string> debug_roots = {"/usr/lib/debug"};
};

// Caches each opened ELF file (and its DWARF) by path across calls; a file whose size, mtime or
// inode changed on disk is opened again. Never throws for bad input; a file that cannot be read
// (missing, deleted, not ELF, corrupt, changed since it was mapped) gives frames with the module
// path and offset but no function.
class Symbolizer {
 public:
  explicit Symbolizer(SymbolizerOptions options = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // One frame per address, innermost first, with the maps of the crashed process. `first_is_pc`:
  // addresses[0] is an exact pc; the others are return addresses, so function and file:line are
  // looked up at address - 1 (the call), while module_offset and function_offset stay relative
  // to the address itself.
  std::vector<store::NativeFrame> symbolize(std::string_view maps,
                                            const std::vector<uint64_t>& addresses,
                                            bool first_is_pc = true);
  std::vector<store::NativeFrame> symbolize(const std::vector<MappedModule>& maps,
                                            const std::vector<uint64_t>& addresses,
                                            bool first_is_pc = true);

  // Fills crash.frames (addresses already there) from crash.maps; frames[0] counts as the exact
  // pc when it equals crash.pc.
  void symbolize_crash(store::Crash& crash);

  size_t cached_files() const;
  void clear();

 private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// True for the modules a crash is rarely the fault of: the C and C++ runtimes (libc, libm,
// libpthread, libdl, librt, ld-linux, libstdc++, libgcc_s), the Python interpreter (python3*,
// libpython*) and traindoc's own agent.
bool is_runtime_module(std::string_view module);

// The frame to blame: the innermost one in a module that is neither a runtime module nor
// anonymous or pseudo memory ("", "[stack]", "[vdso]", ...); -1 when there is none.
int blame_frame(const std::vector<store::NativeFrame>& frames);

}  // namespace traindoc::supervisor
