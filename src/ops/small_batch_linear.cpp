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

// Four weight rows (far apart: four sequential streams) times every input row. The input width
// is walked in chunks; per chunk, the input rows go in pairs (and a last single row), and each
// weight vector is loaded (and, for bf16, widened) once per pair, so a chunk is read from memory
// once and from L1 for the pairs after the first. (Four rows at once, two weight rows at a time,
// measured slower on Zen 3: 1.86x against 1.89-1.99x the tokens/s of one sequence in bf16.) The
// sums of one input row and weight row are accumulated in one order whatever the pairing, so a
// sequence's logits depend neither on the batch it is decoded in nor on the number of threads.
constexpr int kChunk = 256;  // input values per chunk: 1 KiB of fp32 weights per weight row

#ifdef GATTN_SMALL_BATCH_AVX2
using Sums = __m256[4];  // one input row's lane sums with the four weight rows

// Eight floats loaded into a register: GCC would otherwise fold a load that several FMAs use
// into each of them (and store a loaded array to the stack).
inline __m256 loaded(const float* p) {
  __m256 v = _mm256_loadu_ps(p);
  asm("" : "+x"(v));
  return v;
}

// Each weight stream is prefetched this far ahead of its loads (into L1). Rows of a stream follow
// one another in memory, so near a row's end this fetches the start of the stream's next row.
// The hardware prefetchers alone left decode at 30.5 GB/s on a Xeon (family 6 model 167, two
// threads, the 0.6B shape's bf16 matrices, cold); 1 KiB ahead gave 34.0, 1.5 KiB 35.1, 2 KiB
// 34.6, 3 KiB 34.4, 4 KiB 33.4 (one thread: 15.5 -> 17.8 GB/s at 2 KiB). Loads only: the sums
// are unchanged.
constexpr int kPrefetchBytes = 2048;

inline void prefetch_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + kPrefetchBytes, _MM_HINT_T0);
}

// fp32 weights: R = 1 or 2 input rows, values [begin, end) in steps of 8.
template <int R>
inline void accumulate(const float* const x[R], const float* const w[4], int begin, int end,
                       Sums* sums) {
  __m256 a[R][4];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < 4; ++i) a[r][i] = sums[r][i];
  for (int k = begin; k < end; k += 8) {
    __m256 xr[R];
    for (int r = 0; r < R; ++r) xr[r] = loaded(x[r] + k);
    for (int i = 0; i < 4; ++i) prefetch_ahead(w[i] + k);
    for (int i = 0; i < 4; ++i) {
      const __m256 wi = loaded(w[i] + k);
      for (int r = 0; r < R; ++r) a[r][i] = _mm256_fmadd_ps(xr[r], wi, a[r][i]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < 4; ++i) sums[r][i] = a[r][i];
}

// bf16 weights: 16 values loaded as eight 32-bit words; shifting each word left by 16 gives the
// even-indexed weights as floats, masking its low half the odd-indexed ones. The input row is
// deinterleaved to match (even: x[k + 2j], odd: x[k + 2j + 1] for each block of 16 at k), so a
// weight costs a load and one integer op, not a widening shuffle. Each sum takes a block's even
// products, then its odd ones.
struct EvenOdd {
  const float *even, *odd;  // [n / 2] each, for the first n - n % 32 values
};

template <int R>
inline void accumulate(const EvenOdd x[R], const uint16_t* const w[4], int begin, int end,
                       Sums* sums) {
  const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
  __m256 a[R][4];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < 4; ++i) a[r][i] = sums[r][i];
  for (int k = begin; k < end; k += 16) {
    __m256 even[R], odd[R];
    for (int r = 0; r < R; ++r) {
      even[r] = _mm256_loadu_ps(x[r].even + k / 2);
      odd[r] = _mm256_loadu_ps(x[r].odd + k / 2);
    }
    for (int i = 0; i < 4; ++i) prefetch_ahead(w[i] + k);
    for (int i = 0; i < 4; ++i) {
      const __m256i wi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + k));
      const __m256 we = _mm256_castsi256_ps(_mm256_slli_epi32(wi, 16));
      for (int r = 0; r < R; ++r) a[r][i] = _mm256_fmadd_ps(even[r], we, a[r][i]);
      const __m256 wo = _mm256_castsi256_ps(_mm256_and_si256(wi, high));
      for (int r = 0; r < R; ++r) a[r][i] = _mm256_fmadd_ps(odd[r], wo, a[r][i]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < 4; ++i) sums[r][i] = a[r][i];
}

inline float lane_sum(__m256 v) {
  const __m256 zero = _mm256_setzero_ps();
  return horizontal_sum(v, zero, zero, zero);
}
#endif

// What the input rows look like to the kernel of a weight type.
template <typename W>
struct InputRows;

template <>
struct InputRows<float> {
  InputRows(const float* in, int /*rows*/, int in_dim) : in_(in), in_dim_(in_dim) {}
  const float* row(int r) const { return in_ + int64_t(r) * in_dim_; }
#ifdef GATTN_SMALL_BATCH_AVX2
  static constexpr int kStep = 8;
  using Row = const float*;
  Row vector_row(int r) const { return row(r); }
#endif
  const float* in_;
  int in_dim_;
};

template <>
struct InputRows<uint16_t> {
  InputRows(const float* in, [[maybe_unused]] int rows, int in_dim) : in_(in), in_dim_(in_dim) {
#ifdef GATTN_SMALL_BATCH_AVX2
    thread_local std::vector<float> buffer;  // grown once per calling thread, then reused
    buffer.resize(size_t(rows) * in_dim);
    split_ = buffer.data();
    const int vector_part = in_dim - in_dim % 32;
    for (int r = 0; r < rows; ++r) {
      const float* x = row(r);
      float* even = buffer.data() + int64_t(r) * in_dim;
      float* odd = even + in_dim / 2;
      for (int k = 0; k < vector_part; k += 16)
        for (int j = 0; j < 8; ++j) {
          even[k / 2 + j] = x[k + 2 * j];
          odd[k / 2 + j] = x[k + 2 * j + 1];
        }
    }
#endif
  }
  const float* row(int r) const { return in_ + int64_t(r) * in_dim_; }
#ifdef GATTN_SMALL_BATCH_AVX2
  static constexpr int kStep = 32;
  using Row = EvenOdd;
  Row vector_row(int r) const {
    const float* even = split_ + int64_t(r) * in_dim_;
    return EvenOdd{even, even + in_dim_ / 2};
  }
#endif
  const float* in_;
  int in_dim_;
  const float* split_;  // each row: its even values, then its odd ones
};

// out[r][i] = the product of input row r and weight row w[i], for every input row.
template <typename W>
void dot4_rows(const InputRows<W>& in, const W* const w[4], int rows, float out[][4]) {
  const int n = in.in_dim_;
#ifdef GATTN_SMALL_BATCH_AVX2
  using Row = typename InputRows<W>::Row;
  Sums sums[kSmallBatchRows];
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < 4; ++i) sums[r][i] = _mm256_setzero_ps();
  const int vector_part = n - n % InputRows<W>::kStep;
  for (int begin = 0; begin < vector_part; begin += kChunk) {
    const int end = std::min(begin + kChunk, vector_part);
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
      const Row x[2] = {in.vector_row(r), in.vector_row(r + 1)};
      accumulate<2>(x, w, begin, end, sums + r);
    }
    if (r < rows) {
      const Row x[1] = {in.vector_row(r)};
      accumulate<1>(x, w, begin, end, sums + r);
    }
  }
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < 4; ++i)
      out[r][i] = lane_sum(sums[r][i]) + dot_tail(in.row(r), w[i], vector_part, n);
#else
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < 4; ++i) out[r][i] = dot_tail(in.row(r), w[i], 0, n);
#endif
}

// Output columns [begin, end) for every input row: each weight row is read from memory once. The
// columns are cut into four parts read side by side, four long sequential streams: at one thread
// on Zen 3 this reads 24-28 GB/s against 17-18 for one stream and 14-23 for four neighbouring rows
// (2-4 KiB apart, the prefetcher's pages shared). A part is an odd number of rows, so the streams
// start an odd multiple of a row apart, not a large power of two: four equal parts of a 1024-row
// matrix (512 KiB apart in bf16, inside one huge page) read 16.5 GB/s on a Xeon (family 6 model
// 207, one thread, 256 such matrices cold) against 20.1 with parts of 255 rows, and 20.3 for one
// matrix of 65,536 rows; 35.3 against 41.0 GB/s at two threads. The columns left over go in fours
// (the last group's last column repeated); as every column goes through dot4_rows, its sums depend
// neither on the grouping nor on the number of threads.
template <typename W>
void columns(float* out, int ld_out, const InputRows<W>& in, const W* w, int rows, int in_dim,
             int begin, int end, bool accumulate) {
  auto group = [&](const int cols[4], int count) {
    const W* const wn[4] = {w + int64_t(cols[0]) * in_dim, w + int64_t(cols[1]) * in_dim,
                            w + int64_t(cols[2]) * in_dim, w + int64_t(cols[3]) * in_dim};
    float s[kSmallBatchRows][4];
    dot4_rows(in, wn, rows, s);
    for (int r = 0; r < rows; ++r) {
      float* o = out + int64_t(r) * ld_out;
      for (int i = 0; i < count; ++i) o[cols[i]] = accumulate ? o[cols[i]] + s[r][i] : s[r][i];
    }
  };
  int part = (end - begin) / 4;
  if (part % 2 == 0 && part > 0) --part;
  for (int n = begin; n < begin + part; ++n) {
    const int cols[4] = {n, n + part, n + 2 * part, n + 3 * part};
    group(cols, 4);
  }
  for (int first = begin + 4 * part; first < end; first += 4) {
    const int left = std::min(4, end - first);
    const int cols[4] = {first, first + std::min(1, left - 1), first + std::min(2, left - 1),
                         first + left - 1};
    group(cols, left);
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
