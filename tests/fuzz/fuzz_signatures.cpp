// libFuzzer target: the signature matcher on one line of a job's output, as the log tap keeps it
// (any bytes, at most 4 KiB), with every helper it is built on.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "analysis/signatures.h"

using namespace traindoc::analysis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);

  LinePrefix prefix = strip_launcher_prefix(line);
  // Both are views into the line: the text is what follows the prefixes.
  if (!line.ends_with(prefix.text) || prefix.prefix.size() > line.size()) abort();

  for (const SignatureMatch& match : match_line(line)) {
    if (find_signature(match.id) == nullptr) abort();
  }
  (void)parse_size(line);
  for (bool strict : {true, false}) {
    if (std::optional<ExceptionLine> exception = parse_exception_line(line, strict)) {
      if (exception->type.empty()) abort();
    }
  }
  return 0;
}
