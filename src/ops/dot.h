// fp32 dot products for attention over a KV cache at decode (memory-bound), and the horizontal
// sum the small-batch linear kernel shares: AVX2 with independent accumulators where the CPU has
// it, plain loops elsewhere.
#pragma once
#include <cstdint>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GATTN_DOT_AVX2 1
#endif

namespace gattn {

// sum_k a[k] b[k] over n values.
float dot(const float* a, const float* b, int n);

// out[i] = sum_k x[k] rows[i][k] for four rows: x is loaded once for the four, and four streams
// of rows are in flight at once.
void dot4(const float* x, const float* const rows[4], int n, float out[4]);

// The same with bf16 rows (a bf16 KV cache): each value widened to fp32 (exactly) as it is read;
// the products and sums are those of dot and dot4 on the widened rows.
float dot(const float* a, const uint16_t* b, int n);
void dot4(const float* x, const uint16_t* const rows[4], int n, float out[4]);

#ifdef GATTN_DOT_AVX2
// Eight values at p as fp32: loaded, or bf16 widened (exactly: the bits shifted up).
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

// The sum of the 32 lanes of four vectors.
inline float horizontal_sum(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 v = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_hadd_ps(x, x);
  return _mm_cvtss_f32(_mm_hadd_ps(x, x));
}

// {horizontal_sum(s0, 0, 0, 0), .., horizontal_sum(s3, 0, 0, 0)} at once: each s + 0
// (as horizontal_sum's (a + b) + (0 + 0): -0 becomes +0), its halves added, two pairwise adds.
inline __m128 horizontal_sums(__m256 s0, __m256 s1, __m256 s2, __m256 s3) {
  const __m256 zero = _mm256_setzero_ps();
  s0 = _mm256_add_ps(s0, zero);
  s1 = _mm256_add_ps(s1, zero);
  s2 = _mm256_add_ps(s2, zero);
  s3 = _mm256_add_ps(s3, zero);
  const __m256 t01 = _mm256_add_ps(_mm256_permute2f128_ps(s0, s1, 0x20),
                                   _mm256_permute2f128_ps(s0, s1, 0x31));  // [s0's | s1's]
  const __m256 t23 =
      _mm256_add_ps(_mm256_permute2f128_ps(s2, s3, 0x20), _mm256_permute2f128_ps(s2, s3, 0x31));
  const __m256 h = _mm256_hadd_ps(t01, t23);
  const __m256 h2 = _mm256_hadd_ps(h, h);  // [0, 2, 0, 2 | 1, 3, 1, 3]
  return _mm_unpacklo_ps(_mm256_castps256_ps128(h2), _mm256_extractf128_ps(h2, 1));
}
#endif

}  // namespace gattn
