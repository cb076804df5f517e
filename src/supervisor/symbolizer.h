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
#include "store/memory_map.h"

namespace traindoc::supervisor {

// One line of /proc/<pid>/maps.
using MappedModule = store::MemoryMapping;

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

}  // namespace traindoc::supervisor
