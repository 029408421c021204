// The tiled attention against the textbook formula (double), and its backward against finite
// differences, for sequences shorter than, equal to and longer than a tile, with GQA and strides.
#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.h"
#include "ops/attention.h"
#include "ops/attention_decode.h"
#include "ops/bf16_bits.h"
#include "util/threads.h"

namespace gattn {
namespace {
using test::dot;
using test::gradient_error;
using test::random_vector;

// softmax(q k^T / sqrt(d)) v with a causal mask, one (batch, head, query) at a time.
std::vector<double> naive_attention(const std::vector<double>& q, const std::vector<double>& k,
                                    const std::vector<double>& v, const AttentionShape& s) {
  std::vector<double> out(size_t(s.batch) * s.q_len * s.ld_out, 0.0);
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.q_heads; ++h)
      for (int t = 0; t < s.q_len; ++t) {
        const size_t qi = size_t(b * s.q_len + t);
        std::vector<double> w(t + 1);
        double max = -1e300, sum = 0;
        for (int u = 0; u <= t; ++u) {
          const size_t ki = size_t(b * s.q_len + u);
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
                w[u] / sum * v[size_t(b * s.q_len + u) * s.ld_v + (h / group) * d + c];
      }
  return out;
}

AttentionShape shape(int batch, int seq, int heads, int kv_heads, int d, int pad) {
  return self_attention_shape(batch, seq, heads, kv_heads, d, heads * d + pad, kv_heads * d + pad,
                              kv_heads * d + 2 * pad, heads * d);
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
  attention_forward(ExecContext{}, out.data(), lse.data(), q.data(), k.data(), v.data(), s);
  const auto expected = naive_attention(q, k, v, s);
  double worst = 0;
  for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::abs(out[i] - expected[i]));
  EXPECT_LT(worst, 1e-12);
}

INSTANTIATE_TEST_SUITE_P(SequenceLengths, AttentionForward,
                         ::testing::Values(1, 2, kAttentionTile - 1, kAttentionTile,
                                           kAttentionTile + 1, 2 * kAttentionTile + 9));

// The last queries of each sequence alone (q_offset > 0, fewer queries than keys, the keys of a
// sequence `capacity` rows apart as in a KV cache) give the full pass's rows exactly.
TEST(AttentionForward, QueriesAfterAnOffsetSeeThePrecedingKeys) {
  const int seq = 2 * kAttentionTile + 9, capacity = seq + 5, d = 5;
  const AttentionShape full = shape(2, seq, 4, 2, d, 0);
  std::mt19937_64 rng(3);
  const auto q = random_vector(size_t(2) * seq * full.ld_q, rng, 2.0);
  const auto k = random_vector(size_t(2) * seq * full.ld_k, rng, 2.0);
  const auto v = random_vector(size_t(2) * seq * full.ld_v, rng);
  const auto expected = naive_attention(q, k, v, full);
  for (const int offset :
       {1, kAttentionTile - 3, kAttentionTile, seq - kFewQueryRows, seq - 2, seq - 1}) {
    const int n = seq - offset;
    AttentionShape chunk = full;
    chunk.q_len = n, chunk.q_offset = offset, chunk.kv_stride = capacity;
    std::vector<double> q_chunk(size_t(2) * n * full.ld_q),
        k_cache(size_t(2) * capacity * full.ld_k), v_cache(size_t(2) * capacity * full.ld_v);
    for (int b = 0; b < 2; ++b) {
      std::copy_n(q.begin() + size_t(b * seq + offset) * full.ld_q, size_t(n) * full.ld_q,
                  q_chunk.begin() + size_t(b * n) * full.ld_q);
      std::copy_n(k.begin() + size_t(b * seq) * full.ld_k, size_t(seq) * full.ld_k,
                  k_cache.begin() + size_t(b * capacity) * full.ld_k);
      std::copy_n(v.begin() + size_t(b * seq) * full.ld_v, size_t(seq) * full.ld_v,
                  v_cache.begin() + size_t(b * capacity) * full.ld_v);
    }
    std::vector<double> out(size_t(2) * n * full.ld_out), lse(size_t(2) * n * 4);
    attention_forward(ExecContext{}, out.data(), lse.data(), q_chunk.data(), k_cache.data(),
                      v_cache.data(), chunk);
    double worst = 0;
    for (int b = 0; b < 2; ++b)
      for (size_t i = 0; i < size_t(n) * full.ld_out; ++i)
        worst = std::max(worst, std::abs(out[size_t(b * n) * full.ld_out + i] -
                                         expected[size_t(b * seq + offset) * full.ld_out + i]));
    EXPECT_LT(worst, 1e-12) << "offset " << offset;
  }
}

// The log-sum-exp of query row `row`'s scores for head 3 (kv head 1: two queries a kv head) over
// keys 0 .. row, summed directly.
double direct_lse(const std::vector<double>& q, const std::vector<double>& k,
                  const AttentionShape& s, int row) {
  const int d = s.head_dim;
  double max = -1e300, sum = 0;
  std::vector<double> scores(row + 1);
  for (int j = 0; j <= row; ++j) {
    double dot = 0;
    for (int c = 0; c < d; ++c)
      dot += q[size_t(row) * s.ld_q + 3 * d + c] * k[size_t(j) * s.ld_k + d + c];
    max = std::max(max, scores[j] = dot / std::sqrt(double(d)));
  }
  for (double x : scores) sum += std::exp(x - max);
  return max + std::log(sum);
}

// Decode-sized chunks in float at a real head size (the vector kernels' path): the few-query
// path's out and lse equal the formula's, for 1 .. kFewQueryRows queries after a long prefix.
TEST(AttentionForward, FewQueriesInFloatMatchTheFormula) {
  const int seq = 3 * kAttentionTile + 7, d = 128, heads = 4, kv_heads = 2;
  const AttentionShape full = shape(1, seq, heads, kv_heads, d, 0);
  std::mt19937_64 rng(5);
  const auto q = random_vector(size_t(seq) * full.ld_q, rng, 0.3);
  const auto k = random_vector(size_t(seq) * full.ld_k, rng, 0.3);
  const auto v = random_vector(size_t(seq) * full.ld_v, rng);
  const auto expected = naive_attention(q, k, v, full);
  const std::vector<float> kf(k.begin(), k.end()), vf(v.begin(), v.end());
  for (int n = 1; n <= kFewQueryRows; ++n) {
    AttentionShape chunk = full;
    chunk.q_len = n, chunk.q_offset = seq - n;
    const std::vector<float> qf(q.end() - ptrdiff_t(n) * full.ld_q, q.end());
    std::vector<float> out(size_t(n) * full.ld_out), lse(size_t(n) * heads);
    attention_forward(ExecContext{}, out.data(), lse.data(), qf.data(), kf.data(), vf.data(),
                      chunk);
    double err = 0, norm = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const double e = expected[size_t(seq - n) * full.ld_out + i];
      err += (out[i] - e) * (out[i] - e), norm += e * e;
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-5) << n << " queries";
    // lse of the last query row and head 3 (kv head 1) against its direct sum.
    EXPECT_NEAR(lse[size_t(n - 1) * heads + 3], direct_lse(q, k, full, seq - 1), 1e-5)
        << n << " queries";
  }
}

// One sequence over a long cache (the few-query path splits its positions into fixed chunks, each
// with its own max and sum, merged in order): out and lse equal the formula's in double and in
// float, for queries whose visible keys end inside different chunks, and the values do not
// depend on the thread count.
TEST(AttentionForward, FewQueriesOverALongCacheMatchTheFormulaAtAnyThreadCount) {
  const int seq = 4 * 128 + 37, d = 128, heads = 4, kv_heads = 2;
  const AttentionShape full = shape(1, seq, heads, kv_heads, d, 0);
  std::mt19937_64 rng(13);
  const auto q = random_vector(size_t(seq) * full.ld_q, rng, 0.3);
  const auto k = random_vector(size_t(seq) * full.ld_k, rng, 0.3);
  const auto v = random_vector(size_t(seq) * full.ld_v, rng);
  const auto expected = naive_attention(q, k, v, full);
  const std::vector<float> kf(k.begin(), k.end()), vf(v.begin(), v.end());
  for (int n : {1, 3, kFewQueryRows}) {
    AttentionShape chunk = full;
    chunk.q_len = n, chunk.q_offset = seq - 40 - n;  // the last query sees 40 keys fewer
    const size_t first = size_t(chunk.q_offset) * full.ld_q;
    const std::vector<double> qd(q.begin() + ptrdiff_t(first),
                                 q.begin() + ptrdiff_t(first) + ptrdiff_t(n) * full.ld_q);
    const std::vector<float> qf(qd.begin(), qd.end());
    std::vector<double> out(size_t(n) * full.ld_out), lse(size_t(n) * heads);
    attention_forward(ExecContext{}, out.data(), lse.data(), qd.data(), k.data(), v.data(), chunk);
    std::vector<float> outf[2], lsef[2];
    for (int threads : {1, 2}) {
      ThreadScope scope(threads);
      outf[threads - 1].resize(out.size()), lsef[threads - 1].resize(lse.size());
      attention_forward(ExecContext{}, outf[threads - 1].data(), lsef[threads - 1].data(),
                        qf.data(), kf.data(), vf.data(), chunk);
    }
    double worst = 0, err = 0, norm = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      const double e = expected[size_t(chunk.q_offset) * full.ld_out + i];
      worst = std::max(worst, std::abs(out[i] - e));
      err += (outf[0][i] - e) * (outf[0][i] - e), norm += e * e;
    }
    EXPECT_LT(worst, 1e-12) << n << " queries";
    EXPECT_LT(std::sqrt(err / norm), 1e-5) << n << " queries";
    EXPECT_EQ(outf[0], outf[1]) << n << " queries";
    EXPECT_EQ(lsef[0], lsef[1]) << n << " queries";
    // lse of the last query row and head 3 (kv head 1) against its direct sum.
    const double want = direct_lse(q, k, full, chunk.q_offset + n - 1);
    EXPECT_NEAR(lse[size_t(n - 1) * heads + 3], want, 1e-12) << n << " queries";
    EXPECT_NEAR(lsef[0][size_t(n - 1) * heads + 3], want, 1e-5) << n << " queries";
  }
}

// A bf16 KV cache: attention over bf16 keys and values gives the bits of the fp32 path over the
// same values widened, on the few-query path (1 .. kFewQueryRows queries, widened as read) and
// the tiled one (one row more, widened first), for two sequences in a cache of larger capacity.
TEST(AttentionForward, OverBf16KeysAndValuesEqualsTheFp32PathOnThoseValues) {
  const int capacity = 2 * kAttentionTile + 40, kv_len = 2 * kAttentionTile + 21, d = 128;
  const int heads = 4, kv_heads = 2, width = kv_heads * d;
  std::mt19937_64 rng(9);
  const auto k = random_vector(size_t(2) * capacity * width, rng, 0.3);
  const auto v = random_vector(size_t(2) * capacity * width, rng);
  std::vector<uint16_t> k16(k.size()), v16(v.size());
  std::vector<float> kf(k.size()), vf(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k16[i] = bf16_instruction_bits(float(k[i]));
    v16[i] = bf16_instruction_bits(float(v[i]));
    kf[i] = bf16_to_float(k16[i]);
    vf[i] = bf16_to_float(v16[i]);
  }
  for (int n : {1, 2, kFewQueryRows, kFewQueryRows + 1}) {
    const AttentionShape s{.batch = 2,
                           .q_len = n,
                           .kv_len = kv_len,
                           .q_offset = kv_len - n,
                           .kv_stride = capacity,
                           .q_heads = heads,
                           .kv_heads = kv_heads,
                           .head_dim = d,
                           .ld_q = heads * d,
                           .ld_k = width,
                           .ld_v = width,
                           .ld_out = heads * d};
    const auto qd = random_vector(size_t(2) * n * s.ld_q, rng, 0.3);
    const std::vector<float> q(qd.begin(), qd.end());
    std::vector<float> out(q.size()), lse(size_t(2) * n * heads), out16(out), lse16(lse);
    attention_forward(ExecContext{}, out.data(), lse.data(), q.data(), kf.data(), vf.data(), s);
    attention_forward(ExecContext{}, out16.data(), lse16.data(), q.data(), k16.data(), v16.data(),
                      s);
    EXPECT_EQ(out16, out) << n << " queries";
    EXPECT_EQ(lse16, lse) << n << " queries";
  }
}

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
    attention_forward(ExecContext{}, out.data(), lse.data(), q.data(), k.data(), v.data(), s);
    return dot(out, probe);
  };
  loss();
  // Padding columns of the strided inputs get no gradient; seed them so a stray write shows.
  std::vector<double> dq(q.size(), 7.0), dk(k.size(), 7.0), dv(v.size(), 7.0);
  attention_backward(ExecContext{}, dq.data(), dk.data(), dv.data(), probe.data(), out.data(),
                     lse.data(), q.data(), k.data(), v.data(), s);
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

// A G1 gate applied by attention (OutputGate) gives the bits of attention followed by the gate op
// (gate_forward, gate_backward): forward output, gated output and every gradient, for each
// head-specific gate (elementwise/headwise x multiplicative/additive x the activations), scores
// from a strided projection and one shared row (input-independent), tiled and few-query paths.
TEST(AttentionOutputGate, GivesTheBitsOfTheSeparateGateOp) {
  const GateActivation activations[] = {GateActivation::sigmoid, GateActivation::silu,
                                        GateActivation::identity, GateActivation::ns_sigmoid};
  for (const int seq : {3, kAttentionTile + 6})
    for (const bool headwise : {false, true})
      for (const bool additive : {false, true})
        for (const GateActivation act : activations)
          for (const bool shared_row : {false, true}) {
            const int heads = 4, d = 5, batch = 2, rows = batch * seq;
            const AttentionShape s = shape(batch, seq, heads, 2, d, 3);
            const GateShape g{.rows = rows,
                              .heads = heads,
                              .head_dim = d,
                              .headwise = headwise,
                              .head_shared = false,
                              .additive = additive,
                              .activation = act,
                              .ld_y = s.ld_out,
                              .ld_y_out = s.ld_out,
                              .ld_z = 0};
            const int ld_z = shared_row ? 0 : g.scores() + 2;
            std::mt19937_64 rng(seq * 131 + headwise * 7 + additive * 3 + int(act));
            auto floats = [&](size_t n, double scale) {
              const auto x = random_vector(n, rng, scale);
              return std::vector<float>(x.begin(), x.end());
            };
            const auto q = floats(size_t(rows) * s.ld_q, 2.0),
                       k = floats(size_t(rows) * s.ld_k, 2.0);
            const auto v = floats(size_t(rows) * s.ld_v, 1.0);
            const auto z = floats(size_t(shared_row ? 1 : rows) * std::max(ld_z, g.scores()), 2.0);
            const auto d_gated = floats(size_t(rows) * s.ld_out, 1.0);
            GateShape gs = g;
            gs.ld_z = ld_z;
            const int ld_dz = shared_row ? g.scores() : ld_z;
            const size_t out_size = size_t(rows) * s.ld_out, lse_size = size_t(rows) * heads;
            // separately: attention, then the gate op
            std::vector<float> out1(out_size), lse1(lse_size), gated1(out_size), d_out1(out_size);
            std::vector<float> dz1(size_t(rows) * ld_dz), dq1(q.size()), dk1(k.size()),
                dv1(v.size());
            attention_forward(ExecContext{}, out1.data(), lse1.data(), q.data(), k.data(), v.data(),
                              s);
            gate_forward(gated1.data(), out1.data(), z.data(), gs);
            gate_backward(d_out1.data(), dz1.data(), d_gated.data(), out1.data(), z.data(), gs);
            attention_backward(ExecContext{}, dq1.data(), dk1.data(), dv1.data(), d_out1.data(),
                               out1.data(), lse1.data(), q.data(), k.data(), v.data(), s);
            // fused
            std::vector<float> out2(out_size), lse2(lse_size), gated2(out_size);
            std::vector<float> dz2(dz1.size()), dq2(q.size()), dk2(k.size()), dv2(v.size());
            const OutputGate<float> gate{.gate = {.head_dim = d,
                                                  .headwise = headwise,
                                                  .additive = additive,
                                                  .activation = act},
                                         .z = z.data(),
                                         .ld_z = ld_z,
                                         .gated = gated2.data(),
                                         .ld_gated = s.ld_out,
                                         .d_z = dz2.data(),
                                         .ld_dz = ld_dz};
            attention_forward(ExecContext{}, out2.data(), lse2.data(), q.data(), k.data(), v.data(),
                              s, &gate);
            attention_backward(ExecContext{}, dq2.data(), dk2.data(), dv2.data(), d_gated.data(),
                               out2.data(), lse2.data(), q.data(), k.data(), v.data(), s, &gate);
            const std::string what = "seq " + std::to_string(seq) + (headwise ? " headwise" : "") +
                                     (additive ? " additive" : "") + " activation " +
                                     std::to_string(int(act)) + (shared_row ? " shared row" : "");
            EXPECT_EQ(out1, out2) << what;
            EXPECT_EQ(gated1, gated2) << what;
            EXPECT_EQ(dz1, dz2) << what;
            EXPECT_EQ(dq1, dq2) << what;
            EXPECT_EQ(dk1, dk2) << what;
            EXPECT_EQ(dv1, dv2) << what;
          }
}

}  // namespace
}  // namespace gattn
