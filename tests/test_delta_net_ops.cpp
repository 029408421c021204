// The Gated DeltaNet block's other ops (ops/delta_net_ops.h): each backward pass against finite
// differences in double, and the convolution's decode state: a sequence in pieces (one token at a
// time, and tokens fewer than the kernel) equals one call.
#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.h"
#include "ops/delta_net_ops.h"

namespace gattn {
namespace {
using test::dot;
using test::gradient_error;
using test::random_vector;

// 5 channels (less than one block of the backward's 64) and 70 (a whole block and a part).
TEST(DeltaNetOps, ShortConvBackward) {
  for (const int C : {5, 70}) {
    const int stride = C + 2;
    ShortConvShape s{.sequences = 2,
                     .tokens = 6,
                     .channels = C,
                     .kernel = 4,
                     .in_stride = stride,
                     .out_stride = C + 1};
    std::mt19937_64 rng(1);
    std::vector<double> in = random_vector(size_t(12 * stride), rng),
                        weight = random_vector(size_t(4 * C), rng);
    const std::vector<double> w_out = random_vector(size_t(12 * (C + 1)), rng);
    auto loss = [&] {
      std::vector<double> out(w_out.size(), 0);
      short_conv_forward<double>(s, in.data(), weight.data(), nullptr, nullptr, out.data());
      return dot(out, w_out);
    };
    std::vector<double> out(w_out.size(), 0), pre(size_t(12 * C)), d_in(in.size(), 0),
        d_w(weight.size(), 0);
    short_conv_forward<double>(s, in.data(), weight.data(), nullptr, pre.data(), out.data());
    short_conv_backward<double>(s, in.data(), weight.data(), pre.data(), w_out.data(), d_in.data(),
                                d_w.data());
    EXPECT_LT(gradient_error(in, d_in, loss), test::kGradTolerance) << C << " channels";
    EXPECT_LT(gradient_error(weight, d_w, loss), test::kGradTolerance) << C << " channels";
  }
}

TEST(DeltaNetOps, ShortConvStateContinues) {
  const int C = 3, K = 4, T = 7;
  ShortConvShape whole{
      .sequences = 1, .tokens = T, .channels = C, .kernel = K, .in_stride = C, .out_stride = C};
  std::mt19937_64 rng(2);
  const std::vector<double> in = random_vector(size_t(T * C), rng),
                            weight = random_vector(size_t(C * K), rng);
  std::vector<double> out(size_t(T * C)), state(size_t((K - 1) * C), 0);
  short_conv_forward<double>(whole, in.data(), weight.data(), state.data(), nullptr, out.data());
  for (int first : {1, 2}) {  // pieces of `first` tokens, then one at a time
    std::vector<double> piece_out(out.size()), piece_state(state.size(), 0);
    for (int t0 = 0; t0 < T;) {
      const int n = t0 == 0 ? first : 1;
      ShortConvShape part = whole;
      part.tokens = n;
      short_conv_forward<double>(part, in.data() + t0 * C, weight.data(), piece_state.data(),
                                 nullptr, piece_out.data() + t0 * C);
      t0 += n;
    }
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(piece_out[i], out[i], 1e-14) << i;
    for (size_t i = 0; i < state.size(); ++i) ASSERT_EQ(piece_state[i], state[i]) << i;
  }
}

TEST(DeltaNetOps, L2NormalizeBackward) {
  const int rows = 3, heads = 2, dim = 5, stride = 11;
  std::mt19937_64 rng(3);
  std::vector<double> x = random_vector(size_t(rows * stride), rng);
  const std::vector<double> w = random_vector(x.size(), rng);
  const double scale = 0.4;
  auto loss = [&] {
    std::vector<double> y = x;
    l2_normalize_forward<double>(y.data(), rows, heads, dim, stride, scale, nullptr);
    return dot(y, w);
  };
  std::vector<double> y = x, inv(size_t(rows * heads)), d = w;
  l2_normalize_forward<double>(y.data(), rows, heads, dim, stride, scale, inv.data());
  l2_normalize_backward<double>(d.data(), y.data(), inv.data(), rows, heads, dim, stride, scale);
  for (int r = 0; r < rows; ++r)  // the padding columns are no input
    for (int c = heads * dim; c < stride; ++c) d[size_t(r * stride + c)] = 0;
  EXPECT_LT(gradient_error(x, d,
                           [&] {
                             double total = loss();
                             for (int r = 0; r < rows; ++r)
                               for (int c = heads * dim; c < stride; ++c)
                                 total -= x[size_t(r * stride + c)] * w[size_t(r * stride + c)];
                             return total;
                           }),
            test::kGradTolerance);
}

// GCC 12 warns, wrongly, that a vector's destructor here frees a pointer with an offset.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
TEST(DeltaNetOps, DeltaGatesBackward) {
  const int rows = 4, heads = 3, in_stride = 5, out_stride = 4;
  std::mt19937_64 rng(4);
  std::vector<double> a = random_vector(size_t(rows * in_stride), rng, 2.0),
                      b = random_vector(a.size(), rng);
  std::vector<double> a_log = random_vector(heads, rng), dt_bias = random_vector(heads, rng);
  const std::vector<double> w_g = random_vector(size_t(rows * out_stride), rng),
                            w_beta = random_vector(w_g.size(), rng);
  auto loss = [&] {
    std::vector<double> g(w_g.size(), 0), beta(w_g.size(), 0);
    delta_gates_forward<double>(a.data(), b.data(), in_stride, a_log.data(), dt_bias.data(), rows,
                                heads, g.data(), beta.data(), out_stride);
    return dot(g, w_g) + dot(beta, w_beta);
  };
  std::vector<double> g(w_g.size(), 0), beta(w_g.size(), 0), d_a(a.size(), 0), d_b(b.size(), 0);
  std::vector<double> d_a_log(a_log.size(), 0.0), d_dt(dt_bias.size(), 0.0);
  delta_gates_forward<double>(a.data(), b.data(), in_stride, a_log.data(), dt_bias.data(), rows,
                              heads, g.data(), beta.data(), out_stride);
  delta_gates_backward<double>(a.data(), b.data(), in_stride, a_log.data(), dt_bias.data(), rows,
                               heads, g.data(), beta.data(), w_g.data(), w_beta.data(), out_stride,
                               d_a.data(), d_b.data(), d_a_log.data(), d_dt.data());
  EXPECT_LT(gradient_error(a, d_a, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(b, d_b, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(a_log, d_a_log, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(dt_bias, d_dt, loss), test::kGradTolerance);
}

#pragma GCC diagnostic pop

TEST(DeltaNetOps, GatedRmsnormBackward) {
  const int rows = 3, heads = 2, dim = 6, o_stride = 13, z_stride = 12, out_stride = 14;
  std::mt19937_64 rng(5);
  std::vector<double> o = random_vector(size_t(rows * o_stride), rng),
                      z = random_vector(size_t(rows * z_stride), rng);
  std::vector<double> w = random_vector(dim, rng);
  const std::vector<double> w_out = random_vector(size_t(rows * out_stride), rng);
  auto loss = [&] {
    std::vector<double> out(w_out.size(), 0);
    gated_rmsnorm_forward<double>(o.data(), z.data(), w.data(), rows, heads, dim, o_stride,
                                  z_stride, 1e-6, out.data(), out_stride, nullptr);
    return dot(out, w_out);
  };
  std::vector<double> out(w_out.size(), 0), inv(size_t(rows * heads));
  std::vector<double> d_o(o.size(), 0), d_z(z.size(), 0), d_w(dim, 0);
  gated_rmsnorm_forward<double>(o.data(), z.data(), w.data(), rows, heads, dim, o_stride, z_stride,
                                1e-6, out.data(), out_stride, inv.data());
  gated_rmsnorm_backward<double>(o.data(), z.data(), w.data(), inv.data(), w_out.data(), rows,
                                 heads, dim, o_stride, z_stride, out_stride, d_o.data(), d_z.data(),
                                 d_w.data());
  EXPECT_LT(gradient_error(o, d_o, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(z, d_z, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(w, d_w, loss), test::kGradTolerance);
}

}  // namespace
}  // namespace gattn
