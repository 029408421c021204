#include "corpus/split.h"

#include <cmath>
#include <string>

namespace gattn {

namespace {

// SplitMix64's finaliser: every input bit affects every output bit.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// FNV-1a over bytes, each field followed by a 0 byte so ("ab", "c") differs from ("a", "bc").
uint64_t fnv1a(uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001B3ull;
  }
  return hash * 0x100000001B3ull;  // the 0 byte: xor with 0 changes nothing, the multiply remains
}

constexpr uint64_t kFnvOffset = 0xCBF29CE484222325ull;

}  // namespace

uint64_t chapter_hash(uint64_t seed, std::string_view book, int chapter) {
  const uint64_t key = fnv1a(fnv1a(kFnvOffset, book), std::to_string(chapter));
  return mix64(key ^ mix64(seed));
}

bool is_validation_chapter(uint64_t seed, std::string_view book, int chapter, double val_percent) {
  constexpr uint64_t kSteps = 1'000'000;  // 100% in steps of 0.0001%
  const uint64_t threshold = uint64_t(std::llround(val_percent * (kSteps / 100)));
  return chapter_hash(seed, book, chapter) % kSteps < threshold;
}

uint64_t document_order_key(uint64_t seed, std::string_view source, std::string_view book,
                            int chapter) {
  const uint64_t key = fnv1a(fnv1a(fnv1a(kFnvOffset, source), book), std::to_string(chapter));
  // A different seed mixing from chapter_hash's, so the order does not follow the split.
  return mix64(key ^ mix64(seed ^ 0x6A09E667F3BCC909ull));
}

}  // namespace gattn
