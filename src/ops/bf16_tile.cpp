#include "ops/bf16_tile.h"

// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* values, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>
#include <vector>

#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

#ifdef __AVX512BF16__
namespace {
// vdpbf16ps sums, per fp32 lane, the products of a pair of bf16 values (low half with low half,
// high with high). Both operands are packed as 32-bit words holding two consecutive k:
// a word (i, p) = (op(a)[i][2p], op(a)[i][2p+1]), b word (p, j) = (op(b)[2p][j], op(b)[2p+1][j]).
// The kernel broadcasts a's words and reads b's as rows of 16 lanes, so b is stored p-major with
// its columns contiguous (padded with zero words to a multiple of 16); a's words may have any
// strides (a_row, a_pair), which is how a transposed a is read without moving it.
constexpr int kLanes = 16;

// Rounds 16 floats to bf16 (nearest even, subnormals flushed), zero-extended into 32-bit lanes.
__m512i bf16_lanes(const float* x, __mmask16 valid) {
  const __m256bh h = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(valid, x));
  return _mm512_cvtepu16_epi32(__m256i(h));
}

__mmask16 first(int count) {  // the first `count` lanes (none for count <= 0)
  if (count <= 0) return 0;
  return count >= kLanes ? __mmask16(0xffff) : __mmask16((1u << count) - 1);
}

// words[p * ld + j] = (x[2p][j], x[2p+1][j]) for a rows x cols row-major x: pairs across rows.
// Columns [cols, ld) are zero.
void pack_across_rows(const float* x, int rows, int cols, int ld_x, uint32_t* words, int ld) {
  for (int p = 0; p * 2 < rows; ++p) {
    const float* lo = x + int64_t(2 * p) * ld_x;
    const float* hi = lo + ld_x;
    const bool has_hi = 2 * p + 1 < rows;
    for (int j = 0; j < ld; j += kLanes) {
      const __mmask16 valid = first(cols - j);
      const __m512i l = bf16_lanes(lo + j, valid);
      const __m512i h = has_hi ? bf16_lanes(hi + j, valid) : _mm512_setzero_si512();
      _mm512_storeu_si512(words + int64_t(p) * ld + j, _mm512_or_si512(l, _mm512_slli_epi32(h, 16)));
    }
  }
}

// words[r * ld + p] = (x[r][2p], x[r][2p+1]): pairs along each row (a plain bf16 copy).
void pack_along_rows(const float* x, int rows, int cols, int ld_x, uint32_t* words, int ld) {
  const int pairs = (cols + 1) / 2;
  for (int r = 0; r < rows; ++r) {
    const float* row = x + int64_t(r) * ld_x;
    uint32_t* out = words + int64_t(r) * ld;
    for (int p = 0; p < pairs; p += kLanes) {
      // 32 floats -> 16 words: even k in the low halves, odd k in the high ones.
      const int c = 2 * p;
      const __m512 lo16 = _mm512_maskz_loadu_ps(first(cols - c), row + c);
      const __m512 hi16 = _mm512_maskz_loadu_ps(first(cols - c - kLanes), row + c + kLanes);
      const __m512bh pair = _mm512_cvtne2ps_pbh(hi16, lo16);
      _mm512_mask_storeu_epi32(out + p, first(pairs - p), __m512i(pair));
    }
  }
}

// The 8 x 8 transpose of 64-bit elements: rows r[0..8) in, columns out (c[u][i] = r[i][u]).
void transpose8(const __m512d* r, __m512d* c) {
  __m512d t[8], s[8];
  for (int i = 0; i < 4; ++i) {  // t[2i] = r[2i][0] r[2i+1][0] r[2i][2] r[2i+1][2] ...
    t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
  }
  // s[0] = rows 0-3 of columns 0 and 4, s[1] of 2 and 6, s[2] of 1 and 5, s[3] of 3 and 7;
  // s[4..8) the same of rows 4-7.
  const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int h = 0; h < 2; ++h) {
    const __m512d* th = t + 4 * h;
    s[4 * h + 0] = _mm512_permutex2var_pd(th[0], even, th[2]);
    s[4 * h + 1] = _mm512_permutex2var_pd(th[0], odd, th[2]);
    s[4 * h + 2] = _mm512_permutex2var_pd(th[1], even, th[3]);
    s[4 * h + 3] = _mm512_permutex2var_pd(th[1], odd, th[3]);
  }
  const int column_of[4] = {0, 2, 1, 3};  // s[q] holds columns column_of[q] and + 4
  for (int q = 0; q < 4; ++q) {
    c[column_of[q]] = _mm512_shuffle_f64x2(s[q], s[4 + q], 0x44);
    c[column_of[q] + 4] = _mm512_shuffle_f64x2(s[q], s[4 + q], 0xee);
  }
}

// words[p * ld + j] = (x[j][2p], x[j][2p+1]) for a rows x cols row-major x read transposed:
// 16 rows by 8 pairs at a time, each pair of floats moved as one 64-bit element. Rows [rows, ld)
// are zero.
void pack_transposed(const float* x, int rows, int cols, int ld_x, uint32_t* words, int ld) {
  const int pairs = (cols + 1) / 2;
  for (int j0 = 0; j0 < ld; j0 += kLanes)
    for (int p0 = 0; p0 < pairs; p0 += 8) {
      __m512d r[kLanes], lo[8], hi[8];
      for (int t = 0; t < kLanes; ++t)
        r[t] = j0 + t < rows ? _mm512_castps_pd(_mm512_maskz_loadu_ps(
                                   first(cols - 2 * p0), x + int64_t(j0 + t) * ld_x + 2 * p0))
                             : _mm512_setzero_pd();
      transpose8(r, lo);
      transpose8(r + 8, hi);
      for (int u = 0; u < 8 && p0 + u < pairs; ++u) {
        const __m512bh w = _mm512_cvtne2ps_pbh(_mm512_castpd_ps(hi[u]), _mm512_castpd_ps(lo[u]));
        _mm512_storeu_si512(words + int64_t(p0 + u) * ld + j0, __m512i(w));
      }
    }
}

// acc rows i0 .. i0 + MR, columns j0 .. j0 + 16 NV.
template <int MR, int NV>
void kernel(float* c, int ldc, const uint32_t* a, int64_t a_row, int64_t a_pair,
            const uint32_t* b, int ldb, int pairs, int cols, float alpha, float beta) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int p = 0; p < pairs; ++p) {
    __m512bh bv[NV];
    for (int v = 0; v < NV; ++v)
      bv[v] = __m512bh(_mm512_loadu_si512(b + int64_t(p) * ldb + v * kLanes));
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = __m512bh(_mm512_set1_epi32(int(a[r * a_row + p * a_pair])));
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      float* out = c + int64_t(r) * ldc + v * kLanes;
      const __mmask16 valid = first(cols - v * kLanes);
      __m512 result = _mm512_mul_ps(acc[r][v], alpha_v);
      if (beta != 0)
        result = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(valid, out), beta_v, result);
      _mm512_mask_storeu_ps(out, valid, result);
    }
}

using Kernel = void (*)(float*, int, const uint32_t*, int64_t, int64_t, const uint32_t*, int, int,
                        int, float, float);
template <int MR>
constexpr Kernel kKernels[4] = {kernel<MR, 1>, kernel<MR, 2>, kernel<MR, 3>, kernel<MR, 4>};
constexpr const Kernel* kByRows[4] = {kKernels<1>, kKernels<2>, kKernels<3>, kKernels<4>};
constexpr int kRowBlock = 4, kColBlock = 4 * kLanes;

uint32_t* scratch(std::vector<uint32_t, AlignedAllocator<uint32_t>>& buffer, size_t count) {
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}
}  // namespace

bool bf16_tiles_available() { return true; }

void bf16_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                    bool trans_b, float alpha, float beta, int lda, int ldb, int ldc) {
  if (m <= 0 || n <= 0) return;
  thread_local std::vector<uint32_t, AlignedAllocator<uint32_t>> a_words, b_words;
  const int pairs = (k + 1) / 2;
  const int ld_b = (n + kLanes - 1) / kLanes * kLanes;
  // a's words: along its rows when a is stored m x k, across rows when stored k x m (op = ^T).
  uint32_t* aw = scratch(a_words, size_t(trans_a ? pairs * m : m * pairs));
  int64_t a_row = pairs, a_pair = 1;
  if (trans_a) {
    pack_across_rows(a, k, m, lda, aw, m);
    a_row = 1;
    a_pair = m;
  } else {
    pack_along_rows(a, m, k, lda, aw, pairs);
  }
  // b's words p-major: across rows when stored k x n, transposed when stored n x k (op = ^T).
  uint32_t* bw = scratch(b_words, size_t(pairs) * ld_b);
  if (trans_b)
    pack_transposed(b, n, k, ldb, bw, ld_b);
  else
    pack_across_rows(b, k, n, ldb, bw, ld_b);
  for (int j0 = 0; j0 < n; j0 += kColBlock) {
    const int cols = std::min(kColBlock, n - j0);
    const int vectors = (cols + kLanes - 1) / kLanes;
    for (int i0 = 0; i0 < m; i0 += kRowBlock) {
      const int rows = std::min(kRowBlock, m - i0);
      kByRows[rows - 1][vectors - 1](c + int64_t(i0) * ldc + j0, ldc, aw + i0 * a_row, a_row,
                                     a_pair, bw + j0, ld_b, pairs, cols, alpha, beta);
    }
  }
}

#else  // no bf16 instructions in this build: tile_matmul keeps fp32 tiles

bool bf16_tiles_available() { return false; }

void bf16_tile_gemm(float*, const float*, const float*, int, int, int, bool, bool, float, float,
                    int, int, int) {
  GATTN_ASSERT(false, "bf16_tile_gemm: this build has no avx512_bf16 kernel");
}

#endif

}  // namespace gattn
