// Valid UTF-8 and terminal-safe text for the report writers. Any process; pure.
// Both walk the text with one decoder, so that they agree on what is UTF-8.
#include "report/safe_text.h"

#include <fmt/format.h>

namespace traindoc::report {
namespace {

// The sequence at the start of `text` (not empty): its length and whether it is UTF-8. Where it
// is not, the length is that of its longest start that could have begun a valid sequence (at
// least 1), Unicode's "maximal subpart": a truncated sequence is one error, and the byte that
// broke it starts the next.
struct Sequence {
  size_t length;
  bool valid;
};

Sequence next_sequence(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return {1, true};
  // The well-formed sequences (Unicode table 3-7): the lead byte sets the length and the range
  // of the second byte, which rules out overlong forms, surrogates and code points past U+10FFFF.
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {1, false};
  }
  for (size_t i = 1; i < length; ++i) {
    if (i >= text.size() || byte(i) < low || byte(i) > high) return {i, false};
    low = 0x80;
    high = 0xBF;
  }
  return {length, true};
}

// Calls `emit(piece, valid)` for each sequence of `text`, in order.
template <typename Emit>
void for_each_sequence(std::string_view text, Emit emit) {
  while (!text.empty()) {
    Sequence sequence = next_sequence(text);
    emit(text.substr(0, sequence.length), sequence.valid);
    text.remove_prefix(sequence.length);
  }
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_sequence(text, [&](std::string_view piece, bool valid) {
    out += valid ? piece : std::string_view("\xEF\xBF\xBD");
  });
  return out;
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for_each_sequence(text, [&](std::string_view piece, bool valid) {
    auto first = static_cast<unsigned char>(piece[0]);
    if (!valid) {
      for (char c : piece) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else if (first == '\n') {
      out += "\\n";
    } else if (first == '\r') {
      out += "\\r";
    } else if ((first < 0x20 && first != '\t') || first == 0x7F) {
      out += fmt::format("\\x{:02x}", first);
    } else if (first == 0xC2 && static_cast<unsigned char>(piece[1]) <= 0x9F) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(piece[1]));
    } else {
      out += piece;
    }
  });
  return out;
}

}  // namespace traindoc::report
