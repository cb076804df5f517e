// Reads files whose size traindoc does not control (what a job process wrote into the run folder,
// a process's memory map) without letting one of them fill the supervisor's memory. Supervisor
// process, main loop thread.
#pragma once

#include <cstddef>
#include <string>

namespace traindoc::supervisor {

// A process's memory map: a line a mapping, thousands of lines at most.
inline constexpr size_t kMapsMaxBytes = size_t{64} << 20;

// The file, or its first `limit` bytes and a little more once it is longer; "" when it cannot be
// read, and for a link (a job writes the run folder).
std::string read_file_text(const std::string& path, size_t limit);

// The first `limit` bytes of a regular file, following links (a Python on PATH, a launcher's
// script); "" when it cannot be read. Never blocks on a FIFO.
std::string read_file_head(const std::string& path, size_t limit);

}  // namespace traindoc::supervisor
