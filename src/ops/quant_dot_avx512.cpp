// AVX-512 (BW, VNNI) dot products of block-quantized weight rows with up to eight activation rows
// (ops/quant_dot.h): 64 weights an instruction — two Q8_0 / Q4_0 blocks, or two 32-value
// sub-blocks of a K-quant — each block's integer sums exact (vpdpbusd, or vpmaddubsw + vpmaddwd
// where sub-blocks carry integer scales), times the block's scale added into eight double lanes
// per row (exact products: ops/quant_dot.h).
#include <immintrin.h>

#include <cstring>
#include <type_traits>

// GCC 12's AVX-512 headers build the insert and set intrinsics on a deliberately undefined vector
// (`__m512i __Y = __Y;`), which -Wuninitialized reports at every use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "ops/avx512_kernels.h"
#include "ops/ggml_blocks.h"
#include "ops/quant_dot.h"

namespace gattn::avx512 {

namespace {

using ggml::BlockQ4_0;
using ggml::BlockQ4_K;
using ggml::BlockQ6_K;
using ggml::BlockQ8_0;

inline float half(uint16_t h) { return _cvtsh_ss(h); }

template <typename Block>
const Block* blocks_of(const uint8_t* row) {
  return reinterpret_cast<const Block*>(row);
}

inline __m512i two_halves(const void* lo, const void* hi) {
  return _mm512_inserti64x4(
      _mm512_zextsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
      _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}

// Asks for the weights a few rows ahead (one stream, read faster than the prefetcher alone reads it
// while the products run). 3 KiB ahead: with the faster one-row kernels of issue 34's seventeenth
// session, one-row products of a 265 MB matrix on two threads (Intel Xeon family 6 model 167)
// read Q8_0 30 GB/s of weights, Q4_0 27, Q4_K 24-25, Q6_K 28 (a plain read: 33-34), against 25,
// 22-23, 21-23 and 24 at 4 KiB; 2 KiB was as good, 1 KiB and 8 KiB or more worse. (The earlier
// kernels, on the family 6 model 207 machine, had read Q8_0 19 GB/s at 4 KiB against 15-17 at 2.)
inline void prefetch_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + 3072, _MM_HINT_T0);
}

// The most 32-value blocks a row may have for the grouped path below (rows of up to 16,384 values;
// longer ones take the row-by-row path).
constexpr int64_t kGroupedBlocks = 512;

// The activation rows of one call. For Q8_0 and Q4_0 with a multiple of 4 rows, also their block
// scales transposed (scale_t[b * NX + r]: four rows' scales of a block in one load); for Q4_K (and
// Q6_K, which reads the scales alone) with 4 rows or more, each block's scales (kscale_t[b * 8 +
// r], floats) and each sub-block's sum of
// values (kmin_t[(b * 8 + j) * 8 + r], doubles: the two 16-value sums added), rows past NX zero:
// the mins' terms of eight rows in one vector. For Q8_0 with one row, each block's sum of values
// times the weights' offset (128: the bytes read unsigned): xsum[b]. For Q4_0 and Q4_K with one
// row, the values in the order of the weights' nibbles (below). On the stack (no library
// containers in this file: their code would be shared with the baseline's).
template <int NX>
struct Rows {
  static constexpr bool kTransposedK = NX >= 4;
  ActivationRow row[NX];
  const double* scale_t = nullptr;
  const double* kmin_t = nullptr;
  const float* kscale_t = nullptr;
  const int32_t* xsum = nullptr;
  double transposed[NX % 4 == 0 ? kGroupedBlocks * NX : 1];
  int32_t xsums[NX == 1 ? kGroupedBlocks : 1];
  // One row with Q4_0 weights: the values of each four blocks in the order of their weights'
  // nibbles (the four blocks' values 0-15, then their values 16-31: 128 bytes), and for each
  // block's four int32 lanes of those, -8 times the sum of the eight values the lane multiplies
  // (the nibbles' offset, taken off before any product). Whole groups of four blocks.
  // One row with Q4_K weights: each 256 values in the order of two 64-byte loads of the
  // weights' nibbles (sub-blocks 0 | 2 (low nibbles), 1 | 3 (high ones), 4 | 6, 5 | 7), and
  // the sums of each sub-block's values (k_pairs: the two 16-value sums added; int16), the
  // mins' terms.
  const int8_t* nibble_order = nullptr;
  const int32_t* lane_starts = nullptr;
  const int16_t* k_pairs = nullptr;
  int8_t nibble_ordered[NX == 1 ? kGroupedBlocks * 32 : 1];
  int32_t lane_offsets[NX == 1 ? kGroupedBlocks * 4 : 1];
  int16_t pair_sums[NX == 1 ? kGroupedBlocks : 1];
  double kmins[kTransposedK ? kGroupedBlocks / 8 * 64 : 1];
  float kscales[kTransposedK ? kGroupedBlocks / 8 * 8 : 1];
  Rows(WeightDtype dtype, const uint8_t* x, int64_t stride, int64_t cols) {
    for (int r = 0; r < NX; ++r) row[r] = activation_row(dtype, x + r * stride, cols);
    const int64_t blocks = cols / 32;
    if (blocks > kGroupedBlocks) return;
    if (kTransposedK && (dtype == WeightDtype::q4_k || dtype == WeightDtype::q6_k)) {
      const bool mins = dtype == WeightDtype::q4_k;  // Q6_K has no mins' terms
      for (int64_t b = 0; b < cols / 256; ++b)
        for (int r = 0; r < 8; ++r) {
          kscales[b * 8 + r] = r < NX ? float(row[r].d[b]) : 0.0f;
          for (int j = 0; mins && j < 8; ++j)
            kmins[(b * 8 + j) * 8 + r] =
                r < NX ? double(row[r].sums[16 * b + 2 * j] + row[r].sums[16 * b + 2 * j + 1]) : 0;
        }
      kmin_t = mins ? kmins : nullptr;
      kscale_t = kscales;
      return;
    }
    if (dtype == WeightDtype::q4_k) order_for_q4_k(cols / 256);
    if (dtype != WeightDtype::q8_0 && dtype != WeightDtype::q4_0) return;
    if (NX == 1 && dtype == WeightDtype::q4_0) {
      order_for_nibbles(blocks);
      return;
    }
    if (NX == 1) {
      for (int64_t b = 0; b < blocks; ++b) {
        int sum = 0;
        for (int j = 0; j < 32; ++j) sum += row[0].q[32 * b + j];
        xsums[b] = 128 * sum;
      }
      xsum = xsums;
      return;
    }
    if (NX % 4 != 0) return;
    for (int64_t b = 0; b < blocks; ++b)
      for (int r = 0; r < NX; ++r) transposed[b * NX + r] = row[r].d[b];
    scale_t = transposed;
  }
  void order_for_nibbles(int64_t blocks) {
    if constexpr (NX == 1) {
      for (int64_t b = 0; b + 3 < blocks; b += 4)
        for (int k = 0; k < 4; ++k) {
          const int8_t* x = row[0].q + 32 * (b + k);
          std::memcpy(nibble_ordered + 32 * b + 16 * k, x, 16);
          std::memcpy(nibble_ordered + 32 * b + 64 + 16 * k, x + 16, 16);
          for (int lane = 0; lane < 4; ++lane) {
            int sum = 0;
            for (int i = 0; i < 4; ++i) sum += x[4 * lane + i] + x[16 + 4 * lane + i];
            lane_offsets[4 * (b + k) + lane] = -8 * sum;
          }
        }
      nibble_order = nibble_ordered;
      lane_starts = lane_offsets;
    }
  }
  void order_for_q4_k(int64_t blocks) {
    if constexpr (NX == 1) {
      constexpr int kSubBlockAt[8] = {0, 2, 1, 3, 4, 6, 5, 7};  // the 32-byte chunks' sub-blocks
      for (int64_t b = 0; b < blocks; ++b)
        for (int j = 0; j < 8; ++j) {
          std::memcpy(nibble_ordered + 256 * b + 32 * j, row[0].q + 256 * b + 32 * kSubBlockAt[j],
                      32);
          pair_sums[8 * b + j] =
              int16_t(row[0].sums[16 * b + 2 * j] + row[0].sums[16 * b + 2 * j + 1]);
        }
      nibble_order = nibble_ordered;
      k_pairs = pair_sums;
    }
  }
};

// acc + p's lanes 0-7 * a + lanes 8-15 * b, in double (two blocks' sums and scales).
inline __m512d add_two_scaled(__m512d acc, __m512i p, double a, double b) {
  acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(p)), _mm512_set1_pd(a), acc);
  return _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(p, 1)), _mm512_set1_pd(b),
                         acc);
}

// acc + (p's 16 lanes added in pairs: exact) * scale, in double (one block).
inline __m512d add_scaled(__m512d acc, __m512i p, double scale) {
  const __m256i eight =
      _mm256_add_epi32(_mm512_castsi512_si256(p), _mm512_extracti64x4_epi64(p, 1));
  return _mm512_fmadd_pd(_mm512_cvtepi32_pd(eight), _mm512_set1_pd(scale), acc);
}

// Products of 64 signed weights with 64 signed activations, 4 to an int32 lane: vpdpbusd takes the
// activations as unsigned (x + 128, a flip of the top bit) and starts from -128 * (the lane's
// weights' sum), computed once per weight pair (`minus_128_sums`).
inline __m512i minus_128_sums(__m512i w) {
  const __m512i sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), w);
  return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 7));
}
inline __m512i signed_dot(__m512i start, __m512i w, const int8_t* x) {
  const __m512i x_unsigned = _mm512_xor_si512(_mm512_loadu_si512(x), _mm512_set1_epi8(char(0x80)));
  return _mm512_dpbusd_epi32(start, x_unsigned, w);
}

// One 32-value block of Q8_0 or Q4_0 (an odd last one), as the reference computes it.
inline double tail_block(const int8_t* w, const int8_t* x, double scale) {
  int s = 0;
  for (int j = 0; j < 32; ++j) s += int(w[j]) * int(x[j]);
  return double(s) * scale;
}

// Two Q4_0 blocks' 64 nibbles (0..15, the values + 8), in order (each block: its 16 low nibbles,
// then its 16 high ones).
inline __m512i q4_0_nibbles(const BlockQ4_0& a, const BlockQ4_0& b) {
  const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qs));
  const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(pa), pb, 1);
  const __m512i lo_hi = _mm512_inserti64x4(_mm512_zextsi256_si512(ab), _mm256_srli_epi16(ab, 4), 1);
  // lanes: a.lo b.lo a.hi b.hi (128 bits each) -> a.lo a.hi b.lo b.hi
  const __m512i order = _mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7);
  return _mm512_and_si512(_mm512_permutexvar_epi64(order, lo_hi), _mm512_set1_epi8(0x0F));
}

// Eight blocks' fp16 scales (each block's first two bytes) as doubles, blocks b + order[i]:
// four_rows_sums' lane order (b, b + 2, b + 4, b + 6, b + 1, b + 3, b + 5, b + 7) by default.
template <typename Block>
inline __m512d eight_scales(const Block* wb,
                            __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)) {
  const __m256i at = _mm256_mullo_epi32(order, _mm256_set1_epi32(int(sizeof(Block))));
  const __m256i words = _mm256_i32gather_epi32(reinterpret_cast<const int*>(wb), at, 1);
  return _mm512_cvtps_pd(_mm256_cvtph_ps(_mm256_cvtepi32_epi16(words)));
}

// The weights of Q8_0 (signed bytes) and Q4_0 (nibbles - 8) blocks, two at a time; Q8_0's also
// as vpdpbusd's unsigned operand (the bytes + 128) for the one-row path.
struct Q8_0Weights {
  const BlockQ8_0* wb;
  __m512i pair(int64_t b) const { return two_halves(wb[b].qs, wb[b + 1].qs); }
  __m512i unsigned_pair(int64_t b) const {
    return _mm512_xor_si512(pair(b), _mm512_set1_epi8(char(0x80)));
  }
  __m512d eight_scales(int64_t b) const { return avx512::eight_scales(wb + b); }
  double scale(int64_t b) const { return half(wb[b].d); }
  void values(int64_t b, int8_t out[32]) const { std::memcpy(out, wb[b].qs, 32); }
  const void* at(int64_t b) const { return wb + b; }
};
struct Q4_0Weights {
  const BlockQ4_0* wb;
  __m512i pair(int64_t b) const {
    return _mm512_sub_epi8(q4_0_nibbles(wb[b], wb[b + 1]), _mm512_set1_epi8(8));
  }
  double scale(int64_t b) const { return half(wb[b].d); }
  void values(int64_t b, int8_t out[32]) const {
    for (int j = 0; j < 16; ++j) {
      out[j] = int8_t((wb[b].qs[j] & 0xF) - 8);
      out[j + 16] = int8_t((wb[b].qs[j] >> 4) - 8);
    }
  }
  const void* at(int64_t b) const { return wb + b; }
};

// Four rows' products with a block pair (p[i]: 16 int32 lanes, 8 a block) added lane-wise into
// the 8 int32 sums [block A rows 0-3, block B rows 0-3]: a transposition by unpacks, exact.
inline __m256i four_rows_sums(const __m512i p[4]) {
  const __m512i t01 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(p[0], p[1]), _mm512_unpackhi_epi32(p[0], p[1]));
  const __m512i t23 =
      _mm512_add_epi32(_mm512_unpacklo_epi32(p[2], p[3]), _mm512_unpackhi_epi32(p[2], p[3]));
  // each 128-bit chunk: [row 0, 1, 2, 3] sums of that chunk's lanes
  const __m512i q =
      _mm512_add_epi32(_mm512_unpacklo_epi64(t01, t23), _mm512_unpackhi_epi64(t01, t23));
  // chunks 0 + 1 are block A, 2 + 3 block B
  const __m512i s = _mm512_add_epi32(q, _mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castsi512_si256(_mm512_shuffle_i64x2(s, s, _MM_SHUFFLE(2, 0, 2, 0)));
}

// One activation row (decode) with Q8_0 weights: the weights as vpdpbusd's unsigned operand against
// the signed activations, each block's offset (xs.xsum) taken off its int32 sum; eight blocks' sums
// gathered into one vector (four_rows_sums, pairs as its rows), converted once and scaled by the
// eight weight x activation scales at once. Advances b past the whole groups of eight blocks.
template <typename Weights>
double one_row_eights(int64_t blocks, const Weights& wt, const Rows<1>& xs, int64_t& b) {
  const __m512i order64 = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
  const __m256i order32 = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  const int8_t* x = xs.row[0].q;
  __m512d acc = _mm512_setzero_pd();
  for (; b + 7 < blocks; b += 8) {
    __m512i p[4];
    for (int k = 0; k < 4; ++k) {
      prefetch_ahead(wt.at(b + 2 * k));
      p[k] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wt.unsigned_pair(b + 2 * k),
                                 _mm512_loadu_si512(x + 32 * (b + 2 * k)));
    }
    const __m256i offsets = _mm256_permutexvar_epi32(
        order32, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs.xsum + b)));
    const __m256i sums = _mm256_sub_epi32(four_rows_sums(p), offsets);
    const __m512d dx = _mm512_permutexvar_pd(order64, _mm512_loadu_pd(xs.row[0].d + b));
    acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(sums), _mm512_mul_pd(wt.eight_scales(b), dx), acc);
  }
  return _mm512_reduce_add_pd(acc);
}

// One activation row with Q4_0 weights, eight blocks at a time: each four blocks' nibbles loaded
// in place (16 bytes a block into a 128-bit lane), low and high nibbles against the activations
// in the same order (Rows::nibble_order), the lanes starting from minus the offset's products,
// so no lane is moved before the four lanes of each block are added; the eight blocks' sums
// then in block order, converted once and scaled by the eight weight x activation scales.
// Advances b past the whole groups of eight blocks.
double q4_0_one_row_eights(int64_t blocks, const BlockQ4_0* wb, const Rows<1>& xs, int64_t& b) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  // lanes 4c and 4c + 2 of the pair sums below hold blocks c and c + 4
  const __m512i in_order = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i natural = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m512d acc = _mm512_setzero_pd();
  for (; b + 7 < blocks; b += 8) {
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(wb + b);
    for (int line = 0; line < 3; ++line) prefetch_ahead(bytes + 64 * line);
    __m512i p[2];  // blocks b .. b + 3 and b + 4 .. b + 7, four int32 lanes each
    for (int h = 0; h < 2; ++h) {
      const BlockQ4_0* q = wb + b + 4 * h;
      __m512i v =
          _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q[0].qs)));
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q[1].qs)), 1);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q[2].qs)), 2);
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q[3].qs)), 3);
      const int8_t* x = xs.nibble_order + 32 * (b + 4 * h);
      __m512i s = _mm512_loadu_si512(xs.lane_starts + 4 * (b + 4 * h));
      s = _mm512_dpbusd_epi32(s, _mm512_and_si512(v, low4), _mm512_loadu_si512(x));
      p[h] = _mm512_dpbusd_epi32(s, _mm512_and_si512(_mm512_srli_epi16(v, 4), low4),
                                 _mm512_loadu_si512(x + 64));
    }
    // per 128-bit lane c: [a0 + a2, a1 + a3, b0 + b2, b1 + b3], then each pair added
    const __m512i halves =
        _mm512_add_epi32(_mm512_unpacklo_epi64(p[0], p[1]), _mm512_unpackhi_epi64(p[0], p[1]));
    const __m512i pairs = _mm512_add_epi32(halves, _mm512_shuffle_epi32(halves, _MM_PERM_CDAB));
    const __m256i sums = _mm512_castsi512_si256(_mm512_permutexvar_epi32(in_order, pairs));
    const __m512d dx = _mm512_loadu_pd(xs.row[0].d + b);
    acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(sums),
                          _mm512_mul_pd(eight_scales(wb + b, natural), dx), acc);
  }
  return _mm512_reduce_add_pd(acc);
}

template <int NX, typename Weights>
void pair_rows(int64_t cols, const Weights& wt, const Rows<NX>& xs, float* out) {
  const int64_t blocks = cols / 32;
  double tail[NX] = {};
  int64_t b = 0;
  if (NX % 4 == 0 && xs.scale_t) {
    // Groups of four rows: each block's int32 lanes summed across before the double products.
    constexpr int kGroups = NX / 4 > 0 ? NX / 4 : 1;
    __m512d acc[kGroups];  // lanes: block A rows 0-3, block B rows 0-3 of the group
    for (int g = 0; g < NX / 4; ++g) acc[g] = _mm512_setzero_pd();
    for (; b + 1 < blocks; b += 2) {
      prefetch_ahead(wt.at(b));
      const __m512i wv = wt.pair(b);
      const __m512i start = minus_128_sums(wv);
      const __m512d dw =
          _mm512_insertf64x4(_mm512_set1_pd(wt.scale(b)), _mm256_set1_pd(wt.scale(b + 1)), 1);
      for (int g = 0; g < NX / 4; ++g) {
        __m512i p[4];
        for (int i = 0; i < 4; ++i) p[i] = signed_dot(start, wv, xs.row[4 * g + i].q + 32 * b);
        const __m512d dx =
            _mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_loadu_pd(xs.scale_t + b * NX + 4 * g)),
                               _mm256_loadu_pd(xs.scale_t + (b + 1) * NX + 4 * g), 1);
        acc[g] =
            _mm512_fmadd_pd(_mm512_cvtepi32_pd(four_rows_sums(p)), _mm512_mul_pd(dw, dx), acc[g]);
      }
    }
    for (int g = 0; g < NX / 4; ++g) {
      alignas(64) double lanes[8];
      _mm512_store_pd(lanes, acc[g]);
      for (int i = 0; i < 4; ++i) tail[4 * g + i] = lanes[i] + lanes[4 + i];
    }
  } else {
    if constexpr (NX == 1) {
      if constexpr (std::is_same_v<Weights, Q4_0Weights>) {
        if (xs.lane_starts) tail[0] = q4_0_one_row_eights(blocks, wt.wb, xs, b);
      } else if (xs.xsum) {
        tail[0] = one_row_eights(blocks, wt, xs, b);
      }
    }
    __m512d acc[NX];
    for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
    for (; b + 1 < blocks; b += 2) {
      prefetch_ahead(wt.at(b));
      const __m512i wv = wt.pair(b);
      const __m512i start = minus_128_sums(wv);
      const double d0 = wt.scale(b), d1 = wt.scale(b + 1);
      for (int r = 0; r < NX; ++r)
        acc[r] = add_two_scaled(acc[r], signed_dot(start, wv, xs.row[r].q + 32 * b),
                                d0 * xs.row[r].d[b], d1 * xs.row[r].d[b + 1]);
    }
    for (int r = 0; r < NX; ++r) tail[r] += _mm512_reduce_add_pd(acc[r]);
  }
  for (; b < blocks; ++b) {  // an odd last block
    int8_t values[32];
    wt.values(b, values);
    for (int r = 0; r < NX; ++r)
      tail[r] += tail_block(values, xs.row[r].q + 32 * b, wt.scale(b) * xs.row[r].d[b]);
  }
  for (int r = 0; r < NX; ++r) out[r] = float(tail[r]);
}

template <int NX>
void q8_0_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  pair_rows<NX>(cols, Q8_0Weights{blocks_of<BlockQ8_0>(w)}, xs, out);
}

template <int NX>
void q4_0_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  pair_rows<NX>(cols, Q4_0Weights{blocks_of<BlockQ4_0>(w)}, xs, out);
}

// The int16 lanes of vpackssdw(p, p') hold, per 128-bit lane k, four of p's int32 lanes then four
// of p''s: for p the sums of sub-blocks s and s + 1 (lanes 0-7, 8-15) and p' those of s + 2 and
// s + 3, lanes k = 0, 1 hold s and s + 2, lanes k = 2, 3 hold s + 1 and s + 3. pair_pick(s) indexes
// the scales of those sub-blocks, lane by lane, for vpmaddwd.
inline __m512i pair_pick(int s) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = int16_t(s + (i % 8 >= 4 ? 2 : 0) + (i / 8 >= 2 ? 1 : 0));
  return _mm512_load_si512(idx);
}

// A Q4_K block's eight 6-bit scales (bytes 0-7) and mins (bytes 8-15) in one register, unpacked as
// ggml::q4_k_scales_mins does (llama.cpp's kmask unpacking) but never through memory: 4-byte
// stores read back as one 8-byte load stall store forwarding, once per block (a 1.6x slower
// one-row kernel).
inline __m128i q4_k_scales_mins(const uint8_t* packed) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  const uint32_t scales_0_3 = u[0] & low6, mins_0_3 = u[1] & low6;
  const uint32_t scales_4_7 = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
  const uint32_t mins_4_7 = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
  return _mm_set_epi32(int(mins_4_7), int(mins_0_3), int(scales_4_7), int(scales_0_3));
}

// One activation row's products with a Q4_K block (wv: its nibbles, sc: its scales as pair_pick
// orders them): 16 int32 lanes whose sum is the block's scaled sum.
inline __m512i q4_k_block_sums(const __m512i wv[4], const __m512i sc[2], const int8_t* x) {
  __m512i sums = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {  // sub-blocks 4h .. 4h + 3
    const __m512i p0 =
        _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * h], _mm512_loadu_si512(x + 128 * h));
    const __m512i p1 = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[2 * h + 1],
                                           _mm512_loadu_si512(x + 128 * h + 64));
    sums = _mm512_add_epi32(sums, _mm512_madd_epi16(_mm512_packs_epi32(p0, p1), sc[h]));
  }
  return sums;
}

// vpshufb controls that spread eight int16 scales (in every 128-bit lane) as the packed sums of
// two sub-block pairs lie: 128-bit lanes 0 and 1 four lanes of scale `a` then four of `a + 1`,
// lanes 2 and 3 of `a + 2` and `a + 3`.
inline __m512i spread_scales(int a) {
  alignas(64) int8_t idx[64];
  for (int i = 0; i < 64; ++i) {
    const int word = a + (i / 32) * 2 + (i % 16) / 8;
    idx[i] = int8_t(2 * word + i % 2);
  }
  return _mm512_load_si512(idx);
}

// One activation row with Q4_K weights (Rows::nibble_order, k_pairs), R weight rows at once (the
// activations' loads shared): per block two 64-byte loads of each row's nibbles, no lane moved
// before the products; four vpdpbusd (sub-blocks 0 | 2, 1 | 3, 4 | 6, 5 | 7 against the
// activations in that order), packed to int16 in pairs and multiplied by their sub-blocks' scales
// in one vpmaddwd each; the mins' terms from the sub-blocks' sums of values in one vpmaddwd.
// Exact integer sums, the same exact products as the reference.
template <int R>
void q4_k_one_input(int64_t cols, const uint8_t* w, int64_t w_bytes, const Rows<1>& xs,
                    float* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i spread[2] = {spread_scales(0), spread_scales(4)};
  __m512d acc[R];
  __m256d mins_acc[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm512_setzero_pd();
    mins_acc[r] = _mm256_setzero_pd();
  }
  for (int64_t b = 0; b < cols / 256; ++b) {
    const int8_t* x = xs.nibble_order + 256 * b;
    const __m512i xv[4] = {_mm512_loadu_si512(x), _mm512_loadu_si512(x + 64),
                           _mm512_loadu_si512(x + 128), _mm512_loadu_si512(x + 192)};
    const __m128i pairs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(xs.k_pairs + 8 * b));
    const float xd = float(xs.row[0].d[b]);
    for (int r = 0; r < R; ++r) {
      const BlockQ4_K& blk = blocks_of<BlockQ4_K>(w + r * w_bytes)[b];
      const uint8_t* bytes = reinterpret_cast<const uint8_t*>(&blk);
      for (int line = 0; line < 3; ++line) prefetch_ahead(bytes + 64 * line);
      const __m128i sm = q4_k_scales_mins(blk.scales);
      const __m512i scales16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));
      __m512i sums = _mm512_setzero_si512();
      for (int h = 0; h < 2; ++h) {
        const __m512i v = _mm512_loadu_si512(blk.qs + 64 * h);
        const __m512i lo =
            _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_and_si512(v, low4), xv[2 * h]);
        const __m512i hi = _mm512_dpbusd_epi32(
            _mm512_setzero_si512(), _mm512_and_si512(_mm512_srli_epi16(v, 4), low4), xv[2 * h + 1]);
        sums = _mm512_add_epi32(sums, _mm512_madd_epi16(_mm512_packs_epi32(lo, hi),
                                                        _mm512_shuffle_epi8(scales16, spread[h])));
      }
      acc[r] = add_scaled(acc[r], sums, double(half(blk.d) * xd));
      const __m128i mins = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), pairs);
      mins_acc[r] = _mm256_fmadd_pd(_mm256_cvtepi32_pd(mins),
                                    _mm256_set1_pd(double(half(blk.dmin) * xd)), mins_acc[r]);
    }
  }
  for (int r = 0; r < R; ++r) {
    const __m256d folded =
        _mm256_add_pd(_mm512_castpd512_pd256(acc[r]), _mm512_extractf64x4_pd(acc[r], 1));
    alignas(32) double lanes[4], min_lanes[4];
    _mm256_store_pd(lanes, folded);
    _mm256_store_pd(min_lanes, mins_acc[r]);
    out[r] = float((lanes[0] + lanes[1] + lanes[2] + lanes[3]) -
                   (min_lanes[0] + min_lanes[1] + min_lanes[2] + min_lanes[3]));
  }
}

// Eight rows' 16-lane sums (s[r]) added up, row r in lane r: exact.
inline __m256i eight_rows_sums(const __m512i s[8]) {
  const __m256i lo = four_rows_sums(s), hi = four_rows_sums(s + 4);  // [A rows, B rows]
  return _mm256_set_m128i(
      _mm_add_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1)),
      _mm_add_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1)));
}

// Q4_K: per 64 weights (two sub-blocks) one vpdpbusd of the unsigned nibbles with the signed
// activations, four products to an int32 lane (|sum| <= 4 * 15 * 127: an int16); two such
// vectors packed to int16 and multiplied by their sub-blocks' scales in one vpmaddwd. Exact: the
// same integer sums as the reference.
template <int NX>
void q4_k_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  __m512d acc[NX];  // the scaled sums minus the mins' terms: exact products, one accumulator
  for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
  const BlockQ4_K* wb = blocks_of<BlockQ4_K>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m512i pick[2] = {pair_pick(0), pair_pick(4)};
  __m512d min_acc = _mm512_setzero_pd();   // lane r: row r's mins' terms (the transposed path)
  __m512d rows_acc = _mm512_setzero_pd();  // lane r: row r's scaled sums (the transposed path)
  for (int64_t b = 0; b < cols / 256; ++b) {
    prefetch_ahead(wb + b);
    prefetch_ahead(reinterpret_cast<const uint8_t*>(wb + b) + 64);
    prefetch_ahead(reinterpret_cast<const uint8_t*>(wb + b) + 128);
    const __m128i sm = q4_k_scales_mins(wb[b].scales);
    const __m512i scales16 = _mm512_broadcast_i32x4(_mm_cvtepu8_epi16(sm));
    // each min twice, for the two 16-value sums of its sub-block
    const __m128i m16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm, sm));
    const __m256i mins16 =
        _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
    __m512i wv[4];  // sub-blocks 2j (low nibbles) and 2j + 1 (high ones)
    for (int j = 0; j < 4; ++j) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs + 32 * j));
      wv[j] = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_and_si256(q, low4)),
                                 _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
    }
    const __m512i sc[2] = {_mm512_permutexvar_epi16(pick[0], scales16),
                           _mm512_permutexvar_epi16(pick[1], scales16)};
    const float d = half(wb[b].d), dmin = half(wb[b].dmin);
    if (xs.kmin_t) {  // eight rows' mins' terms at once: sum_j min_j * (sub-block j's sum)
      alignas(64) double mins[8];  // one wide store, read back as eight broadcasts
      _mm512_store_pd(mins, _mm512_cvtepi32_pd(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(sm, sm))));
      __m512d m = _mm512_setzero_pd();
      for (int j = 0; j < 8; ++j)
        m = _mm512_fmadd_pd(_mm512_set1_pd(mins[j]), _mm512_loadu_pd(xs.kmin_t + (b * 8 + j) * 8),
                            m);
      const __m512d f = _mm512_cvtps_pd(
          _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_loadu_ps(xs.kscale_t + b * 8)));
      min_acc = _mm512_fmadd_pd(m, f, min_acc);
    }
    if (xs.kmin_t) {  // eight rows' block sums in one vector: one conversion and FMA for all
      __m512i s[8];
      for (int r = 0; r < 8; ++r) s[r] = _mm512_setzero_si512();
      for (int r = 0; r < NX; ++r) s[r] = q4_k_block_sums(wv, sc, xs.row[r].q + 256 * b);
      const __m512d f =
          _mm512_cvtps_pd(_mm256_mul_ps(_mm256_set1_ps(d), _mm256_loadu_ps(xs.kscale_t + b * 8)));
      rows_acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(eight_rows_sums(s)), f, rows_acc);
      continue;
    }
    for (int r = 0; r < NX; ++r) {
      const __m512i sums = q4_k_block_sums(wv, sc, xs.row[r].q + 256 * b);
      const float xd = float(xs.row[r].d[b]);
      acc[r] = add_scaled(acc[r], sums, double(d * xd));
      // sum_j min_j * (sums 2j and 2j + 1 of x): eight exact int32 lanes
      const __m256i bsums =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs.row[r].sums + 16 * b));
      acc[r] = _mm512_fnmadd_pd(_mm512_cvtepi32_pd(_mm256_madd_epi16(mins16, bsums)),
                                _mm512_set1_pd(double(dmin * xd)), acc[r]);
    }
  }
  alignas(64) double mins_of[8], rows_of[8];
  _mm512_store_pd(mins_of, min_acc);
  _mm512_store_pd(rows_of, rows_acc);
  for (int r = 0; r < NX; ++r)
    out[r] = float((xs.kmin_t ? rows_of[r] : _mm512_reduce_add_pd(acc[r])) - mins_of[r]);
}

// vpermw indices that give 32 int16 scales for 64 products of Q6_K from a block's 16 scales
// (int16, lanes 0-15): eight lanes each of scales first .. first + 3.
inline __m512i four_scales16(int first) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = int16_t(first + i / 8);
  return _mm512_load_si512(idx);
}

template <int NX>
void q6_k_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  __m512d acc[NX];
  for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
  __m512d rows_acc = _mm512_setzero_pd();  // lane r: row r (the transposed path)
  const BlockQ6_K* wb = blocks_of<BlockQ6_K>(w);
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  // the high bits' shifts for quarters (1 | 2) and (3 | 4) of each 128 values
  const __m512i shift12 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shift34 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
  const __m512i pick[4] = {four_scales16(0), four_scales16(4), four_scales16(8), four_scales16(12)};
  for (int64_t b = 0; b < cols / 256; ++b) {
    const BlockQ6_K& blk = wb[b];
    for (int line = 0; line < 4; ++line)
      prefetch_ahead(reinterpret_cast<const uint8_t*>(&blk) + 64 * line);
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    __m512i sums[NX];
    for (int r = 0; r < NX; ++r) sums[r] = _mm512_setzero_si512();
    for (int n = 0; n < 2; ++n) {
      const __m512i ql = _mm512_loadu_si512(blk.ql + 64 * n);
      const __m512i qh = _mm512_broadcast_i64x4(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * n)));
      // values 0..63 (the -32 through the sums of x below): quarters 1 | 2, then 3 | 4
      const __m512i q12 = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                          _mm512_and_si512(_mm512_sllv_epi16(qh, shift12), bits45));
      const __m512i q34 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                          _mm512_and_si512(_mm512_srlv_epi16(qh, shift34), bits45));
      const __m512i sc12 = _mm512_permutexvar_epi16(pick[2 * n], _mm512_castsi256_si512(scales16));
      const __m512i sc34 =
          _mm512_permutexvar_epi16(pick[2 * n + 1], _mm512_castsi256_si512(scales16));
      for (int r = 0; r < NX; ++r) {
        const int8_t* q8 = xs.row[r].q + 256 * b + 128 * n;
        const __m512i x12 = _mm512_loadu_si512(q8), x34 = _mm512_loadu_si512(q8 + 64);
        sums[r] = _mm512_add_epi32(
            sums[r], _mm512_add_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(q12, x12), sc12),
                                      _mm512_madd_epi16(_mm512_maddubs_epi16(q34, x34), sc34)));
      }
    }
    const float d = half(blk.d);
    for (int r = 0; r < NX; ++r) {
      // 32 * sum over the 16 groups of scale * (sum of the group's x), in eight int32 lanes
      const __m256i bsums =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xs.row[r].sums + 16 * b));
      const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(scales16, bsums), 5);
      sums[r] = _mm512_sub_epi32(sums[r], _mm512_zextsi256_si512(offset));
      if (!xs.kscale_t) acc[r] = add_scaled(acc[r], sums[r], double(d * float(xs.row[r].d[b])));
    }
    if (xs.kscale_t) {  // eight rows' block sums in one vector: one conversion and FMA for all
      __m512i s[8];
      for (int r = 0; r < 8; ++r) s[r] = _mm512_setzero_si512();
      for (int r = 0; r < NX; ++r) s[r] = sums[r];
      const __m512d f =
          _mm512_cvtps_pd(_mm256_mul_ps(_mm256_set1_ps(d), _mm256_loadu_ps(xs.kscale_t + b * 8)));
      rows_acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(eight_rows_sums(s)), f, rows_acc);
    }
  }
  alignas(64) double rows_of[8];
  _mm512_store_pd(rows_of, rows_acc);
  for (int r = 0; r < NX; ++r)
    out[r] = float(xs.kscale_t ? rows_of[r] : _mm512_reduce_add_pd(acc[r]));
}

template <int NX, void (*kernel)(int64_t, const uint8_t*, const Rows<NX>&, float*)>
void weight_rows(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_bytes, int64_t w_rows,
                 const uint8_t* x, int64_t stride, float* out, int64_t ld_out) {
  const Rows<NX> xs(dtype, x, stride, cols);
  for (int64_t n = 0; n < w_rows; ++n) {
    float sums[NX];
    kernel(cols, w + n * w_bytes, xs, sums);
    for (int r = 0; r < NX; ++r) out[r * ld_out + n] = sums[r];
  }
}

// Q4_K weight rows against one activation row: two weight rows at a time where the activations
// were put in the nibbles' order (Rows::k_pairs), else row by row.
void q4_k_one_input_rows(int64_t cols, const uint8_t* w, int64_t w_bytes, int64_t w_rows,
                         const uint8_t* x, int64_t stride, float* out) {
  const Rows<1> xs(WeightDtype::q4_k, x, stride, cols);
  int64_t n = 0;
  for (; xs.k_pairs && n + 1 < w_rows; n += 2)
    q4_k_one_input<2>(cols, w + n * w_bytes, w_bytes, xs, out + n);
  for (; xs.k_pairs && n < w_rows; ++n)
    q4_k_one_input<1>(cols, w + n * w_bytes, w_bytes, xs, out + n);
  for (; n < w_rows; ++n) q4_k_rows<1>(cols, w + n * w_bytes, xs, out + n);
}

template <int NX>
void rows_of(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
             int64_t stride, float* out, int64_t ld_out) {
  const int64_t w_bytes = weight_row_bytes(dtype, cols);
  switch (dtype) {
    case WeightDtype::q8_0:
      return weight_rows<NX, q8_0_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    case WeightDtype::q4_0:
      return weight_rows<NX, q4_0_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    case WeightDtype::q4_k:
      if constexpr (NX == 1) return q4_k_one_input_rows(cols, w, w_bytes, w_rows, x, stride, out);
      return weight_rows<NX, q4_k_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    case WeightDtype::q6_k:
      return weight_rows<NX, q6_k_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    default:
      return;  // quant_dot (ops/quant_dot.cpp) sends block formats only
  }
}

}  // namespace

void quant_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
               int64_t x_stride, int nx, float* out, int64_t ld_out) {
  switch (nx) {
    case 1:
      return rows_of<1>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 2:
      return rows_of<2>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 3:
      return rows_of<3>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 4:
      return rows_of<4>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 5:
      return rows_of<5>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 6:
      return rows_of<6>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 7:
      return rows_of<7>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    default:
      return rows_of<8>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
  }
}

}  // namespace gattn::avx512
