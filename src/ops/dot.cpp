#include "ops/dot.h"

#include "ops/bf16_bits.h"

namespace gattn {

namespace {
inline float widened(float x) { return x; }
inline float widened(uint16_t x) { return bf16_to_float(x); }

template <typename W>
float tail(const float* a, const W* b, int begin, int end) {
  float s = 0;
  for (int k = begin; k < end; ++k) s += a[k] * widened(b[k]);
  return s;
}

}  // namespace

#ifdef GATTN_DOT_AVX2
namespace {
// Four independent accumulators over 32 values at a time (one would wait on each FMA).
template <typename W>
float dot_any(const float* in, const W* w, int n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int k = 0;
  for (; k + 32 <= n; k += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k), load8(w + k), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k + 8), load8(w + k + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k + 16), load8(w + k + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k + 24), load8(w + k + 24), a3);
  }
  return horizontal_sum(a0, a1, a2, a3) + tail(in, w, k, n);
}

// Two accumulators a row, 16 values at a time; the four rows' sums reduced together (one
// horizontal sum each took as long as the products of a 64-value row).
template <typename W>
void dot4_any(const float* in, const W* const w[4], int n, float out[4]) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  int k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256 x0 = _mm256_loadu_ps(in + k), x1 = _mm256_loadu_ps(in + k + 8);
    a0 = _mm256_fmadd_ps(x0, load8(w[0] + k), a0);
    b0 = _mm256_fmadd_ps(x1, load8(w[0] + k + 8), b0);
    a1 = _mm256_fmadd_ps(x0, load8(w[1] + k), a1);
    b1 = _mm256_fmadd_ps(x1, load8(w[1] + k + 8), b1);
    a2 = _mm256_fmadd_ps(x0, load8(w[2] + k), a2);
    b2 = _mm256_fmadd_ps(x1, load8(w[2] + k + 8), b2);
    a3 = _mm256_fmadd_ps(x0, load8(w[3] + k), a3);
    b3 = _mm256_fmadd_ps(x1, load8(w[3] + k + 8), b3);
  }
  alignas(16) float sums[4];
  _mm_store_ps(sums, horizontal_sums(_mm256_add_ps(a0, b0), _mm256_add_ps(a1, b1),
                                     _mm256_add_ps(a2, b2), _mm256_add_ps(a3, b3)));
  for (int i = 0; i < 4; ++i) out[i] = sums[i] + tail(in, w[i], k, n);
}
}  // namespace

#else
namespace {
template <typename W>
float dot_any(const float* a, const W* b, int n) {
  return tail(a, b, 0, n);
}
template <typename W>
void dot4_any(const float* x, const W* const rows[4], int n, float out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = tail(x, rows[i], 0, n);
}
}  // namespace
#endif

float dot(const float* a, const float* b, int n) { return dot_any(a, b, n); }
float dot(const float* a, const uint16_t* b, int n) { return dot_any(a, b, n); }
void dot4(const float* x, const float* const rows[4], int n, float out[4]) {
  dot4_any(x, rows, n, out);
}
void dot4(const float* x, const uint16_t* const rows[4], int n, float out[4]) {
  dot4_any(x, rows, n, out);
}

}  // namespace gattn
