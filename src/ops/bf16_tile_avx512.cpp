// The bf16 tile kernel (ops/bf16_tile_kernel.h) on AVX-512 registers. Compiled with AVX-512
// flags (CMake's gattn_avx512) while the rest of the build targets the baseline: nothing here may
// be shared with baseline files (the lane type is in an anonymous namespace, so every kernel
// instantiation is local; no other inline function is used), since the linker keeps one copy of
// a shared inline function and might keep this file's.

// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* values, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "ops/avx512_kernels.h"
#include "ops/bf16_tile_kernel.h"

namespace gattn::avx512 {

namespace {
using namespace bf16_tile_detail;

// The same operations on AVX-512 registers.
struct Avx512Lanes {
  using Floats = __m512;
  using Words = __m512i;
  using Pairs = __m512d;
  using Mask = __mmask16;

  static Mask first(int count) {
    if (count <= 0) return 0;
    return count >= kLanes ? Mask(0xffff) : Mask((1u << count) - 1);
  }
  static Floats load(const float* x, Mask m) { return _mm512_maskz_loadu_ps(m, x); }
  static Words to_bf16_words(Floats f) {
    return _mm512_cvtepu16_epi32(__m256i(_mm512_cvtneps_pbh(f)));
  }
  static Words pair_words(Floats hi, Floats lo) { return __m512i(_mm512_cvtne2ps_pbh(hi, lo)); }
  static Words or_high(Words lo, Words hi) {
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
  }
  static Words zero_words() { return _mm512_setzero_si512(); }
  static void store(uint32_t* words, Words w) { _mm512_storeu_si512(words, w); }
  static void store(uint32_t* words, Mask m, Words w) { _mm512_mask_storeu_epi32(words, m, w); }
  static Pairs load_pairs(const float* x, Mask m) {
    return _mm512_castps_pd(_mm512_maskz_loadu_ps(m, x));
  }
  static Pairs zero_pairs() { return _mm512_setzero_pd(); }
  // The 8 x 8 transpose of 64-bit elements: rows r[0..8) in, columns out (c[u][i] = r[i][u]).
  static void transpose8(const Pairs* r, Pairs* c) {
    Pairs t[8], s[8];
    for (int i = 0; i < 4; ++i) {  // t[2i] = r[2i][0] r[2i+1][0] r[2i][2] r[2i+1][2] ...
      t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    // s[0] = rows 0-3 of columns 0 and 4, s[1] of 2 and 6, s[2] of 1 and 5, s[3] of 3 and 7;
    // s[4..8) the same of rows 4-7.
    const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
    const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
    for (int h = 0; h < 2; ++h) {
      const Pairs* th = t + 4 * h;
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
  static Words pair_words(Pairs hi, Pairs lo) {
    return pair_words(_mm512_castpd_ps(hi), _mm512_castpd_ps(lo));
  }
  static Words load_words(const uint32_t* words) { return _mm512_loadu_si512(words); }
  static Words broadcast(uint32_t word) { return _mm512_set1_epi32(int(word)); }
  static Floats zero_floats() { return _mm512_setzero_ps(); }
  static Floats dot(Floats acc, Words a, Words b) {
    return _mm512_dpbf16_ps(acc, __m512bh(a), __m512bh(b));
  }
  static Floats scale(Floats acc, float alpha) { return _mm512_mul_ps(acc, _mm512_set1_ps(alpha)); }
  static Floats scale_add(Floats acc, float alpha, const float* c, Mask m, float beta) {
    return _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c), _mm512_set1_ps(beta), scale(acc, alpha));
  }
  static void store(float* c, Mask m, Floats f) { _mm512_mask_storeu_ps(c, m, f); }
};
}  // namespace

void bf16_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                    bool trans_b, float alpha, float beta, int lda, int ldb, int ldc,
                    uint32_t* a_words, uint32_t* b_words) {
  tile_gemm<Avx512Lanes>(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc, a_words,
                         b_words);
}

}  // namespace gattn::avx512
