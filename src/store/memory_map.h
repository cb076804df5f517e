// A process's memory map as /proc/<pid>/maps writes it: part of a crash's evidence, read by the
// symbolizer (supervisor) and by the crash classification (analysis). Pure text parsing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace traindoc::store {

struct MemoryMapping {
  uint64_t start = 0;
  uint64_t end = 0;     // one past the last byte
  uint64_t offset = 0;  // file offset mapped at start
  uint64_t inode = 0;
  std::string perms;  // "r-xp"
  // The mapped file without the " (deleted)" suffix; "" for anonymous memory; pseudo names as
  // the kernel writes them ("[stack]", "[heap]", "[vdso]", "[anon:name]").
  std::string path;
  bool deleted = false;

  bool contains(uint64_t address) const { return address >= start && address < end; }
  bool operator==(const MemoryMapping&) const = default;
};

// Sorted by start address; malformed lines are skipped.
std::vector<MemoryMapping> parse_maps(std::string_view maps);

// The mapping holding `address`, or nullptr.
const MemoryMapping* find_mapping(const std::vector<MemoryMapping>& maps, uint64_t address);

}  // namespace traindoc::store
