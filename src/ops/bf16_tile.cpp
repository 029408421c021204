#include "ops/bf16_tile.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/avx512_kernels.h"
#include "ops/bf16_bits.h"
#include "ops/bf16_tile_kernel.h"
#include "util/aligned.h"
#include "util/cpu_isa.h"
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

// The packing scratch of the calling thread (tile_gemm's a_words and b_words for this shape),
// grown to the largest call.
struct Scratch {
  uint32_t *a_words, *b_words;
};
Scratch scratch_for(int m, int n, int k) {
  thread_local std::vector<uint32_t, AlignedAllocator<uint32_t>> a_words, b_words;
  const size_t pairs = size_t(k + 1) / 2, ld_b = size_t(n + kLanes - 1) / kLanes * kLanes;
  if (a_words.size() < pairs * m) a_words.resize(pairs * m);
  if (b_words.size() < pairs * ld_b) b_words.resize(pairs * ld_b);
  return {a_words.data(), b_words.data()};
}
}  // namespace

bool bf16_tiles_available() {
  static const bool available = avx512_bf16_kernels_in_use();
  return available;
}

void bf16_tile_gemm(float* c, const float* a, const float* b, int m, int n, int k, bool trans_a,
                    bool trans_b, float alpha, float beta, int lda, int ldb, int ldc) {
  GATTN_ASSERT(bf16_tiles_available(), "bf16_tile_gemm: the avx512_bf16 kernel is not in use (",
               isa_description(), ")");
#ifdef GATTN_X86_KERNELS
  if (m <= 0 || n <= 0) return;
  const Scratch s = scratch_for(m, n, k);
  avx512::bf16_tile_gemm(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc, s.a_words,
                         s.b_words);
#endif
}

void bf16_tile_gemm_scalar_model(float* c, const float* a, const float* b, int m, int n, int k,
                                 bool trans_a, bool trans_b, float alpha, float beta, int lda,
                                 int ldb, int ldc) {
  if (m <= 0 || n <= 0) return;
  const Scratch s = scratch_for(m, n, k);
  tile_gemm<ScalarLanes>(c, a, b, m, n, k, trans_a, trans_b, alpha, beta, lda, ldb, ldc, s.a_words,
                         s.b_words);
}

}  // namespace gattn
