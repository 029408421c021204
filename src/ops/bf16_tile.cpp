#include "ops/bf16_tile.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
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
  return _mm512_maskz_cvtepu16_epi32(0xffff, __m256i(h));  // maskz: gcc warns on the plain one
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
      _mm512_storeu_si512(words + int64_t(p) * ld + j, _mm512_or_si512(l, _mm512_maskz_slli_epi32(0xffff, h, 16)));
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
  thread_local std::vector<uint32_t, AlignedAllocator<uint32_t>> a_words, b_words, b_rows;
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
  // b's words p-major: across rows when stored k x n; when stored n x k (op = ^T), along its
  // rows and then transposed word by word.
  uint32_t* bw = scratch(b_words, size_t(pairs) * ld_b);
  if (trans_b) {
    uint32_t* rows = scratch(b_rows, size_t(n) * pairs);
    pack_along_rows(b, n, k, ldb, rows, pairs);
    for (int p = 0; p < pairs; ++p) {
      uint32_t* out = bw + int64_t(p) * ld_b;
      for (int j = 0; j < n; ++j) out[j] = rows[int64_t(j) * pairs + p];
      std::memset(out + n, 0, sizeof(uint32_t) * (ld_b - n));
    }
  } else {
    pack_across_rows(b, k, n, ldb, bw, ld_b);
  }
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
  fail("bf16_tile_gemm: this build has no avx512_bf16 kernel");
}

#endif

}  // namespace gattn
