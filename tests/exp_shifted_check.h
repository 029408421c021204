// The check of a vector exp_shifted (the few-query attention's softmax, ops/attention_decode.cpp)
// against the scalar loop as written there, bit for bit: every length from 1 to 70, with
// infinities, NaN and zeros of both signs among the scores (shared by the AVX2 and AVX-512 tests).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "ops/fast_exp.h"

namespace gattn {

// attention_decode.cpp's exp_shifted, as written there.
inline float exp_shifted_reference(float* p, int n, float* max) {
  float m = p[0];
  for (int j = 1; j < n; ++j) m = std::max(m, p[j]);
  float lane[8] = {};
  int j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) lane[l] += p[j + l] = fast_exp(p[j + l] - m);
  for (; j < n; ++j) lane[0] += p[j] = fast_exp(p[j] - m);
  float sum = 0;
  for (int l = 0; l < 8; ++l) sum += lane[l];
  *max = m;
  return sum;
}

inline void check_exp_shifted(float (*kernel)(float*, int, float*)) {
  auto bits = [](float x) { return std::bit_cast<uint32_t>(x); };
  std::mt19937 rng(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);  // many terms of a sum count
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int n = 1; n <= 70; ++n)
    for (int kind = 0; kind < 6; ++kind) {
      std::vector<float> scores(static_cast<size_t>(n));
      for (auto& x : scores) x = normal(rng);
      if (kind == 1) scores[size_t(n) / 2] = inf;
      if (kind == 2) scores[0] = -inf;
      if (kind == 3) scores[size_t(n) - 1] = nan;
      if (kind == 4) scores[0] = nan;
      if (kind == 5)
        for (int j = 0; j < n; ++j) scores[size_t(j)] = j % 2 ? 0.0f : -0.0f;
      std::vector<float> got = scores, want = scores;
      float got_max = 0, want_max = 0;
      const float got_sum = kernel(got.data(), n, &got_max);
      const float want_sum = exp_shifted_reference(want.data(), n, &want_max);
      SCOPED_TRACE(testing::Message() << "n " << n << ", kind " << kind);
      // The largest value is the same; only a zero's sign may differ, which no result below
      // shows (exp(x - 0) and exp(x + 0) agree, and so do the sums).
      if (want_max == 0)
        EXPECT_EQ(got_max, 0.0f);
      else if (std::isnan(want_max))
        EXPECT_TRUE(std::isnan(got_max));
      else
        EXPECT_EQ(bits(got_max), bits(want_max));
      EXPECT_EQ(bits(got_sum), bits(want_sum));
      for (int j = 0; j < n; ++j) ASSERT_EQ(bits(got[size_t(j)]), bits(want[size_t(j)])) << j;
    }
}

}  // namespace gattn
