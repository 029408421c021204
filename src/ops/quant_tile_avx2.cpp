// Many activation rows (prefill) times Q8_0, Q4_0, Q4_K or Q6_K weights on AVX2 (ops/quant_tile.h):
// the packed tiles of ops/quant_tile_layout.h, each 64-byte vector taken as two halves of eight
// weight rows (lane n: a row). Four values of eight rows times the same four activation values,
// broadcast: vpmaddubsw sums the products in pairs in 16 bits, and every weight row's sums stay
// in its own lane, so a block costs one conversion and FMA per four rows, against the row-by-row
// kernels' (ops/quant_dot_avx2.cpp) per-block sums across lanes.
//
// The 16-bit sums are exact: Q4_0's and Q4_K's nibbles (<= 15) times |x| <= 127 over a block's or
// sub-block's 32 values reach 30,480, Q6_K's values + 32 (<= 63) over 8 values 32,004; each row's
// sub-block scale multiplies its lane's pairs in vpmaddwd. Q8_0's bytes (the value + 128 in the
// tile) would overflow them: its products take the signed value and the sign trick, summed in 32
// bits per four values. Each lane then adds its row's exact block products in double, block after
// block, as the scalar reference does (ops/quant_dot.cpp): its values bit for bit.
#include "ops/quant_dot_kernels.h"

#ifdef GATTN_QUANT_DOT_AVX2
#include <immintrin.h>

#include <cstring>

#include "ops/quant_dot.h"
#include "ops/quant_tile.h"
#include "ops/quant_tile_layout.h"

namespace gattn::quant_kernels {

namespace {

using namespace quant_tile_layout;

inline __m256i broadcast4(const int8_t* p) {
  int32_t four;
  std::memcpy(&four, p, 4);
  return _mm256_set1_epi32(four);
}
inline __m256i broadcast_pair(const int16_t* p) {
  int32_t two;
  std::memcpy(&two, p, 4);
  return _mm256_set1_epi32(two);
}
inline __m256i load_half(const uint8_t* vector, int h) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(vector + 32 * h));
}
// Lane n's int32 (|v| < 2^15) as the int16 pair (v, v), for vpmaddwd.
inline __m256i pair_of(__m256i v) { return _mm256_blend_epi16(v, _mm256_slli_epi32(v, 16), 0xAA); }

inline __m256d low_pd(__m256i v) { return _mm256_cvtepi32_pd(_mm256_castsi256_si128(v)); }
inline __m256d high_pd(__m256i v) { return _mm256_cvtepi32_pd(_mm256_extracti128_si256(v, 1)); }

// The eight lanes' float scales at `at` times the activation's (float products, as llama.cpp
// rounds them), as two vectors of doubles.
inline void scales_times(const uint8_t* at, int h, double xd, __m256d out[2]) {
  const __m256 s = _mm256_mul_ps(_mm256_load_ps(reinterpret_cast<const float*>(at) + 8 * h),
                                 _mm256_set1_ps(float(xd)));
  out[0] = _mm256_cvtps_pd(_mm256_castps256_ps128(s));
  out[1] = _mm256_cvtps_pd(_mm256_extractf128_ps(s, 1));
}

// acc[r] lanes are weight rows 8h .. 8h + 3 and 8h + 4 .. 8h + 7 of the tile.

// Block b's integer sums of R activation rows against eight weight rows: Q8_0's signed values by
// the sign trick (vpmaddubsw multiplies unsigned by signed bytes), in 32 bits.
template <int R>
void q8_0_block(const uint8_t* at, int h, const ActivationRow* x, int64_t b, __m256i p[R]) {
  const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(char(0x80));
  for (int r = 0; r < R; ++r) p[r] = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i w = _mm256_xor_si256(load_half(at + 64 * j, h), flip);  // signed
    const __m256i magnitude = _mm256_sign_epi8(w, w);
    for (int r = 0; r < R; ++r) {
      const __m256i xs = _mm256_sign_epi8(broadcast4(x[r].q + 32 * b + 4 * j), w);
      p[r] = _mm256_add_epi32(p[r], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, xs), ones));
    }
  }
}

// The same for Q4_0's unsigned nibbles (16-bit sums, exact), less the weight offset times the
// block's sum of x.
template <int R>
void q4_0_block(const uint8_t* at, int h, const ActivationRow* x, int64_t b, __m256i p[R]) {
  const __m256i ones = _mm256_set1_epi16(1);
  const int32_t offset = quant_tile_weight_offset(WeightDtype::q4_0);
  __m256i p16[R];
  for (int r = 0; r < R; ++r) p16[r] = _mm256_setzero_si256();
  for (int j = 0; j < 8; ++j) {
    const __m256i w = load_half(at + 64 * j, h);
    for (int r = 0; r < R; ++r)
      p16[r] =
          _mm256_add_epi16(p16[r], _mm256_maddubs_epi16(w, broadcast4(x[r].q + 32 * b + 4 * j)));
  }
  for (int r = 0; r < R; ++r)
    p[r] =
        _mm256_sub_epi32(_mm256_madd_epi16(p16[r], ones), _mm256_set1_epi32(offset * x[r].sums[b]));
}

// Q8_0 / Q4_0: each block's integer sum times d_w * d_x (exact in double).
template <int R, bool kQ8_0>
void block32_rows(int64_t blocks, const uint8_t* tile, int h, const ActivationRow* x,
                  __m256d acc[][2]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileBlockBytes;
    __m256i p[R];
    if constexpr (kQ8_0)
      q8_0_block<R>(at, h, x, b, p);
    else
      q4_0_block<R>(at, h, x, b, p);
    const double* scales = reinterpret_cast<const double*>(at + kValuesBytes) + 8 * h;
    const __m256d dw0 = _mm256_load_pd(scales), dw1 = _mm256_load_pd(scales + 4);
    for (int r = 0; r < R; ++r) {
      const __m256d dx = _mm256_set1_pd(x[r].d[b]);
      acc[r][0] = _mm256_fmadd_pd(low_pd(p[r]), _mm256_mul_pd(dw0, dx), acc[r][0]);
      acc[r][1] = _mm256_fmadd_pd(high_pd(p[r]), _mm256_mul_pd(dw1, dx), acc[r][1]);
    }
  }
}

// out[r] += sum_i (vector i of the 16-bit pairs at `pairs`) . (row r's 16-value sums 2i and 2i + 1
// of block b), in int32 lanes: the term of Q4_K's mins and of Q6_K's +32 offset.
template <int R>
void add_pairs_times_sums(const uint8_t* pairs, int h, const ActivationRow* x, int64_t b,
                          __m256i out[R]) {
  for (int i = 0; i < 8; ++i) {
    const __m256i w = load_half(pairs + 64 * i, h);
    for (int r = 0; r < R; ++r)
      out[r] = _mm256_add_epi32(out[r],
                                _mm256_madd_epi16(w, broadcast_pair(x[r].sums + 16 * b + 2 * i)));
  }
}

// Q4_K: sumi = sum_j scale_j (nibbles . x over sub-block j), summ = sum_j min_j (x's sum over
// sub-block j); the block adds sumi * float(d * xd) - summ * float(dmin * xd), rounded once.
template <int R>
void q4_k_rows(int64_t blocks, const uint8_t* tile, int h, const ActivationRow* x,
               __m256d acc[][2]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileKBlockBytes;
    __m256i sumi[R], summ[R];
    for (int r = 0; r < R; ++r) sumi[r] = summ[r] = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j) {
      __m256i p16[R];
      for (int r = 0; r < R; ++r) p16[r] = _mm256_setzero_si256();
      for (int i = 0; i < 8; ++i) {
        const __m256i w = load_half(at + 64 * (8 * j + i), h);
        for (int r = 0; r < R; ++r)
          p16[r] = _mm256_add_epi16(
              p16[r], _mm256_maddubs_epi16(w, broadcast4(x[r].q + 256 * b + 32 * j + 4 * i)));
      }
      const __m256i scale = pair_of(load_half(at + kQ4KScales + 64 * j, h));
      for (int r = 0; r < R; ++r)
        sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(p16[r], scale));
    }
    add_pairs_times_sums<R>(at + kQ4KMins, h, x, b, summ);
    for (int r = 0; r < R; ++r) {
      __m256d d[2], dmin[2];
      scales_times(at + kQ4KD, h, x[r].d[b], d);
      scales_times(at + kQ4KDmin, h, x[r].d[b], dmin);
      acc[r][0] = _mm256_add_pd(
          acc[r][0],
          _mm256_fmsub_pd(low_pd(sumi[r]), d[0], _mm256_mul_pd(low_pd(summ[r]), dmin[0])));
      acc[r][1] = _mm256_add_pd(
          acc[r][1],
          _mm256_fmsub_pd(high_pd(sumi[r]), d[1], _mm256_mul_pd(high_pd(summ[r]), dmin[1])));
    }
  }
}

// Q6_K: sumi = sum_s scale_s ((q + 32) . x over 16 values) - 32 sum_s scale_s (x's sum over
// them); the block adds sumi * float(d * xd).
template <int R>
void q6_k_rows(int64_t blocks, const uint8_t* tile, int h, const ActivationRow* x,
               __m256d acc[][2]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileKBlockBytes;
    __m256i sumi[R], offset[R];
    for (int r = 0; r < R; ++r) sumi[r] = offset[r] = _mm256_setzero_si256();
    for (int s = 0; s < 16; ++s) {
      const __m256i scale = pair_of(load_half(at + kQ6KScales + 64 * s, h));
      for (int half = 0; half < 2; ++half) {  // 16-bit sums of eight values each
        const __m256i w0 = load_half(at + 64 * (4 * s + 2 * half), h),
                      w1 = load_half(at + 64 * (4 * s + 2 * half + 1), h);
        for (int r = 0; r < R; ++r) {
          const int8_t* q = x[r].q + 256 * b + 16 * s + 8 * half;
          const __m256i p16 = _mm256_add_epi16(_mm256_maddubs_epi16(w0, broadcast4(q)),
                                               _mm256_maddubs_epi16(w1, broadcast4(q + 4)));
          sumi[r] = _mm256_add_epi32(sumi[r], _mm256_madd_epi16(p16, scale));
        }
      }
    }
    add_pairs_times_sums<R>(at + kQ6KPairs, h, x, b, offset);
    for (int r = 0; r < R; ++r) {
      const __m256i sum = _mm256_sub_epi32(sumi[r], _mm256_slli_epi32(offset[r], 5));
      __m256d d[2];
      scales_times(at + kQ6KD, h, x[r].d[b], d);
      acc[r][0] = _mm256_fmadd_pd(low_pd(sum), d[0], acc[r][0]);
      acc[r][1] = _mm256_fmadd_pd(high_pd(sum), d[1], acc[r][1]);
    }
  }
}

// R activation rows against half h of one tile (its rows 8h ..), `lanes` of them written to out
// (rows ld_out apart).
template <int R>
void half_rows(WeightDtype dtype, int64_t cols, const uint8_t* tile, int h, const ActivationRow* x,
               float* out, int64_t ld_out, int lanes) {
  __m256d acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_pd();
  if (dtype == WeightDtype::q4_k)
    q4_k_rows<R>(cols / 256, tile, h, x, acc);
  else if (dtype == WeightDtype::q6_k)
    q6_k_rows<R>(cols / 256, tile, h, x, acc);
  else if (dtype == WeightDtype::q8_0)
    block32_rows<R, true>(cols / 32, tile, h, x, acc);
  else
    block32_rows<R, false>(cols / 32, tile, h, x, acc);
  const __m256i mask =
      _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int r = 0; r < R; ++r) {
    const __m256 v = _mm256_set_m128(_mm256_cvtpd_ps(acc[r][1]), _mm256_cvtpd_ps(acc[r][0]));
    _mm256_maskstore_ps(out + r * ld_out + 8 * h, mask, v);
  }
}

}  // namespace

void avx2_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                   const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out) {
  constexpr int kRows = 4;
  for (int r0 = 0; r0 < nx; r0 += kRows) {
    ActivationRow rows[kRows];
    const int n = nx - r0 < kRows ? nx - r0 : kRows;
    for (int r = 0; r < n; ++r) rows[r] = activation_row(dtype, x + (r0 + r) * x_stride, cols);
    float* o = out + r0 * ld_out;
    for (int h = 0; h < 2 && 8 * h < w_rows; ++h) {
      const int lanes = w_rows - 8 * h < 8 ? w_rows - 8 * h : 8;
      switch (n) {
        case 1:
          half_rows<1>(dtype, cols, tile, h, rows, o, ld_out, lanes);
          break;
        case 2:
          half_rows<2>(dtype, cols, tile, h, rows, o, ld_out, lanes);
          break;
        case 3:
          half_rows<3>(dtype, cols, tile, h, rows, o, ld_out, lanes);
          break;
        default:
          half_rows<4>(dtype, cols, tile, h, rows, o, ld_out, lanes);
      }
    }
  }
}

}  // namespace gattn::quant_kernels

#endif  // GATTN_QUANT_DOT_AVX2
