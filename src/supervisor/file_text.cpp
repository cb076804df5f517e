// Bounded file reads. Supervisor process, main loop thread.
#include "supervisor/file_text.h"

#include <fstream>

namespace traindoc::supervisor {

std::string read_file_text(const std::string& path, size_t limit) {
  std::ifstream in(path, std::ios::binary);
  std::string text;
  char chunk[1 << 16];
  while (text.size() <= limit && in.read(chunk, sizeof(chunk)).gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
  }
  return text;
}

}  // namespace traindoc::supervisor
