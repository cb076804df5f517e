// libFuzzer target: the log tap's line splitter on a job's output. The first byte of the input
// chooses where the rest is cut into chunks, as reads from a pipe cut it anywhere; the lines cited
// must be the same as when it comes in one piece, and as the plain definition says, and the
// one-pass anchor search must agree with the plain one.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "supervisor/line_splitter.h"
#include "supervisor/log_anchors.h"

using namespace traindoc;
using namespace traindoc::supervisor;

namespace {

const std::string kStream = "stderr";

std::vector<store::LogLine> split(std::string_view output, uint32_t cut_seed, uint64_t& lines) {
  LineSplitter splitter;
  std::vector<store::LogLine> cited;
  uint32_t state = cut_seed * 2654435761u + 1;
  while (!output.empty()) {
    size_t size = output.size();
    if (cut_seed != 0) {
      state ^= state << 13;
      state ^= state >> 17;
      state ^= state << 5;
      size = 1 + state % (size_t{1} << (state >> 28));  // 1 byte to 32 KiB
    }
    size = std::min(size, output.size());
    splitter.scan(output.substr(0, size), kStream, 0, cited);
    output.remove_prefix(size);
  }
  splitter.end_partial(kStream, 0, cited);
  lines = splitter.lines();
  return cited;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view output(reinterpret_cast<const char*>(data) + 1, size - 1);

  uint64_t whole_lines = 0;
  uint64_t cut_lines = 0;
  std::vector<store::LogLine> whole = split(output, 0, whole_lines);
  std::vector<store::LogLine> cut = split(output, data[0] + 1u, cut_lines);
  if (whole_lines != cut_lines || whole != cut) abort();
  uint64_t defined_lines = 0;
  if (cited_by_definition(output, kStream, 0, defined_lines) != whole ||
      defined_lines != whole_lines) {
    abort();
  }

  std::string_view rest = output;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (worth_keeping(line) != worth_keeping_by_search(line)) abort();
  }
  return 0;
}
