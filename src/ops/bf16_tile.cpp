#include "ops/bf16_tile.h"

// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* values, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/bf16_bits.h"
#include "ops/bf16_tile_kernel.h"
#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

namespace {
using namespace bf16_tile_detail;

float bf16_to_float(uint32_t bits16) {
  const uint32_t u = bits16 << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The kernel's instructions lane by lane, as the Intel SDM defines them, in portable C++.
struct ScalarLanes {
  struct Floats {
    float v[kLanes];
  };
  struct Words {
    uint32_t v[kLanes];
  };
  struct Pairs {  // 8 pairs of floats, each moved as one 64-bit element
    uint64_t v[8];
  };
  using Mask = uint32_t;

  static Mask first(int count) {
    if (count <= 0) return 0;
    return count >= kLanes ? 0xffffu : (1u << count) - 1;
  }
  static Floats load(const float* x, Mask m) {  // masked lanes are neither read nor kept
    Floats f{};
    for (int i = 0; i < kLanes; ++i)
      if (m >> i & 1) f.v[i] = x[i];
    return f;
  }
  static Words to_bf16_words(const Floats& f) {
    Words w{};
    for (int i = 0; i < kLanes; ++i) w.v[i] = bf16_instruction_bits(f.v[i]);
    return w;
  }
  static Words pair_words(const Floats& hi, const Floats& lo) {  // vcvtne2ps2bf16
    Words w{};
    for (int i = 0; i < kLanes; ++i) {
      const Floats& half = i < kLanes / 2 ? lo : hi;
      const int j = 2 * (i % (kLanes / 2));
      w.v[i] = bf16_instruction_bits(half.v[j]) | uint32_t(bf16_instruction_bits(half.v[j + 1]))
                                                      << 16;
    }
    return w;
  }
  static Words or_high(const Words& lo, const Words& hi) {
    Words w{};
    for (int i = 0; i < kLanes; ++i) w.v[i] = lo.v[i] | hi.v[i] << 16;
    return w;
  }
  static Words zero_words() { return Words{}; }
  static void store(uint32_t* words, const Words& w) { std::memcpy(words, w.v, sizeof w.v); }
  static void store(uint32_t* words, Mask m, const Words& w) {
    for (int i = 0; i < kLanes; ++i)
      if (m >> i & 1) words[i] = w.v[i];
  }
  static Pairs load_pairs(const float* x, Mask m) {
    const Floats f = load(x, m);
    Pairs p;
    std::memcpy(p.v, f.v, sizeof p.v);
    return p;
  }
  static Pairs zero_pairs() { return Pairs{}; }
  static void transpose8(const Pairs* r, Pairs* c) {
    for (int u = 0; u < 8; ++u)
      for (int i = 0; i < 8; ++i) c[u].v[i] = r[i].v[u];
  }
  static Words pair_words(const Pairs& hi, const Pairs& lo) {
    Floats h, l;
    std::memcpy(h.v, hi.v, sizeof h.v);
    std::memcpy(l.v, lo.v, sizeof l.v);
    return pair_words(h, l);
  }
  static Words load_words(const uint32_t* words) {
    Words w;
    std::memcpy(w.v, words, sizeof w.v);
    return w;
  }
  static Words broadcast(uint32_t word) {
    Words w;
    for (uint32_t& x : w.v) x = word;
    return w;
  }
  static Floats zero_floats() { return Floats{}; }
  // vdpbf16ps: acc += a.hi * b.hi, then acc += a.lo * b.lo, each with one rounding (the bf16
  // products are exact in fp32), subnormal inputs read as zero and subnormal results flushed.
  static float flushed(float x) {
    return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x;
  }
  static Floats dot(const Floats& acc, const Words& a, const Words& b) {
    Floats out;
    for (int i = 0; i < kLanes; ++i) {
      float sum = flushed(acc.v[i]);
      for (const int shift : {16, 0}) {
        const float x = flushed(bf16_to_float(a.v[i] >> shift & 0xffffu));
        const float y = flushed(bf16_to_float(b.v[i] >> shift & 0xffffu));
        sum = flushed(std::fma(x, y, sum));
      }
      out.v[i] = sum;
    }
    return out;
  }
  static Floats scale(const Floats& acc, float alpha) {
    Floats out;
    for (int i = 0; i < kLanes; ++i) out.v[i] = acc.v[i] * alpha;
    return out;
  }
  static Floats scale_add(const Floats& acc, float alpha, const float* c, Mask m, float beta) {
    const Floats scaled = scale(acc, alpha), old = load(c, m);
    Floats out;
    for (int i = 0; i < kLanes; ++i) out.v[i] = std::fma(old.v[i], beta, scaled.v[i]);
    return out;
  }
  static void store(float* c, Mask m, const Floats& f) {
    for (int i = 0; i < kLanes; ++i)
      if (m >> i & 1) c[i] = f.v[i];
  }
};

#ifdef __AVX512BF16__
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
#endif

// The packed operands of one call, in scratch of the calling thread that grows to the largest.
template <class L>
void run_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                   bool trans_b, float alpha, float beta, int lda, int ldb, int ldc) {
  if (m <= 0 || n <= 0) return;
  thread_local std::vector<uint32_t, AlignedAllocator<uint32_t>> a_words, b_words;
  const size_t pairs = size_t(k + 1) / 2, ld_b = size_t(n + kLanes - 1) / kLanes * kLanes;
  if (a_words.size() < pairs * m) a_words.resize(pairs * m);
  if (b_words.size() < pairs * ld_b) b_words.resize(pairs * ld_b);
  tile_gemm<L>(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc, a_words.data(),
               b_words.data());
}
}  // namespace

#ifdef __AVX512BF16__
bool bf16_tiles_available() { return true; }

void bf16_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                    bool trans_b, float alpha, float beta, int lda, int ldb, int ldc) {
  run_tile_gemm<Avx512Lanes>(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc);
}
#else  // no bf16 instructions in this build: tile_matmul keeps fp32 tiles
bool bf16_tiles_available() { return false; }

void bf16_tile_gemm(float*, const float*, const float*, int, int, int, bool, bool, float, float,
                    int, int, int) {
  GATTN_ASSERT(false, "bf16_tile_gemm: this build has no avx512_bf16 kernel");
}
#endif

void bf16_tile_gemm_scalar_model(float* c, const float* a, const float* b, int m, int n, int k,
                                 bool trans_a, bool trans_b, float alpha, float beta, int lda,
                                 int ldb, int ldc) {
  run_tile_gemm<ScalarLanes>(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc);
}

}  // namespace gattn
