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
#include "few_query_values_check.h"
#include "ops/avx512_kernels.h"
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

template <typename KV>
void check_values(int group, int d) {
  const ValuesCase<KV> c = values_case<KV>(2, group, d, 4 * 7 + 3, 5);  // 3 rows left over
  std::vector<float> got = c.acc;
  avx512::few_query_values(got.data(), c.p.data(), c.n, c.vectors_view(), c.v.data(), c.ld, c.n);
  // A row left over is a quad with zero weights beside it.
  const auto want = values_in_four_streams(c, [&](float* a, auto weight, auto value, int count) {
    auto w = [&](int i) { return i == 0 || count == 4 ? weight(i) : 0.0f; };
    for (int col = 0; col < d; ++col) {
      float s = w(0) * value(0, col);
      s = std::fma(w(1), value(1, col), s);
      s = std::fma(w(2), value(2, col), s);
      s = std::fma(w(3), value(3, col), s);
      a[col] = a[col] + s;
    }
  });
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
