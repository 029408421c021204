// The bf16 bits the CPU's conversion instructions (vcvtneps2bf16, vcvtne2ps2bf16) give a float:
// nearest even, NaN quieted, subnormals (|x| < 2^-126) to a signed zero.
#pragma once
#include <cstdint>
#include <cstring>

namespace gattn {

inline uint16_t bf16_instruction_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0) return uint16_t((u >> 16) & 0x8000u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// The float a bf16 value stands for (exact).
inline float bf16_to_float(uint16_t bits16) {
  const uint32_t u = uint32_t(bits16) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// The upper half of an already rounded float (round_to_bf16, ops/matmul.h): its bf16 bits.
inline uint16_t bf16_upper_bits(float rounded) {
  uint32_t u;
  std::memcpy(&u, &rounded, 4);
  return uint16_t(u >> 16);
}

}  // namespace gattn
