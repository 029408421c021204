// exp(x) for float without a libm call, so loops over it vectorise: Cephes' expf polynomial after
// reducing x by multiples of ln 2. Relative error below 3e-7 for results in the normal range;
// results that would be subnormal (x < -87.33) are 0, overflow (x > 88.72) is +inf, NaN stays NaN.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace gattn {

inline float fast_exp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  // Clamped (a NaN x gives a number here, and x at the end).
  const float at_least = x > -87.33f ? x : -87.33f;
  const float clamped = at_least < 88.72f ? at_least : 88.72f;
  // The fused multiply-adds are written out (the ones GCC formed from a * b + c here), so that
  // no code around an inlined call changes them: round to nearest by adding and removing
  // 1.5 * 2^23 (std::floor would be a libm call), then r = x - k ln 2 in two parts.
  const float k = std::fma(clamped, kLog2e, 0x1.8p23f) - 0x1.8p23f;
  const float r = std::fma(-k, kLn2Lo, std::fma(-k, kLn2Hi, clamped));  // |r| <= ln2 / 2
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float e_r = std::fma(p * r, r, r) + 1.0f;
  // 2^k in two halves, so k = 128 (x near 88.72) does not overflow the exponent field
  const int32_t ki = int32_t(k), half = ki / 2;
  const float scale_a = std::bit_cast<float>((half + 127) << 23);
  const float scale_b = std::bit_cast<float>((ki - half + 127) << 23);
  const float y = e_r * scale_a * scale_b;
  // Selects, not branches (a loop over this vectorises without AVX-512's masks).
  const float below_inf = x > 88.72f ? INFINITY : y;
  const float in_range = x < -87.33f ? 0.0f : below_inf;
  return x != x ? x : in_range;
}

// The double versions (used by the finite-difference tests) are libm's.
inline double fast_exp(double x) { return std::exp(x); }

template <typename T>
T fast_sigmoid(T x) {
  return T(1) / (T(1) + fast_exp(-x));
}

}  // namespace gattn
