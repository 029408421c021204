// The AVX2 passes of the few-query attention (ops/attention_few_avx2.h) against the portable
// loops' arithmetic, bit for bit, fp32 and bf16 rows, with GQA pairs (rows loaded once for two
// vectors) and without: the scores as the portable pass makes them (scale x dot4 for every four
// rows of the four-stream order, scale x dot for a row left over); the values written out: added
// four rows at a time as the loop's p0 v0 + p1 v1 + p2 v2 + p3 v3 is compiled (p1 v1, then p0, p2
// and p3 fused in: GCC's contraction), then added to the accumulator, a row left over by one fused
// add; rows in the four-stream order. And the softmax's exp_shifted (tests/exp_shifted_check.h).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "exp_shifted_check.h"
#include "few_query_values_check.h"
#include "ops/attention_few_avx2.h"

#ifdef GATTN_DOT_AVX2
namespace gattn {
namespace {

void expect_bits_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "value " << i;
}

template <typename KV>
void check(int group) {
  const ValuesCase<KV> c = values_case<KV>(3, group, 80, 4 * 9 + 3, 7);  // 3 rows left over
  std::vector<float> sums = c.acc;
  avx2::few_query_values(sums.data(), c.p.data(), c.n, c.vectors_view(), c.v.data(), c.ld, c.n);
  const auto want = values_in_four_streams(c, [&](float* a, auto weight, auto value, int count) {
    for (int col = 0; col < c.d; ++col) {
      if (count == 1) {
        a[col] = std::fma(weight(0), value(0, col), a[col]);
        continue;
      }
      float s = weight(1) * value(1, col);
      s = std::fma(weight(0), value(0, col), s);
      s = std::fma(weight(2), value(2, col), s);
      s = std::fma(weight(3), value(3, col), s);
      a[col] = a[col] + s;
    }
  });
  expect_bits_equal(sums, want);
}

template <typename KV>
void check_scores(int group) {
  const int d = 80, kv_heads = 3, n = 4 * 9 + 3, vectors = kv_heads * group;  // 3 rows left over
  const int64_t ld_k = kv_heads * d + 16;                                     // padded rows
  const float scale = 0.125f;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<KV> k(n * ld_k);
  for (auto& x : k) x = cached<KV>(normal(rng));
  std::vector<float> q(size_t(vectors) * d);
  for (auto& x : q) x = normal(rng);
  std::vector<const float*> queries(vectors);
  std::vector<int> kv_offset(vectors);
  for (int u = 0; u < vectors; ++u) {
    queries[u] = &q[size_t(u) * d];
    kv_offset[u] = u / group * d;
  }
  const FewQueryVectors qv{queries.data(), kv_offset.data(), vectors, group, d};
  std::vector<float> got(size_t(vectors) * n), want(got.size());
  avx2::few_query_scores(got.data(), n, qv, k.data(), ld_k, n, scale);

  const int part = n / 4;
  for (int u = 0; u < vectors; ++u) {
    auto key = [&](int j) { return k.data() + j * ld_k + kv_offset[u]; };
    for (int j = 0; j < part; ++j) {
      const int js[4] = {j, j + part, j + 2 * part, j + 3 * part};
      const KV* const rows[4] = {key(js[0]), key(js[1]), key(js[2]), key(js[3])};
      float dots[4];
      dot4(queries[u], rows, d, dots);
      for (int i = 0; i < 4; ++i) want[size_t(u) * n + js[i]] = scale * dots[i];
    }
    for (int j = 4 * part; j < n; ++j) want[size_t(u) * n + j] = scale * dot(queries[u], key(j), d);
  }
  expect_bits_equal(got, want);
}

TEST(FewQueryAvx2, ScoresPassMakesThePortableLoopsArithmeticBitForBit) {
  for (int group : {1, 2, 3}) {
    SCOPED_TRACE(group);
    check_scores<float>(group);
    check_scores<uint16_t>(group);
  }
}

TEST(FewQueryAvx2, ExpShiftedGivesTheScalarLoopsBits) {
  check_exp_shifted(avx2::few_query_exp_shifted);
}

TEST(FewQueryAvx2, ValuesPassMakesThePortableLoopsArithmeticBitForBit) {
  for (int group : {1, 2, 3}) {
    SCOPED_TRACE(group);
    check<float>(group);
    check<uint16_t>(group);
  }
}

}  // namespace
}  // namespace gattn
#endif
