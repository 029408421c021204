// The tiled attention against the textbook formula (double), and its backward against finite
// differences, for sequences shorter than, equal to and longer than a tile, with GQA and strides.
#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.h"
#include "ops/attention.h"

namespace gattn {
namespace {
using test::dot;
using test::gradient_error;
using test::random_vector;

// softmax(q k^T / sqrt(d)) v with a causal mask, one (batch, head, query) at a time.
std::vector<double> naive_attention(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, const AttentionShape& s) {
  std::vector<double> out(size_t(s.batch) * s.seq_len * s.ld_out, 0.0);
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.q_heads; ++h)
      for (int t = 0; t < s.seq_len; ++t) {
        const size_t qi = size_t(b * s.seq_len + t);
        std::vector<double> w(t + 1);
        double max = -1e300, sum = 0;
        for (int u = 0; u <= t; ++u) {
          const size_t ki = size_t(b * s.seq_len + u);
          double dotp = 0;
          for (int c = 0; c < d; ++c)
            dotp += q[qi * s.ld_q + h * d + c] * k[ki * s.ld_k + (h / group) * d + c];
          w[u] = dotp / std::sqrt(double(d));
          max = std::max(max, w[u]);
        }
        for (double& x : w) sum += x = std::exp(x - max);
        for (int u = 0; u <= t; ++u)
          for (int c = 0; c < d; ++c)
            out[qi * s.ld_out + h * d + c] +=
                w[u] / sum * v[size_t(b * s.seq_len + u) * s.ld_v + (h / group) * d + c];
      }
  return out;
}

AttentionShape shape(int batch, int seq, int heads, int kv_heads, int d, int pad) {
  return {batch,
          seq,
          heads,
          kv_heads,
          d,
          heads * d + pad,
          kv_heads * d + pad,
          kv_heads * d + 2 * pad,
          heads * d};
}

class AttentionForward : public ::testing::TestWithParam<int> {};

TEST_P(AttentionForward, MatchesTheFormula) {
  const int seq = GetParam();
  const AttentionShape s = shape(2, seq, 4, 2, 5, 3);
  std::mt19937_64 rng(seq);
  const auto q = random_vector(size_t(2) * seq * s.ld_q, rng, 2.0);
  const auto k = random_vector(size_t(2) * seq * s.ld_k, rng, 2.0);
  const auto v = random_vector(size_t(2) * seq * s.ld_v, rng);
  std::vector<double> out(size_t(2) * seq * s.ld_out), lse(size_t(2) * seq * 4);
  attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s);
  const auto expected = naive_attention(q, k, v, s);
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - expected[i]));
  EXPECT_LT(worst, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(SequenceLengths, AttentionForward,
                         ::testing::Values(1, 2, kAttentionTile - 1, kAttentionTile,
                                           kAttentionTile + 1, 2 * kAttentionTile + 9));

TEST(AttentionBackward, MatchesFiniteDifferencesAcrossTiles) {
  const int seq = kAttentionTile + 6;  // two query and key tiles, the last ragged
  const AttentionShape s = shape(1, seq, 4, 2, 3, 1);
  std::mt19937_64 rng(11);
  auto q = random_vector(size_t(seq) * s.ld_q, rng, 2.0);
  auto k = random_vector(size_t(seq) * s.ld_k, rng, 2.0);
  auto v = random_vector(size_t(seq) * s.ld_v, rng);
  const auto probe = random_vector(size_t(seq) * s.ld_out, rng);
  std::vector<double> out(probe.size()), lse(size_t(seq) * 4);
  auto loss = [&] {
    attention_forward(out.data(), lse.data(), q.data(), k.data(), v.data(), s);
    return dot(out, probe);
  };
  loss();
  // Padding columns of the strided inputs get no gradient; seed them so a stray write shows.
  std::vector<double> dq(q.size(), 7.0), dk(k.size(), 7.0), dv(v.size(), 7.0);
  attention_backward(dq.data(), dk.data(), dv.data(), probe.data(), out.data(), lse.data(),
                     q.data(), k.data(), v.data(), s);
  auto clear_padding = [&](std::vector<double>& g, int ld, int used) {
    for (int r = 0; r < seq; ++r)
      for (int c = used; c < ld; ++c) {
        EXPECT_EQ(g[size_t(r) * ld + c], 7.0);
        g[size_t(r) * ld + c] = 0;
      }
  };
  clear_padding(dq, s.ld_q, 4 * 3);
  clear_padding(dk, s.ld_k, 2 * 3);
  clear_padding(dv, s.ld_v, 2 * 3);
  EXPECT_LT(gradient_error(q, dq, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(k, dk, loss), test::kGradTolerance);
  EXPECT_LT(gradient_error(v, dv, loss), test::kGradTolerance);
}

}  // namespace
}  // namespace gattn
