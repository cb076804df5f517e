#include "supervisor/log_anchors.h"

#include <algorithm>
#include <bitset>
#include <cstdint>
#include <iterator>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace traindoc::supervisor {
namespace {

constexpr std::string_view kAnchors[] = {"rror",
                                         "xception",
                                         "Traceback",
                                         "File \"",
                                         "terminate",
                                         "what():",
                                         "ssert",
                                         "Fatal",
                                         "illed",
                                         "ignal",
                                         "egmentation",
                                         "free(",
                                         "corrupt",
                                         "out of memory",
                                         "imed out",
                                         "imeout",
                                         "NCCL",
                                         "WARN",
                                         "Abort",
                                         "core dumped",
                                         "exited",
                                         "exitcode",
                                         "receive grad",
                                         "get gradient",
                                         "RESOURCE_EXHAUSTED",
                                         "Xid",
                                         "state_dict",
                                         "copying a param",
                                         "UserWarning",
                                         "unused parameters in",
                                         "bootstrapping phase"};

uint16_t pair_at(std::string_view text, size_t i) {
  return static_cast<uint16_t>(static_cast<uint8_t>(text[i]) << 8 |
                               static_cast<uint8_t>(text[i + 1]));
}

// The first two bytes of every anchor (each has at least three), as a set to test each position
// of a line against, and one per anchor to tell which to compare there. Most lines of a training
// log hold none of these pairs; where one occurs, only the anchors that start with it are compared.
//
// Where the CPU has SSSE3, 16 positions are tested at once first, against a looser test: each
// anchor's pair falls in one of 8 buckets, by the high halves of its two bytes, and a byte's
// buckets as a first (or second) byte are looked up by its two halves (pshufb), each half
// naming the buckets some first (or second) byte of theirs has it in. A position whose first
// and second byte share a bucket may start an anchor; any other cannot.
struct AnchorStarts {
  std::bitset<65536> any;
  uint16_t of[std::size(kAnchors)] = {};
  // The anchors ordered by their first byte, and where each first byte's run of them begins
  // (its end is the next byte's begin): at most a few to compare at a position.
  uint8_t by_first[std::size(kAnchors)] = {};
  uint8_t first_begins[257] = {};
  // By the low and the high half of a byte: the buckets of its first bytes, of its second.
  alignas(16) uint8_t first_low[16] = {};
  alignas(16) uint8_t first_high[16] = {};
  alignas(16) uint8_t second_low[16] = {};
  alignas(16) uint8_t second_high[16] = {};

  AnchorStarts() {
    std::vector<int> bucket_keys;  // (high half of the first byte) << 4 | that of the second
    for (size_t k = 0; k < std::size(kAnchors); ++k) {
      of[k] = pair_at(kAnchors[k], 0);
      any.set(of[k]);
      auto first = static_cast<uint8_t>(of[k] >> 8);
      auto second = static_cast<uint8_t>(of[k]);
      int key = (first >> 4) << 4 | second >> 4;
      auto found = std::find(bucket_keys.begin(), bucket_keys.end(), key);
      size_t bucket = std::min<size_t>(found - bucket_keys.begin(), 7);  // the rest share the last
      if (found == bucket_keys.end()) bucket_keys.push_back(key);
      auto bit = static_cast<uint8_t>(1u << bucket);
      first_low[first & 15] |= bit;
      first_high[first >> 4] |= bit;
      second_low[second & 15] |= bit;
      second_high[second >> 4] |= bit;
      ++first_begins[first + 1];
    }
    for (size_t b = 1; b < std::size(first_begins); ++b) first_begins[b] += first_begins[b - 1];
    uint8_t next[256];
    std::copy(first_begins, first_begins + 256, next);
    for (size_t k = 0; k < std::size(kAnchors); ++k) {
      by_first[next[of[k] >> 8]++] = static_cast<uint8_t>(k);
    }
  }
};

const AnchorStarts kStarts;

bool anchor_at(std::string_view text, size_t i) {
  uint16_t pair = pair_at(text, i);
  if (!kStarts.any[pair]) return false;
  for (size_t j = kStarts.first_begins[pair >> 8]; j < kStarts.first_begins[(pair >> 8) + 1]; ++j) {
    size_t k = kStarts.by_first[j];
    if (kStarts.of[k] == pair && text.substr(i).starts_with(kAnchors[k])) return true;
  }
  return false;
}

#if defined(__x86_64__)
// The buckets each of 16 bytes is in, by its two halves, from one table per half.
__attribute__((target("ssse3"))) __m128i buckets_of(__m128i bytes, const uint8_t* low,
                                                    const uint8_t* high) {
  const __m128i halves = _mm_set1_epi8(0x0f);
  __m128i lows = _mm_and_si128(bytes, halves);
  __m128i highs = _mm_and_si128(_mm_srli_epi16(bytes, 4), halves);
  return _mm_and_si128(
      _mm_shuffle_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(low)), lows),
      _mm_shuffle_epi8(_mm_load_si128(reinterpret_cast<const __m128i*>(high)), highs));
}

// Of the 16 positions from `at` on, those where an anchor may start (a bit each), by the bucket
// test; the second byte is read one ahead, so 17 bytes must be there.
__attribute__((target("ssse3"))) unsigned candidates_ssse3(const char* at) {
  __m128i firsts = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
  __m128i seconds = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 1));
  __m128i shared = _mm_and_si128(buckets_of(firsts, kStarts.first_low, kStarts.first_high),
                                 buckets_of(seconds, kStarts.second_low, kStarts.second_high));
  return ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(shared, _mm_setzero_si128()))) &
         0xffffu;
}

// A static initializer may run before libgcc's own, which __builtin_cpu_init stands in for.
const bool kHasSsse3 = (__builtin_cpu_init(), __builtin_cpu_supports("ssse3"));
#endif

}  // namespace

std::span<const std::string_view> log_anchors() {
  return kAnchors;
}

size_t find_anchor(std::string_view text) {
  size_t i = 0;
#if defined(__x86_64__)
  if (kHasSsse3) {
    for (; i + 17 <= text.size(); i += 16) {
      for (unsigned maybe = candidates_ssse3(text.data() + i); maybe != 0; maybe &= maybe - 1) {
        size_t at = i + static_cast<size_t>(__builtin_ctz(maybe));
        if (anchor_at(text, at)) return at;
      }
    }
  }
#endif
  for (; i + 1 < text.size(); ++i) {
    if (anchor_at(text, i)) return i;
  }
  return std::string_view::npos;
}

}  // namespace traindoc::supervisor
