// The bf16 tile kernel (ops/bf16_tile.h) written once over a lane type L of 16 lanes, so that the
// AVX-512 kernel (ops/bf16_tile_avx512.cpp) and a scalar model of its instructions
// (ops/bf16_tile.cpp) run the same packing, blocking and tail code. Internal to those two files.
// Every function here is a template on L, and each file's L is local to it: the AVX-512 file's
// instantiations cannot be shared with baseline code (so no std::min either).
//
// vdpbf16ps sums, per fp32 lane, the products of a pair of bf16 values (low half with low half,
// high with high). Both operands are packed as 32-bit words holding two consecutive k:
// a word (i, p) = (op(a)[i][2p], op(a)[i][2p+1]), b word (p, j) = (op(b)[2p][j], op(b)[2p+1][j]).
// The kernel broadcasts a's words and reads b's as rows of 16 lanes, so b is stored p-major with
// its columns contiguous (padded with zero words to a multiple of 16); a's words may have any
// strides (a_row, a_pair), which is how a transposed a is read without moving it.
//
// L provides: Floats (16 fp32), Words (16 uint32), Pairs (8 x 64 bits); Mask (16 lanes) and
// first(count); load(x, mask) masked floats (others 0); to_bf16_words(Floats) each value rounded
// to bf16 and zero-extended; pair_words(hi, lo) the 32 bf16 of lo then hi as 16 words;
// or_high(lo, hi) lo | hi << 16; zero_words(); store(words, Words); store(words, mask, Words);
// load_pairs(x, mask) 16 masked floats as 8 pairs; transpose8(Pairs[8] in, Pairs[8] out);
// pair_words(Pairs hi, Pairs lo); load_words(words); broadcast(word); zero_floats();
// dot(acc, a, b) as vdpbf16ps; scale(acc, alpha); scale_add(acc, alpha, c, mask, beta) as
// mul then fmadd; store(c, mask, Floats).
#pragma once
#include <cstdint>

namespace gattn::bf16_tile_detail {

constexpr int kLanes = 16;
constexpr int kRowBlock = 4, kColBlock = 4 * kLanes;

// words[p * ld + j] = (x[2p][j], x[2p+1][j]) for a rows x cols row-major x: pairs across rows.
// Columns [cols, ld) are zero.
template <class L>
void pack_across_rows(const float* x, int rows, int cols, int ld_x, uint32_t* words, int ld) {
  for (int p = 0; p * 2 < rows; ++p) {
    const float* lo = x + int64_t(2 * p) * ld_x;
    const float* hi = lo + ld_x;
    const bool has_hi = 2 * p + 1 < rows;
    for (int j = 0; j < ld; j += kLanes) {
      const typename L::Mask valid = L::first(cols - j);
      const typename L::Words l = L::to_bf16_words(L::load(lo + j, valid));
      const typename L::Words h =
          has_hi ? L::to_bf16_words(L::load(hi + j, valid)) : L::zero_words();
      L::store(words + int64_t(p) * ld + j, L::or_high(l, h));
    }
  }
}

// words[r * ld + p] = (x[r][2p], x[r][2p+1]): pairs along each row (a plain bf16 copy).
template <class L>
void pack_along_rows(const float* x, int rows, int cols, int ld_x, uint32_t* words, int ld) {
  const int pairs = (cols + 1) / 2;
  for (int r = 0; r < rows; ++r) {
    const float* row = x + int64_t(r) * ld_x;
    uint32_t* out = words + int64_t(r) * ld;
    for (int p = 0; p < pairs; p += kLanes) {
      // 32 floats -> 16 words: even k in the low halves, odd k in the high ones.
      const int c = 2 * p;
      const typename L::Floats lo16 = L::load(row + c, L::first(cols - c));
      const typename L::Floats hi16 = L::load(row + c + kLanes, L::first(cols - c - kLanes));
      L::store(out + p, L::first(pairs - p), L::pair_words(hi16, lo16));
    }
  }
}

// words[p * ld + j] = (x[j][2p], x[j][2p+1]) for a rows x cols row-major x read transposed:
// 16 rows by 8 pairs at a time, each pair of floats moved as one 64-bit element. Rows [rows, ld)
// are zero.
template <class L>
void pack_transposed(const float* x, int rows, int cols, int ld_x, uint32_t* words, int ld) {
  using Pairs = typename L::Pairs;
  const int pairs = (cols + 1) / 2;
  for (int j0 = 0; j0 < ld; j0 += kLanes)
    for (int p0 = 0; p0 < pairs; p0 += 8) {
      Pairs r[kLanes], lo[8], hi[8];
      for (int t = 0; t < kLanes; ++t)
        r[t] = j0 + t < rows
                   ? L::load_pairs(x + int64_t(j0 + t) * ld_x + 2 * p0, L::first(cols - 2 * p0))
                   : L::zero_pairs();
      L::transpose8(r, lo);
      L::transpose8(r + 8, hi);
      for (int u = 0; u < 8 && p0 + u < pairs; ++u)
        L::store(words + int64_t(p0 + u) * ld + j0, L::pair_words(hi[u], lo[u]));
    }
}

// acc rows i0 .. i0 + MR, columns j0 .. j0 + 16 NV.
template <class L, int MR, int NV>
void kernel(float* c, int ldc, const uint32_t* a, int64_t a_row, int64_t a_pair, const uint32_t* b,
            int ldb, int pairs, int cols, float alpha, float beta) {
  typename L::Floats acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = L::zero_floats();
  for (int p = 0; p < pairs; ++p) {
    typename L::Words bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = L::load_words(b + int64_t(p) * ldb + v * kLanes);
    for (int r = 0; r < MR; ++r) {
      const typename L::Words av = L::broadcast(a[r * a_row + p * a_pair]);
      for (int v = 0; v < NV; ++v) acc[r][v] = L::dot(acc[r][v], av, bv[v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) {
      float* out = c + int64_t(r) * ldc + v * kLanes;
      const typename L::Mask valid = L::first(cols - v * kLanes);
      L::store(out, valid,
               beta != 0 ? L::scale_add(acc[r][v], alpha, out, valid, beta)
                         : L::scale(acc[r][v], alpha));
    }
}

template <class L>
using Kernel = void (*)(float*, int, const uint32_t*, int64_t, int64_t, const uint32_t*, int, int,
                        int, float, float);

template <class L, int MR>
constexpr Kernel<L> kKernels[4] = {kernel<L, MR, 1>, kernel<L, MR, 2>, kernel<L, MR, 3>,
                                   kernel<L, MR, 4>};

// bf16_tile_gemm on lanes L; aw and bw hold at least (k + 1) / 2 * m and (k + 1) / 2 * ld_b words
// (ld_b: n rounded up to 16).
template <class L>
void tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
               bool trans_b, float alpha, float beta, int lda, int ldb, int ldc, uint32_t* aw,
               uint32_t* bw) {
  static constexpr const Kernel<L>* by_rows[4] = {kKernels<L, 1>, kKernels<L, 2>, kKernels<L, 3>,
                                                  kKernels<L, 4>};
  const int pairs = (k + 1) / 2;
  const int ld_b = (n + kLanes - 1) / kLanes * kLanes;
  // a's words: along its rows when a is stored m x k, across rows when stored k x m (op = ^T).
  int64_t a_row = pairs, a_pair = 1;
  if (trans_a) {
    pack_across_rows<L>(a, k, m, lda, aw, m);
    a_row = 1;
    a_pair = m;
  } else {
    pack_along_rows<L>(a, m, k, lda, aw, pairs);
  }
  // b's words p-major: across rows when stored k x n, transposed when stored n x k (op = ^T).
  if (trans_b)
    pack_transposed<L>(b, n, k, ldb, bw, ld_b);
  else
    pack_across_rows<L>(b, k, n, ldb, bw, ld_b);
  for (int j0 = 0; j0 < n; j0 += kColBlock) {
    const int cols = n - j0 < kColBlock ? n - j0 : kColBlock;
    const int vectors = (cols + kLanes - 1) / kLanes;
    for (int i0 = 0; i0 < m; i0 += kRowBlock) {
      const int rows = m - i0 < kRowBlock ? m - i0 : kRowBlock;
      by_rows[rows - 1][vectors - 1](c + int64_t(i0) * ldc + j0, ldc, aw + i0 * a_row, a_row,
                                     a_pair, bw + j0, ld_b, pairs, cols, alpha, beta);
    }
  }
}

}  // namespace gattn::bf16_tile_detail
