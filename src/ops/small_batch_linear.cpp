#include "ops/small_batch_linear.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define GATTN_SMALL_BATCH_AVX2 1
#endif

namespace gattn {

namespace {

inline float to_float(float x) { return x; }
inline float to_float(uint16_t bf16) {
  const uint32_t bits = uint32_t(bf16) << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

// Below this many weights one thread does the whole product (a parallel region costs more).
constexpr int64_t kParallelWeights = int64_t(1) << 16;

// Scalar dot product of in[begin, end) and w[begin, end) (the tails, and machines without AVX2).
template <typename W>
float dot_tail(const float* in, const W* w, int begin, int end) {
  float s = 0;
  for (int k = begin; k < end; ++k) s += in[k] * to_float(w[k]);
  return s;
}

#ifdef GATTN_SMALL_BATCH_AVX2
inline float sum_lanes(__m256 a, __m256 b, __m256 c, __m256 d) {
  const __m256 v = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(c, d));
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_hadd_ps(x, x);
  return _mm_cvtss_f32(_mm_hadd_ps(x, x));
}

// Four independent accumulators over 32 values at a time (one would wait on each FMA).
float dot(const float* in, const float* w, int n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int k = 0;
  for (; k + 32 <= n; k += 32) {
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k), _mm256_loadu_ps(w + k), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k + 8), _mm256_loadu_ps(w + k + 8), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k + 16), _mm256_loadu_ps(w + k + 16), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(in + k + 24), _mm256_loadu_ps(w + k + 24), a3);
  }
  return sum_lanes(a0, a1, a2, a3) + dot_tail(in, w, k, n);
}

// Four weight rows w, w + ld, w + 2 ld, w + 3 ld against one input: the input is loaded once
// for the four, and four streams of weights are in flight at once.
void dot4(const float* in, const float* w, int64_t ld, int n, float out[4]) {
  const float* w1 = w + ld;
  const float* w2 = w1 + ld;
  const float* w3 = w2 + ld;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  int k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m256 x0 = _mm256_loadu_ps(in + k), x1 = _mm256_loadu_ps(in + k + 8);
    a0 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w + k), a0);
    b0 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w + k + 8), b0);
    a1 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w1 + k), a1);
    b1 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w1 + k + 8), b1);
    a2 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w2 + k), a2);
    b2 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w2 + k + 8), b2);
    a3 = _mm256_fmadd_ps(x0, _mm256_loadu_ps(w3 + k), a3);
    b3 = _mm256_fmadd_ps(x1, _mm256_loadu_ps(w3 + k + 8), b3);
  }
  const __m256 zero = _mm256_setzero_ps();
  out[0] = sum_lanes(a0, b0, zero, zero) + dot_tail(in, w, k, n);
  out[1] = sum_lanes(a1, b1, zero, zero) + dot_tail(in, w1, k, n);
  out[2] = sum_lanes(a2, b2, zero, zero) + dot_tail(in, w2, k, n);
  out[3] = sum_lanes(a3, b3, zero, zero) + dot_tail(in, w3, k, n);
}

// bf16 weights: 16 values loaded as eight 32-bit words; shifting each word left by 16 gives the
// even-indexed weights as floats, masking its low half the odd-indexed ones. The input is
// deinterleaved to match (even: in[k + 2j], odd: in[k + 2j + 1] for each block of 16 at k), so a
// weight costs a load and one integer op, not a widening shuffle.
struct EvenOdd {
  const float *even, *odd;  // [n / 2] each, for the first n - n % 32 values
};

float dot(const EvenOdd& in, const float* in_plain, const uint16_t* w, int n) {
  const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int k = 0;
  for (; k + 32 <= n; k += 32) {
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + k + 16));
    const int h = k / 2;
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(in.even + h),
                         _mm256_castsi256_ps(_mm256_slli_epi32(w0, 16)), a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(in.odd + h),
                         _mm256_castsi256_ps(_mm256_and_si256(w0, high)), a1);
    a2 = _mm256_fmadd_ps(_mm256_loadu_ps(in.even + h + 8),
                         _mm256_castsi256_ps(_mm256_slli_epi32(w1, 16)), a2);
    a3 = _mm256_fmadd_ps(_mm256_loadu_ps(in.odd + h + 8),
                         _mm256_castsi256_ps(_mm256_and_si256(w1, high)), a3);
  }
  return sum_lanes(a0, a1, a2, a3) + dot_tail(in_plain, w, k, n);
}

#else
float dot(const float* in, const float* w, int n) { return dot_tail(in, w, 0, n); }
void dot4(const float* in, const float* w, int64_t ld, int n, float out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = dot_tail(in, w + i * ld, 0, n);
}
#endif

// What one input row looks like to the kernel of a weight type.
template <typename W>
struct InputRows;

template <>
struct InputRows<float> {
  InputRows(const float* in, int /*rows*/, int in_dim) : in_(in), in_dim_(in_dim) {}
  float dot(int r, const float* w) const {
    return gattn::dot(in_ + int64_t(r) * in_dim_, w, in_dim_);
  }
  void dot4(int r, const float* w, float out[4]) const {
    gattn::dot4(in_ + int64_t(r) * in_dim_, w, in_dim_, in_dim_, out);
  }
  const float* in_;
  int in_dim_;
};

template <>
struct InputRows<uint16_t> {
  InputRows(const float* in, int rows, int in_dim) : in_(in), in_dim_(in_dim) {
    thread_local std::vector<float> buffer;  // grown once per calling thread, then reused
    buffer.resize(size_t(rows) * in_dim);
    split_ = buffer.data();
    const int vector_part = in_dim - in_dim % 32;
    for (int r = 0; r < rows; ++r) {
      const float* x = in + int64_t(r) * in_dim;
      float* even = buffer.data() + int64_t(r) * in_dim;
      float* odd = even + in_dim / 2;
      for (int k = 0; k < vector_part; k += 16)
        for (int j = 0; j < 8; ++j) {
          even[k / 2 + j] = x[k + 2 * j];
          odd[k / 2 + j] = x[k + 2 * j + 1];
        }
    }
  }
  float dot(int r, const uint16_t* w) const {
    const float* x = in_ + int64_t(r) * in_dim_;
#ifdef GATTN_SMALL_BATCH_AVX2
    const float* even = split_ + int64_t(r) * in_dim_;
    return gattn::dot(EvenOdd{even, even + in_dim_ / 2}, x, w, in_dim_);
#else
    return dot_tail(x, w, 0, in_dim_);
#endif
  }
  // Row by row: for bf16 weights (2 KiB rows at hidden 1024) four interleaved streams read
  // slower than one (14-15 against 17-18 GB/s at one thread, Zen 3).
  void dot4(int r, const uint16_t* w, float out[4]) const {
    for (int i = 0; i < 4; ++i) out[i] = dot(r, w + int64_t(i) * in_dim_);
  }
  const float* in_;
  int in_dim_;
  const float* split_;  // each row: its even values, then its odd ones
};

// Output columns [begin, end) for every input row: each weight row is read from memory once and
// from L1 for the rows after the first. Four columns at a time, then one at a time.
template <typename W>
void columns(float* out, int ld_out, const InputRows<W>& in, const W* w, int rows, int in_dim,
             int begin, int end, bool accumulate) {
  int n = begin;
  for (; n + 4 <= end; n += 4) {
    const W* wn = w + int64_t(n) * in_dim;
    for (int r = 0; r < rows; ++r) {
      float s[4];
      in.dot4(r, wn, s);
      float* o = out + int64_t(r) * ld_out + n;
      for (int i = 0; i < 4; ++i) o[i] = accumulate ? o[i] + s[i] : s[i];
    }
  }
  for (; n < end; ++n) {
    const W* wn = w + int64_t(n) * in_dim;
    for (int r = 0; r < rows; ++r) {
      const float s = in.dot(r, wn);
      float& o = out[int64_t(r) * ld_out + n];
      o = accumulate ? o + s : s;
    }
  }
}

template <typename W>
void linear(float* out, const float* in, const W* w, int rows, int in_dim, int out_dim,
            bool accumulate, int ld_out) {
  if (ld_out == 0) ld_out = out_dim;
  const InputRows<W> input(in, rows, in_dim);
  if (int64_t(in_dim) * out_dim < kParallelWeights) {
    columns(out, ld_out, input, w, rows, in_dim, 0, out_dim, accumulate);
    return;
  }
#pragma omp parallel
  {
    // One contiguous slice of the columns per thread.
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int begin = int(int64_t(out_dim) * t / threads);
    const int end = int(int64_t(out_dim) * (t + 1) / threads);
    columns(out, ld_out, input, w, rows, in_dim, begin, end, accumulate);
  }
}
}  // namespace

void small_batch_linear(float* out, const float* in, const float* w, int rows, int in_dim,
                        int out_dim, bool accumulate, int ld_out) {
  linear(out, in, w, rows, in_dim, out_dim, accumulate, ld_out);
}

void small_batch_linear(float* out, const float* in, const uint16_t* w_bf16, int rows, int in_dim,
                        int out_dim, bool accumulate, int ld_out) {
  linear(out, in, w_bf16, rows, in_dim, out_dim, accumulate, ld_out);
}

}  // namespace gattn
