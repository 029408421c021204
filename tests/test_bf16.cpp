// bf16 mode of the GEMM: inputs rounded to nearest-even bf16, products accumulated in fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ops/matmul.h"

namespace gattn {
namespace {

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa, 1.
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
  EXPECT_EQ(round_to_bf16(-2.5f), -2.5f);
  EXPECT_EQ(bits(round_to_bf16(0.3f)) & 0xffffu, 0u);
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<float>::max())));  // rounds up
}

TEST(Bf16, GemmMultipliesTheRoundedInputs) {
  const int m = 7, n = 5, k = 33, lda = 40;  // a transposed, with a wider leading dimension
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::vector<float> a(size_t(k) * lda), b(size_t(k) * n), c(size_t(m) * n, 1.0f);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  set_bf16_gemm_inputs(true);
  matmul<float>(c.data(), a.data(), b.data(), m, n, k, true, false, 0.5f, 2.0f, lda);
  set_bf16_gemm_inputs(false);
  std::vector<float> fp32(size_t(m) * n, 1.0f);
  matmul<float>(fp32.data(), a.data(), b.data(), m, n, k, true, false, 0.5f, 2.0f, lda);
  double differs = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double want = 0;
      for (int p = 0; p < k; ++p)
        want += double(round_to_bf16(a[size_t(p) * lda + i])) * round_to_bf16(b[size_t(p) * n + j]);
      want = 0.5 * want + 2.0;
      EXPECT_NEAR(c[i * n + j], want, 1e-5 * (1 + std::abs(want)));
      differs = std::max(differs, std::abs(double(fp32[i * n + j]) - c[i * n + j]));
    }
  EXPECT_GT(differs, 1e-3);  // the rounding is visible against fp32
}

}  // namespace
}  // namespace gattn
