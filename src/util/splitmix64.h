// SplitMix64 (Steele, Lea and Flood 2014): a counter-based 64-bit mixer, the seed of every
// random stream in gattn (initialisation, data order).
#pragma once
#include <cstdint>

namespace gattn {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace gattn
