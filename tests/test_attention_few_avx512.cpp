// The AVX-512 passes of the few-query attention (ops/avx512_kernels.h) against the arithmetic
// they promise, bit for bit, where this CPU runs them: the values pass (each quad of rows in the
// four-stream order added as p0 v0, then + p1 v1, + p2 v2, + p3 v3, to the accumulator; a row left
// over as a quad with zero weights beside it), for one to six vectors per kv head (the register
// blocks) and head sizes of one to eight chunks of 16; and the softmax's exp_shifted (fast_exp's
// bits, the sum in eight lanes as attention_decode.cpp adds it), over every length from 1 to 70,
// with infinities, NaN and zeros of both signs among the scores. They skip on a CPU without
// AVX-512 BF16 and VNNI (the features the AVX-512 objects are compiled for).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "exp_shifted_check.h"
#include "ops/avx512_kernels.h"
#include "ops/bf16_bits.h"
#include "util/cpu_features.h"

#ifdef GATTN_X86_KERNELS
namespace gattn {
namespace {

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

// The CPU has every feature the AVX-512 objects are compiled for (whatever GATTN_ISA chooses).
bool runs_avx512_kernels() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512cd && f.avx512bw && f.avx512dq && f.avx512vl && f.avx512_bf16 &&
         f.avx512_vnni;
}

float widen(float x) { return x; }
float widen(uint16_t x) { return bf16_to_float(x); }
template <typename KV>
KV cached(float x);
template <>
float cached<float>(float x) {
  return x;
}
template <>
uint16_t cached<uint16_t>(float x) {
  return bf16_instruction_bits(x);
}

template <typename KV>
void check_values(int group, int d) {
  const int kv_heads = 2, n = 4 * 7 + 3, vectors = kv_heads * group;  // 3 rows left over
  const int64_t ld = kv_heads * d + 16;                               // padded rows
  std::mt19937 rng(5);
  std::normal_distribution<float> normal;
  std::vector<KV> v(n * ld);
  for (auto& x : v) x = cached<KV>(normal(rng));
  std::vector<float> p(size_t(vectors) * n), acc(size_t(vectors) * d);
  for (auto& x : p) x = std::exp(normal(rng));
  for (auto& x : acc) x = normal(rng);
  std::vector<int> kv_offset(vectors);
  for (int u = 0; u < vectors; ++u) kv_offset[u] = u / group * d;
  const FewQueryVectors qv{nullptr, kv_offset.data(), vectors, group, d};  // no queries read

  std::vector<float> got = acc, want = acc;
  avx512::few_query_values(got.data(), p.data(), n, qv, v.data(), ld, n);

  const int part = n / 4;
  for (int u = 0; u < vectors; ++u) {
    const KV* vu = v.data() + kv_offset[u];
    const float* pu = &p[size_t(u) * n];
    float* a = &want[size_t(u) * d];
    auto add_quad = [&](const int js[4], int count) {
      for (int c = 0; c < d; ++c) {
        auto weight = [&](int i) { return i == 0 || count == 4 ? pu[js[i]] : 0.0f; };
        auto term = [&](int i) { return widen(vu[js[i] * ld + c]); };
        float s = weight(0) * term(0);
        s = std::fma(weight(1), term(1), s);
        s = std::fma(weight(2), term(2), s);
        s = std::fma(weight(3), term(3), s);
        a[c] = a[c] + s;
      }
    };
    for (int j = 0; j < part; ++j) {
      const int js[4] = {j, j + part, j + 2 * part, j + 3 * part};
      add_quad(js, 4);
    }
    for (int j = 4 * part; j < n; ++j) {
      const int js[4] = {j, j, j, j};
      add_quad(js, 1);
    }
  }
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(want[i])) << "value " << i;
}

TEST(FewQueryAvx512, ValuesPassAddsEachQuadInItsOrderBitForBit) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "this CPU lacks the AVX-512 kernels' features";
  for (int group : {1, 2, 3, 4, 5, 6})
    for (int d : {16, 48, 64, 80, 128}) {
      SCOPED_TRACE(testing::Message() << "group " << group << ", head size " << d);
      check_values<float>(group, d);
      check_values<uint16_t>(group, d);
    }
}

TEST(FewQueryAvx512, ExpShiftedGivesTheScalarLoopsBits) {
  if (!runs_avx512_kernels()) GTEST_SKIP() << "this CPU lacks the AVX-512 kernels' features";
  check_exp_shifted(avx512::few_query_exp_shifted);
}

}  // namespace
}  // namespace gattn
#endif
