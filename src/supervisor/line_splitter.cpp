// The log tap's line splitter. Supervisor process, the log tap's thread. It never copies a line
// that a chunk holds whole, so output passes at pipe speed.
#include "supervisor/line_splitter.h"

#include <algorithm>
#include <cstring>

#include "supervisor/log_anchors.h"

namespace traindoc::supervisor {
namespace {

constexpr size_t kLineKept = 4096;
constexpr uint64_t kFirstLines = 100;

}  // namespace

std::string_view shown_line(std::string_view line) {
  // A carriage return right before the newline only ends the line.
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t cr = line.rfind('\r');
  return (cr == std::string_view::npos ? line : line.substr(cr + 1)).substr(0, kLineKept);
}

bool worth_citing(uint64_t number, std::string_view shown) {
  return number <= kFirstLines || worth_keeping(shown);
}

// A line whole in the chunk is looked at where it lies; only a line cut by the chunk's end is
// copied, so that the next chunk can finish it.
uint64_t LineSplitter::scan(std::string_view chunk, const std::string& stream, int64_t t_ns,
                            std::vector<store::LogLine>& cited) {
  const char* data = chunk.data();
  const char* end = data + chunk.size();
  uint64_t lines = 0;
  while (data < end) {
    const char* newline =
        static_cast<const char*>(memchr(data, '\n', static_cast<size_t>(end - data)));
    const char* stop = newline != nullptr ? newline : end;
    std::string_view piece(data, static_cast<size_t>(stop - data));
    if (newline != nullptr && m_partial.empty()) {
      end_line(piece, stream, t_ns, cited);
    } else {
      // A redraw starts the kept line again, so that a progress bar drawn for hours without a
      // newline leaves its last state, and whatever is printed after it, not its first 4 KiB.
      // A carriage return that ended the previous read redraws only if text follows it.
      if (!piece.empty() && m_partial.ends_with('\r')) m_partial.clear();
      size_t cr = piece.size() < 2 ? std::string_view::npos : piece.rfind('\r', piece.size() - 2);
      if (cr != std::string_view::npos) {
        m_partial.clear();
        piece.remove_prefix(cr + 1);
      }
      size_t room = kLineKept - std::min(kLineKept, m_partial.size());
      m_partial.append(piece.substr(0, room));
      // One that ends the read is kept even past the kept length: the next read may redraw.
      if (room < piece.size() && piece.ends_with('\r')) m_partial += '\r';
      if (newline == nullptr) break;
      end_line(m_partial, stream, t_ns, cited);
      m_partial.clear();
    }
    ++lines;
    data = newline + 1;
  }
  return lines;
}

bool LineSplitter::end_partial(const std::string& stream, int64_t t_ns,
                               std::vector<store::LogLine>& cited) {
  if (m_partial.empty()) return false;
  end_line(m_partial, stream, t_ns, cited);
  m_partial.clear();
  return true;
}

void LineSplitter::end_line(std::string_view line, const std::string& stream, int64_t t_ns,
                            std::vector<store::LogLine>& cited) {
  ++m_line_number;
  line = shown_line(line);
  if (worth_citing(m_line_number, line)) {
    cited.push_back({t_ns, stream, m_line_number, std::string(line)});
  }
}

}  // namespace traindoc::supervisor
