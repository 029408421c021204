// Many activation rows (prefill) times Q8_0, Q4_0, Q4_K or Q6_K weights on AVX-512 VNNI
// (ops/quant_tile.h): sixteen weight rows repacked once so that one vpdpbusd multiplies four values
// of all sixteen rows (lane n: weight row n) by the same four activation values, broadcast. A
// block's vpdpbusd leave each weight row's integer sums in its own lane: no reduction across
// lanes, one conversion and FMA per eight rows and block, where the row-by-row kernels
// (ops/quant_dot_avx512.cpp) gather sums across lanes for every block pair. K-quant sub-block
// scales multiply whole lanes (vpmulld), and the terms of Q4_K's mins and Q6_K's offset come from
// the activations' 16-value sums (vpdpwssd against the scales or mins, paired).
#include <immintrin.h>

#include <cstring>

// GCC 12's AVX-512 headers build the insert and set intrinsics on a deliberately undefined vector
// (`__m512i __Y = __Y;`), which -Wuninitialized reports at every use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "ops/avx512_kernels.h"
#include "ops/quant_dot.h"
#include "ops/quant_tile.h"
#include "ops/quant_tile_layout.h"

namespace gattn::avx512 {

namespace {

using namespace quant_tile_layout;

int32_t broadcast_word(const void* p) {
  int32_t four;
  std::memcpy(&four, p, 4);
  return four;
}

// acc[r][h] lanes are weight rows 8h .. 8h + 7; each lane adds its row's exact block products
// block after block in double: the scalar reference's sums (ops/quant_dot.cpp), bit for bit.

// Q8_0 / Q4_0: each block's sum (the weights' offset times the activations' block sum taken off)
// times d_w * d_x (exact in double).
template <int R>
void block32_rows(int64_t blocks, const uint8_t* tile, const ActivationRow* x, int32_t offset,
                  __m512d acc[][2]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileBlockBytes;
    __m512i w[8];
    for (int j = 0; j < 8; ++j) w[j] = _mm512_load_si512(at + 64 * j);
    const double* scales = reinterpret_cast<const double*>(at + kValuesBytes);
    const __m512d dw0 = _mm512_load_pd(scales), dw1 = _mm512_load_pd(scales + 8);
    for (int r = 0; r < R; ++r) {
      const int8_t* q = x[r].q + 32 * b;
      __m512i p = _mm512_set1_epi32(-offset * x[r].sums[b]);
      for (int j = 0; j < 8; ++j)
        p = _mm512_dpbusd_epi32(p, w[j], _mm512_set1_epi32(broadcast_word(q + 4 * j)));
      const __m512d dx = _mm512_set1_pd(x[r].d[b]);
      acc[r][0] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(p)),
                                  _mm512_mul_pd(dw0, dx), acc[r][0]);
      acc[r][1] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(p, 1)),
                                  _mm512_mul_pd(dw1, dx), acc[r][1]);
    }
  }
}

// The lanes' float scales times the activation's (float products, as llama.cpp rounds them), as
// two vectors of doubles.
inline void scales_times(const uint8_t* at, double xd, __m512d out[2]) {
  const __m512 s =
      _mm512_mul_ps(_mm512_load_ps(reinterpret_cast<const float*>(at)), _mm512_set1_ps(float(xd)));
  out[0] = _mm512_cvtps_pd(_mm512_castps512_ps256(s));
  out[1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
}

inline __m512d low_pd(__m512i v) { return _mm512_cvtepi32_pd(_mm512_castsi512_si256(v)); }
inline __m512d high_pd(__m512i v) { return _mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(v, 1)); }

// Q4_K: sumi = sum_j scale_j (nibbles . x over sub-block j), summ = sum_j min_j (x's sum over
// sub-block j); the block adds sumi * float(d * xd) - summ * float(dmin * xd), rounded once.
template <int R>
void q4_k_rows(int64_t blocks, const uint8_t* tile, const ActivationRow* x, __m512d acc[][2]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileKBlockBytes;
    __m512i sumi[R], summ[R];
    for (int r = 0; r < R; ++r) sumi[r] = summ[r] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i w[8];
      for (int i = 0; i < 8; ++i) w[i] = _mm512_load_si512(at + 64 * (8 * j + i));
      const __m512i scale = _mm512_load_si512(at + kQ4KScales + 64 * j);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = x[r].q + 256 * b + 32 * j;
        __m512i p = _mm512_setzero_si512();
        for (int i = 0; i < 8; ++i)
          p = _mm512_dpbusd_epi32(p, w[i], _mm512_set1_epi32(broadcast_word(q + 4 * i)));
        sumi[r] = _mm512_add_epi32(sumi[r], _mm512_mullo_epi32(p, scale));
      }
    }
    for (int i = 0; i < 8; ++i) {
      const __m512i mins = _mm512_load_si512(at + kQ4KMins + 64 * i);
      for (int r = 0; r < R; ++r)
        summ[r] = _mm512_dpwssd_epi32(
            summ[r], mins, _mm512_set1_epi32(broadcast_word(x[r].sums + 16 * b + 2 * i)));
    }
    for (int r = 0; r < R; ++r) {
      __m512d d[2], dmin[2];
      scales_times(at + kQ4KD, x[r].d[b], d);
      scales_times(at + kQ4KDmin, x[r].d[b], dmin);
      acc[r][0] = _mm512_add_pd(
          acc[r][0],
          _mm512_fmsub_pd(low_pd(sumi[r]), d[0], _mm512_mul_pd(low_pd(summ[r]), dmin[0])));
      acc[r][1] = _mm512_add_pd(
          acc[r][1],
          _mm512_fmsub_pd(high_pd(sumi[r]), d[1], _mm512_mul_pd(high_pd(summ[r]), dmin[1])));
    }
  }
}

// Q6_K: sumi = sum_s scale_s ((q + 32) . x over 16 values) - 32 sum_s scale_s (x's sum over
// them); the block adds sumi * float(d * xd).
template <int R>
void q6_k_rows(int64_t blocks, const uint8_t* tile, const ActivationRow* x, __m512d acc[][2]) {
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileKBlockBytes;
    __m512i sumi[R], offset[R];
    for (int r = 0; r < R; ++r) sumi[r] = offset[r] = _mm512_setzero_si512();
    for (int s = 0; s < 16; ++s) {
      __m512i w[4];
      for (int i = 0; i < 4; ++i) w[i] = _mm512_load_si512(at + 64 * (4 * s + i));
      const __m512i scale = _mm512_load_si512(at + kQ6KScales + 64 * s);
      for (int r = 0; r < R; ++r) {
        const int8_t* q = x[r].q + 256 * b + 16 * s;
        __m512i p = _mm512_setzero_si512();
        for (int i = 0; i < 4; ++i)
          p = _mm512_dpbusd_epi32(p, w[i], _mm512_set1_epi32(broadcast_word(q + 4 * i)));
        sumi[r] = _mm512_add_epi32(sumi[r], _mm512_mullo_epi32(p, scale));
      }
    }
    for (int i = 0; i < 8; ++i) {
      const __m512i pairs = _mm512_load_si512(at + kQ6KPairs + 64 * i);
      for (int r = 0; r < R; ++r)
        offset[r] = _mm512_dpwssd_epi32(
            offset[r], pairs, _mm512_set1_epi32(broadcast_word(x[r].sums + 16 * b + 2 * i)));
    }
    for (int r = 0; r < R; ++r) {
      const __m512i sum = _mm512_sub_epi32(sumi[r], _mm512_slli_epi32(offset[r], 5));
      __m512d d[2];
      scales_times(at + kQ6KD, x[r].d[b], d);
      acc[r][0] = _mm512_fmadd_pd(low_pd(sum), d[0], acc[r][0]);
      acc[r][1] = _mm512_fmadd_pd(high_pd(sum), d[1], acc[r][1]);
    }
  }
}

// R activation rows against one tile, written to out (rows ld_out apart; w_rows columns).
template <int R>
void tile_rows(WeightDtype dtype, int64_t cols, const uint8_t* tile, const ActivationRow* x,
               float* out, int64_t ld_out, int w_rows) {
  __m512d acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
  if (dtype == WeightDtype::q4_k)
    q4_k_rows<R>(cols / 256, tile, x, acc);
  else if (dtype == WeightDtype::q6_k)
    q6_k_rows<R>(cols / 256, tile, x, acc);
  else
    block32_rows<R>(cols / 32, tile, x, quant_tile_weight_offset(dtype), acc);
  const __mmask8 m0 = __mmask8(w_rows >= 8 ? 0xFF : (1u << w_rows) - 1);
  const __mmask8 m1 = __mmask8(w_rows >= 16 ? 0xFF : w_rows <= 8 ? 0 : (1u << (w_rows - 8)) - 1);
  for (int r = 0; r < R; ++r) {
    _mm256_mask_storeu_ps(out + r * ld_out, m0, _mm512_cvtpd_ps(acc[r][0]));
    _mm256_mask_storeu_ps(out + r * ld_out + 8, m1, _mm512_cvtpd_ps(acc[r][1]));
  }
}

}  // namespace

void quant_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                    const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out) {
  constexpr int kRows = 4;
  for (int r0 = 0; r0 < nx; r0 += kRows) {
    ActivationRow rows[kRows];
    const int n = nx - r0 < kRows ? nx - r0 : kRows;
    for (int r = 0; r < n; ++r) rows[r] = activation_row(dtype, x + (r0 + r) * x_stride, cols);
    float* o = out + r0 * ld_out;
    switch (n) {
      case 1:
        tile_rows<1>(dtype, cols, tile, rows, o, ld_out, w_rows);
        break;
      case 2:
        tile_rows<2>(dtype, cols, tile, rows, o, ld_out, w_rows);
        break;
      case 3:
        tile_rows<3>(dtype, cols, tile, rows, o, ld_out, w_rows);
        break;
      default:
        tile_rows<4>(dtype, cols, tile, rows, o, ld_out, w_rows);
    }
  }
}

}  // namespace gattn::avx512
