// The log tap's line splitter. Supervisor process, the log tap's thread. It never copies a line
// that a chunk holds whole, and past the first lines looks only at those an anchor is in, so
// output passes at pipe speed.
#include "supervisor/line_splitter.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "supervisor/log_anchors.h"

namespace traindoc::supervisor {
namespace {

constexpr size_t kLineKept = 4096;
constexpr uint64_t kFirstLines = 100;

// Newlines in [data, end), where a memchr per line of a few bytes would cost a call each: 16
// bytes at a time with SSE2 (every x86-64 CPU has it), each match subtracting one from its byte
// of a counter that is summed before it can wrap; else eight at a time, a byte equal to '\n'
// being a zero byte of the word XOR newlines, whose high bit the masks below set exactly.
uint64_t count_newlines(const char* data, const char* end) {
  uint64_t count = 0;
#if defined(__x86_64__)
  const __m128i newlines = _mm_set1_epi8('\n');
  while (end - data >= 16) {
    __m128i counts = _mm_setzero_si128();
    for (int round = 0; round < 255 && end - data >= 16; ++round, data += 16) {
      __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data));
      counts = _mm_sub_epi8(counts, _mm_cmpeq_epi8(bytes, newlines));
    }
    __m128i sums = _mm_sad_epu8(counts, _mm_setzero_si128());
    count += static_cast<uint64_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<uint64_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#else
  constexpr uint64_t kNewlines = 0x0a0a0a0a0a0a0a0aULL;
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fULL;
  for (; end - data >= 8; data += 8) {
    uint64_t word = 0;
    memcpy(&word, data, sizeof(word));
    uint64_t x = word ^ kNewlines;
    uint64_t zero = ~(((x & kLow7) + kLow7) | x | kLow7);
    count += ((zero >> 7) * 0x0101010101010101ULL) >> 56;
  }
#endif
  for (; data < end; ++data) count += *data == '\n';
  return count;
}

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
    if (m_partial.empty() && m_line_number >= kFirstLines) {
      const void* last = memrchr(data, '\n', static_cast<size_t>(end - data));
      if (last != nullptr) {
        const char* after = static_cast<const char*>(last) + 1;
        lines += pass_whole_lines(data, after, stream, t_ns, cited);
        data = after;
        continue;
      }
    }
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

// A line without an anchor is never cited past the first lines (its shown part holds none
// either), so only those an anchor is found in are ended one by one; the others are counted.
uint64_t LineSplitter::pass_whole_lines(const char* data, const char* end,
                                        const std::string& stream, int64_t t_ns,
                                        std::vector<store::LogLine>& cited) {
  uint64_t lines = 0;
  while (data < end) {
    size_t hit = find_anchor({data, static_cast<size_t>(end - data)});
    if (hit == std::string_view::npos) {
      uint64_t rest = count_newlines(data, end);
      m_line_number += rest;
      return lines + rest;
    }
    const char* at = data + hit;
    const void* before = memrchr(data, '\n', static_cast<size_t>(at - data));
    const char* start = before != nullptr ? static_cast<const char*>(before) + 1 : data;
    uint64_t skipped = count_newlines(data, start);
    m_line_number += skipped;
    // An anchor holds no newline, and the range ends with one.
    const char* newline = static_cast<const char*>(memchr(at, '\n', static_cast<size_t>(end - at)));
    end_line({start, static_cast<size_t>(newline - start)}, stream, t_ns, cited);
    lines += skipped + 1;
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
