#include "ops/small_batch_linear.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ops/dot.h"

#ifdef GATTN_DOT_AVX2
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
// bf16 weights: 16 values loaded as eight 32-bit words; shifting each word left by 16 gives the
// even-indexed weights as floats, masking its low half the odd-indexed ones. The input is
// deinterleaved to match (even: in[k + 2j], odd: in[k + 2j + 1] for each block of 16 at k), so a
// weight costs a load and one integer op, not a widening shuffle.
struct EvenOdd {
  const float *even, *odd;  // [n / 2] each, for the first n - n % 32 values
};

float dot_bf16(const EvenOdd& in, const float* in_plain, const uint16_t* w, int n) {
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
  return horizontal_sum(a0, a1, a2, a3) + dot_tail(in_plain, w, k, n);
}

// Four bf16 weight rows at once, as dot4 for fp32 weights.
void dot4_bf16(const EvenOdd& in, const float* in_plain, const uint16_t* const w[4], int n,
               float out[4]) {
  const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
  __m256 even[4], odd[4];
  for (int i = 0; i < 4; ++i) even[i] = odd[i] = _mm256_setzero_ps();
  const int vector_part = n - n % 32;
  for (int k = 0; k < vector_part; k += 16) {
    const __m256 x_even = _mm256_loadu_ps(in.even + k / 2), x_odd = _mm256_loadu_ps(in.odd + k / 2);
    for (int i = 0; i < 4; ++i) {
      const __m256i wi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + k));
      even[i] = _mm256_fmadd_ps(x_even, _mm256_castsi256_ps(_mm256_slli_epi32(wi, 16)), even[i]);
      odd[i] = _mm256_fmadd_ps(x_odd, _mm256_castsi256_ps(_mm256_and_si256(wi, high)), odd[i]);
    }
  }
  const __m256 zero = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i)
    out[i] = horizontal_sum(even[i], odd[i], zero, zero) + dot_tail(in_plain, w[i], vector_part, n);
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
  void dot4(int r, const float* const w[4], float out[4]) const {
    gattn::dot4(in_ + int64_t(r) * in_dim_, w, in_dim_, out);
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
    return dot_bf16(EvenOdd{even, even + in_dim_ / 2}, x, w, in_dim_);
#else
    return dot_tail(x, w, 0, in_dim_);
#endif
  }
  void dot4(int r, const uint16_t* const w[4], float out[4]) const {
#ifdef GATTN_SMALL_BATCH_AVX2
    const float* even = split_ + int64_t(r) * in_dim_;
    dot4_bf16(EvenOdd{even, even + in_dim_ / 2}, in_ + int64_t(r) * in_dim_, w, in_dim_, out);
#else
    for (int i = 0; i < 4; ++i) out[i] = dot(r, w[i]);
#endif
  }
  const float* in_;
  int in_dim_;
  const float* split_;  // each row: its even values, then its odd ones
};

// Output columns [begin, end) for every input row: each weight row is read from memory once and
// from L1 for the rows after the first. The columns are cut into four equal parts read side by
// side, four long sequential streams: at one thread on Zen 3 this reads 24-28 GB/s against 17-18
// for one stream and 14-23 for four neighbouring rows (2-4 KiB apart, the prefetcher's pages
// shared). The columns left over go one at a time.
template <typename W>
void columns(float* out, int ld_out, const InputRows<W>& in, const W* w, int rows, int in_dim,
             int begin, int end, bool accumulate) {
  const int part = (end - begin) / 4;
  for (int n = begin; n < begin + part; ++n) {
    const int cols[4] = {n, n + part, n + 2 * part, n + 3 * part};
    const W* const wn[4] = {w + int64_t(cols[0]) * in_dim, w + int64_t(cols[1]) * in_dim,
                            w + int64_t(cols[2]) * in_dim, w + int64_t(cols[3]) * in_dim};
    for (int r = 0; r < rows; ++r) {
      float s[4];
      in.dot4(r, wn, s);
      float* o = out + int64_t(r) * ld_out;
      for (int i = 0; i < 4; ++i) o[cols[i]] = accumulate ? o[cols[i]] + s[i] : s[i];
    }
  }
  for (int n = begin + 4 * part; n < end; ++n) {
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
