// Finite-difference checks (double) of every op's backward, except attention and the gate,
// which have files of their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gradcheck.h"
#include "ops/cross_entropy.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/fast_exp.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "util/error.h"

namespace gattn {
namespace {
using test::dot;
using test::gradient_error;
using test::kGradTolerance;
using test::random_vector;

TEST(Linear, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(1);
  const int rows = 5, in = 7, out = 3;
  auto x = random_vector(rows * in, rng), w = random_vector(out * in, rng);
  const auto probe = random_vector(rows * out, rng);
  std::vector<double> y(rows * out), dx(rows * in), dw(out * in, 0.0);
  auto loss = [&] {
    linear_forward(ExecContext{}, y.data(), x.data(), w.data(), rows, in, out);
    return dot(y, probe);
  };
  linear_backward(ExecContext{}, dx.data(), dw.data(), probe.data(), x.data(), w.data(), rows, in,
                  out);
  EXPECT_LT(gradient_error(x, dx, loss), kGradTolerance);
  EXPECT_LT(gradient_error(w, dw, loss), kGradTolerance);
}

struct NormCase {
  const char* name;
  RmsNormShape shape;
};

class RmsNorm : public ::testing::TestWithParam<NormCase> {};

TEST_P(RmsNorm, BackwardMatchesFiniteDifferences) {
  const RmsNormShape s = GetParam().shape;
  std::mt19937_64 rng(2);
  const int weights = s.weight_group_stride == 0 ? s.dim : s.groups * s.dim;
  auto x = random_vector(size_t(s.rows) * s.ld_in, rng), w = random_vector(weights, rng);
  const auto probe = random_vector(size_t(s.rows) * s.ld_out, rng);
  std::vector<double> y(size_t(s.rows) * s.ld_out, 0.0), rstd(s.rows * s.groups);
  std::vector<double> dx(x.size(), 0.0), dw(weights, 0.0);
  // Only the columns the op reads and writes count; the padding of strided rows must stay 0.
  std::vector<double> mask(y.size(), 0.0);
  for (int r = 0; r < s.rows; ++r)
    for (int c = 0; c < s.groups * s.dim; ++c) mask[r * s.ld_out + c] = probe[r * s.ld_out + c];
  auto loss = [&] {
    rmsnorm_forward(y.data(), rstd.data(), x.data(), w.data(), s, 1e-6);
    return dot(y, mask);
  };
  loss();
  rmsnorm_backward(dx.data(), dw.data(), mask.data(), x.data(), w.data(), rstd.data(), s, false);
  EXPECT_LT(gradient_error(x, dx, loss), kGradTolerance);
  EXPECT_LT(gradient_error(w, dw, loss), kGradTolerance);
  // accumulate adds to what is there
  std::vector<double> dx2(x.size(), 1.0), dw2(weights, 0.0);
  rmsnorm_backward(dx2.data(), dw2.data(), mask.data(), x.data(), w.data(), rstd.data(), s, true);
  for (int r = 0; r < s.rows; ++r)
    for (int c = 0; c < s.groups * s.dim; ++c)
      EXPECT_NEAR(dx2[r * s.ld_in + c], dx[r * s.ld_in + c] + 1.0, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Shapes, RmsNorm,
                         ::testing::Values(NormCase{"layer", {6, 1, 13, 13, 13, 0}},
                                           NormCase{"qk_norm_strided", {5, 3, 6, 25, 18, 0}},
                                           NormCase{"per_head_weight", {4, 3, 5, 15, 15, 5}}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(Rope, BackwardMatchesFiniteDifferencesAndPreservesNorms) {
  for (int rotary_dim : {8, 4}) {
    std::mt19937_64 rng(3);
    const int heads = 2, d = 8, rows = 6, seq = 3, ld = heads * d + 3;
    const RopeTable<double> table = make_rope_table<double>(rotary_dim, 100.0, 16);
    std::vector<int32_t> positions(rows);
    for (int r = 0; r < rows; ++r) positions[r] = 2 + r % seq;
    const RopeShape s{rows, positions.data(), heads, d, ld, heads * d};
    auto x = random_vector(size_t(rows) * ld, rng);
    const auto probe = random_vector(size_t(rows) * heads * d, rng);
    std::vector<double> y(probe.size()), dx(x.size(), 0.0);
    auto loss = [&] {
      rope_forward(y.data(), x.data(), table, s);
      return dot(y, probe);
    };
    loss();
    rope_backward(dx.data(), probe.data(), table, s);
    EXPECT_LT(gradient_error(x, dx, loss), kGradTolerance);
    for (int r = 0; r < rows; ++r)
      for (int h = 0; h < heads; ++h) {
        double before = 0, after = 0;
        for (int c = 0; c < d; ++c) {
          before += x[r * ld + h * d + c] * x[r * ld + h * d + c];
          after += y[(r * heads + h) * d + c] * y[(r * heads + h) * d + c];
        }
        EXPECT_NEAR(before, after, 1e-12);
      }
  }
}

TEST(Rope, MatchesTheRotateHalfFormula) {
  // position 5, rotary_dim 4 of head_dim 6, theta 100: channel i pairs with i + 2
  const RopeTable<double> table = make_rope_table<double>(4, 100.0, 8);
  const std::vector<double> x = {1, 2, 3, 4, 5, 6};
  std::vector<double> y(6);
  const int32_t position = 5;
  rope_forward(y.data(), x.data(), table, RopeShape{1, &position, 1, 6, 6, 6});
  for (int i = 0; i < 2; ++i) {
    const double a = 5 * std::pow(100.0, -2.0 * i / 4);
    EXPECT_NEAR(y[i], x[i] * std::cos(a) - x[i + 2] * std::sin(a), 1e-14);
    EXPECT_NEAR(y[i + 2], x[i + 2] * std::cos(a) + x[i] * std::sin(a), 1e-14);
  }
  EXPECT_EQ(y[4], 5);
  EXPECT_EQ(y[5], 6);
}

TEST(SwiGlu, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(4);
  const int rows = 4, dim = 9;
  auto gu = random_vector(rows * 2 * dim, rng, 2.0);
  const auto probe = random_vector(rows * dim, rng);
  std::vector<double> h(rows * dim), dgu(gu.size());
  auto loss = [&] {
    swiglu_forward(h.data(), gu.data(), rows, dim);
    return dot(h, probe);
  };
  swiglu_backward(dgu.data(), probe.data(), gu.data(), rows, dim);
  EXPECT_LT(gradient_error(gu, dgu, loss), kGradTolerance);
}

TEST(Silu, BackwardMatchesFiniteDifferences) {
  std::mt19937_64 rng(5);
  auto x = random_vector(40, rng, 3.0);
  const auto probe = random_vector(40, rng);
  std::vector<double> y(40), dx(40);
  auto loss = [&] {
    silu_forward(y.data(), x.data(), 40);
    return dot(y, probe);
  };
  silu_backward(dx.data(), probe.data(), x.data(), 40);
  EXPECT_LT(gradient_error(x, dx, loss), kGradTolerance);
}

TEST(ResidualClip, ForwardClampsAndBackwardMasks) {
  std::mt19937_64 rng(6);
  auto a = random_vector(50, rng, 2.0);
  const auto resid = random_vector(50, rng), probe = random_vector(50, rng);
  std::vector<double> out(50), da(50);
  const double clip = 1.0;
  auto loss = [&] {
    residual_add(out.data(), resid.data(), a.data(), 50, clip);
    return dot(out, probe);
  };
  loss();
  int clipped = 0;
  for (int i = 0; i < 50; ++i) {
    EXPECT_DOUBLE_EQ(out[i], resid[i] + std::clamp(a[i], -clip, clip));
    clipped += std::abs(a[i]) > clip;
  }
  EXPECT_GT(clipped, 5);
  EXPECT_LT(clipped, 45);
  clip_backward(da.data(), probe.data(), a.data(), 50, clip);
  EXPECT_LT(gradient_error(a, da, loss), kGradTolerance);
}

TEST(Embedding, BackwardMatchesFiniteDifferencesWithRepeatedIds) {
  std::mt19937_64 rng(7);
  const int vocab = 5, dim = 70;  // dim spans two channel stripes
  const std::vector<int32_t> ids = {3, 1, 3, 0, 3, 4};
  auto table = random_vector(vocab * dim, rng);
  const auto probe = random_vector(ids.size() * dim, rng);
  std::vector<double> out(probe.size()), dtable(table.size(), 0.0);
  auto loss = [&] {
    embedding_forward(out.data(), ids.data(), table.data(), ids.size(), dim, vocab);
    return dot(out, probe);
  };
  embedding_backward(dtable.data(), probe.data(), ids.data(), ids.size(), dim);
  EXPECT_LT(gradient_error(table, dtable, loss), kGradTolerance);
  const std::vector<int32_t> bad = {0, 5};
  EXPECT_THROW(embedding_forward(out.data(), bad.data(), table.data(), 2, dim, vocab), Error);
}

TEST(CrossEntropy, FusedLmHeadMatchesFiniteDifferencesAcrossChunks) {
  std::mt19937_64 rng(8);
  const int rows = 7, dim = 6, vocab = 11, chunk = 3;  // three chunks, the last ragged
  auto x = random_vector(rows * dim, rng), w = random_vector(vocab * dim, rng);
  const std::vector<int32_t> targets = {2, -1, 10, 0, 4, -1, 7};
  std::vector<double> scratch(chunk * vocab), dx(x.size()), dw(w.size(), 0.0);
  const double scale = 0.37;
  auto loss = [&] {
    return scale * lm_head_cross_entropy<double>(ExecContext{}, nullptr, nullptr, scratch.data(),
                                                 x.data(), w.data(), targets.data(), rows, dim,
                                                 vocab, chunk, 0.0)
                       .nats;
  };
  const LossSum sum =
      lm_head_cross_entropy<double>(ExecContext{}, dx.data(), dw.data(), scratch.data(), x.data(),
                                    w.data(), targets.data(), rows, dim, vocab, chunk, scale);
  EXPECT_EQ(sum.tokens, 5);
  // The loss itself, from the definition.
  double expected = 0;
  for (int r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    std::vector<double> logits(vocab, 0.0);
    for (int v = 0; v < vocab; ++v)
      for (int c = 0; c < dim; ++c) logits[v] += x[r * dim + c] * w[v * dim + c];
    double z = 0;
    for (double l : logits) z += std::exp(l);
    expected += std::log(z) - logits[targets[r]];
  }
  EXPECT_NEAR(sum.nats, expected, 1e-12);
  EXPECT_LT(gradient_error(x, dx, loss), kGradTolerance);
  EXPECT_LT(gradient_error(w, dw, loss), kGradTolerance);
  const std::vector<int32_t> bad(rows, vocab);
  EXPECT_THROW(
      lm_head_cross_entropy<double>(ExecContext{}, nullptr, nullptr, scratch.data(), x.data(),
                                    w.data(), bad.data(), rows, dim, vocab, chunk, 0.0),
      Error);
}

TEST(ColumnSum, SumsRowsInOrder) {
  std::vector<double> src(5 * 20), dst(20, 1.0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = double(i);
  column_sum(dst.data(), src.data(), 5, 20);
  for (int j = 0; j < 20; ++j) EXPECT_EQ(dst[j], 1.0 + j * 5 + 20 * (0 + 1 + 2 + 3 + 4));
}

}  // namespace
}  // namespace gattn

namespace gattn {
namespace {

TEST(FastExp, IsAccurateOverTheWholeRangeAndKeepsSpecialValues) {
  double worst = 0;
  for (float x = -87.3f; x < 88.7f; x += 0.001953125f) {  // 2^-9 steps: ~90,000 points
    const double exact = std::exp(double(x));
    worst = std::max(worst, std::abs(double(fast_exp(x)) - exact) / exact);
  }
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(fast_exp(-100.0f), 0.0f);
  EXPECT_EQ(fast_exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(fast_exp(100.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fast_exp(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fast_exp(std::nanf(""))));
  EXPECT_EQ(fast_exp(0.0f), 1.0f);
}

}  // namespace
}  // namespace gattn
