// IEEE half precision (fp16, as safetensors F16 and ggml's block scales store it) to float,
// exactly: every half is a float.
#pragma once
#include <cstdint>
#include <cstring>

namespace gattn {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or nan
  } else if (exponent != 0) {
    bits = sign | (uint32_t(exponent - 15 + 127) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while (!(mantissa & 0x400));
    bits = sign | (uint32_t(127 - 15 - e) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// float to half, rounded to nearest even (as F16C's vcvtps2ph and ggml's GGML_FP32_TO_FP16):
// beyond the largest half -> infinity, a nan stays a (quiet) nan.
inline uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00;   // nan
  if (magnitude >= 0x477ff000u) return sign | 0x7c00;  // >= 65520: infinity
  if (magnitude < 0x38800000u) {                       // below 2^-14: a subnormal half (or 0)
    float v;
    std::memcpy(&v, &magnitude, 4);
    const float units = v * 16777216.0f;  // in units of 2^-24, exactly
    uint32_t q = uint32_t(units);
    const float rest = units - float(q);
    if (rest > 0.5f || (rest == 0.5f && (q & 1))) ++q;
    return uint16_t(sign | q);  // q = 1024 is the smallest normal half, as it should be
  }
  uint32_t h = ((magnitude >> 23) - 127 + 15) << 10 | ((magnitude & 0x7fffff) >> 13);
  const uint32_t rest = magnitude & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;  // a carry moves into the exponent
  return uint16_t(sign | h);
}

}  // namespace gattn
