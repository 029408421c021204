// AVX2 quantization of activation rows into Q8_0 and Q8_K blocks (ops/quant_dot.h): the scalar
// loops' operations on eight lanes, so the same bits (the largest magnitude is exact in any
// order; every other value is one IEEE operation per lane, as in the scalar loop; the fp16
// rounding is F16C's, which util/fp16.h's float_to_half equals). A decode step quantizes each
// matrix product's input on one thread, before the product's parallel region.
#include "ops/quant_dot_kernels.h"

#ifdef GATTN_QUANT_DOT_AVX2
#include <immintrin.h>

namespace gattn::quant_kernels {

namespace {

// The largest |x| of 8 * n values, NaNs passed over, 0 for none (vmaxps returns its second
// operand where either is NaN).
inline float largest_magnitude(const float* x, int n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 m = _mm256_setzero_ps();
  for (int i = 0; i < n; ++i)
    m = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  return _mm_cvtss_f32(h);
}

// round_q of eight products x * scale: round to nearest even, NaN to 0, clamped to +-127; as
// int32 lanes.
inline __m256i rounded(__m256 x, __m256 scale) {
  const __m256 v = _mm256_mul_ps(x, scale);
  const __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 numbers = _mm256_and_ps(r, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
  const __m256 limit = _mm256_set1_ps(127.0f);
  return _mm256_cvtps_epi32(
      _mm256_min_ps(_mm256_max_ps(numbers, _mm256_sub_ps(_mm256_setzero_ps(), limit)), limit));
}

// 32 int32 lanes (four vectors, values in order) as 32 int8 in order.
inline __m256i bytes_of(const __m256i q[4]) {
  // per 128-bit lane, four values of each of q[0], q[1], q[2], q[3] (values 0-3 of each, then
  // 4-7): four-byte groups put back in order by one permutation
  const __m256i bytes =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  return _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline int lane_total(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void avx2_quantize_q8_0(const float* x, int64_t blocks, int8_t* q, double* d, int16_t* sums) {
  for (int64_t b = 0; b < blocks; ++b, x += 32, q += 32) {
    const float amax = largest_magnitude(x, 4);
    d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
    const __m256 id = _mm256_set1_ps(amax != 0 ? 127.0f / amax : 0.0f);
    __m256i lanes[4];
    for (int i = 0; i < 4; ++i) lanes[i] = rounded(_mm256_loadu_ps(x + 8 * i), id);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), bytes_of(lanes));
    sums[b] = int16_t(lane_total(_mm256_add_epi32(_mm256_add_epi32(lanes[0], lanes[1]),
                                                  _mm256_add_epi32(lanes[2], lanes[3]))));
  }
}

void avx2_quantize_q8_k(const float* x, int64_t blocks, int8_t* q, double* d, int16_t* sums) {
  for (int64_t b = 0; b < blocks; ++b, x += 256, q += 256) {
    const float amax = largest_magnitude(x, 32);
    d[b] = 0;
    if (amax == 0) {
      for (int i = 0; i < 8; ++i)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), _mm256_setzero_si256());
      for (int g = 0; g < 16; ++g) sums[16 * b + g] = 0;
      continue;
    }
    float max = 0;  // the first value of the largest magnitude, with its sign
    for (int j = 0; j < 256; ++j)
      if ((x[j] < 0 ? -x[j] : x[j]) == amax) {
        max = x[j];
        break;
      }
    const float iscale = -127.0f / max;
    const __m256 scale = _mm256_set1_ps(iscale);
    for (int i = 0; i < 8; ++i) {
      __m256i lanes[4];
      for (int k = 0; k < 4; ++k) lanes[k] = rounded(_mm256_loadu_ps(x + 32 * i + 8 * k), scale);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * i), bytes_of(lanes));
      sums[16 * b + 2 * i] = int16_t(lane_total(_mm256_add_epi32(lanes[0], lanes[1])));
      sums[16 * b + 2 * i + 1] = int16_t(lane_total(_mm256_add_epi32(lanes[2], lanes[3])));
    }
    d[b] = 1 / iscale;
  }
}

}  // namespace gattn::quant_kernels

#endif
