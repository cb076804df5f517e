// Bytes as lowercase hex, two digits each. Header-only.
#pragma once

#include <cstddef>
#include <string>

namespace traindoc::common {

inline std::string hex_bytes(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return out;
}

}  // namespace traindoc::common
