// libFuzzer target: the Python traceback reader on the lines kept of a job's output, and the
// signatures of each traceback it finds. The input is lines ('\n'); a line that starts with
// '\x01' is on stdout rather than stderr, and one that is "\x02" alone is a gap of lines that
// were not kept, as the log tap leaves them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "analysis/traceback.h"

using namespace traindoc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<store::LogLine> lines;
  uint64_t numbers[2] = {0, 0};
  int64_t t_ns = 1'000'000'000;
  while (!rest.empty()) {
    size_t end = rest.find('\n');
    std::string_view text = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (text == "\x02") {
      numbers[0] += 5;
      numbers[1] += 5;
      continue;
    }
    bool out = text.starts_with('\x01');
    if (out) text.remove_prefix(1);
    t_ns += 1'000'000;
    lines.push_back({t_ns, out ? "stdout" : "stderr", ++numbers[out ? 1 : 0], std::string(text)});
  }

  std::vector<analysis::PythonTraceback> tracebacks = analysis::parse_tracebacks(lines);
  for (const analysis::PythonTraceback& traceback : tracebacks) {
    for (std::optional<size_t> link : {traceback.cause, traceback.context, traceback.original}) {
      if (link && *link >= tracebacks.size()) abort();
    }
    if (traceback.first_line > traceback.last_line) abort();
    (void)analysis::match_traceback(traceback);
    for (const analysis::PythonFrame& frame : traceback.frames) {
      (void)analysis::is_library_file(frame.file);
    }
  }
  for (const store::LogLine& line : lines) {
    (void)analysis::log_record_level(line.text);
    (void)analysis::is_python_warning(line.text);
  }
  return 0;
}
