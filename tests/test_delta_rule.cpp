// The gated delta rule (ops/delta_rule.h): the chunked form against the token-by-token recurrence
// (every chunk length, partial last chunks, r = 1 and 2, head dims leaving SIMD tails, a carried
// state), a prompt split in two against one call, and the chunked backward pass against finite
// differences in double, the initial and final states included; value heads in llama.cpp's tiled
// order against the grouped order, every input and gradient permuted.
#include <gtest/gtest.h>

#include <cmath>

#include "gradcheck.h"
#include "ops/delta_rule.h"
#include "util/denormals.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace gattn {
namespace {
using test::dot;
using test::gradient_error;
using test::random_vector;

DeltaRuleShape shape(int sequences, int tokens, int key_heads, int value_heads, int dk, int dv) {
  DeltaRuleShape s;
  s.sequences = sequences;
  s.tokens = tokens;
  s.key_heads = key_heads;
  s.value_heads = value_heads;
  s.key_dim = dk;
  s.value_dim = dv;
  s.qk_stride = int64_t(key_heads) * dk + 3;  // strides wider than the rows
  s.v_stride = int64_t(value_heads) * dv + 1;
  s.gate_stride = value_heads + 2;
  s.out_stride = int64_t(value_heads) * dv + 5;
  return s;
}

// Inputs as the block makes them: q, k l2-normalised (q scaled by dk^-1/2), g < 0, beta in (0, 1).
template <typename T>
struct Inputs {
  std::vector<T> q, k, v, g, beta, state;

  Inputs(const DeltaRuleShape& s, uint64_t seed, double decay = 1.0) {
    std::mt19937_64 rng(seed);
    const int64_t rows = int64_t(s.sequences) * s.tokens;
    q = cast(random_vector(size_t(rows * s.qk_stride), rng));
    k = cast(random_vector(size_t(rows * s.qk_stride), rng));
    for (int64_t r = 0; r < rows; ++r)
      for (int h = 0; h < s.key_heads; ++h) {
        normalise(q.data() + r * s.qk_stride + h * s.key_dim, s.key_dim,
                  1 / std::sqrt(T(s.key_dim)));
        normalise(k.data() + r * s.qk_stride + h * s.key_dim, s.key_dim, 1);
      }
    v = cast(random_vector(size_t(rows * s.v_stride), rng));
    g = cast(random_vector(size_t(rows * s.gate_stride), rng));
    beta = cast(random_vector(size_t(rows * s.gate_stride), rng));
    for (T& x : g) x = -decay * std::log1p(std::exp(x));  // -softplus
    for (T& x : beta) x = 1 / (1 + std::exp(-2 * x));
    state = cast(random_vector(size_t(s.sequences * s.state_size()), rng, 0.5));
  }
  DeltaRuleInputs<T> view() const { return {q.data(), k.data(), v.data(), g.data(), beta.data()}; }

  static std::vector<T> cast(const std::vector<double>& x) {
    return std::vector<T>(x.begin(), x.end());
  }
  static void normalise(T* x, int n, T scale) {
    T sum = 0;
    for (int i = 0; i < n; ++i) sum += x[i] * x[i];
    const T factor = scale / std::sqrt(sum + T(1e-6));
    for (int i = 0; i < n; ++i) x[i] *= factor;
  }
};

template <typename T>
double relative_l2(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += double(a[i] - b[i]) * double(a[i] - b[i]);
    norm += double(b[i]) * double(b[i]);
  }
  return std::sqrt(diff / norm);
}

template <typename T>
void expect_chunked_equals_recurrent(const DeltaRuleShape& s, double tolerance) {
  const Inputs<T> in(s, 7 + s.tokens);
  std::vector<T> out_r(size_t(s.sequences * s.tokens * s.out_stride), 0), out_c = out_r;
  std::vector<T> state_r = in.state, state_c = in.state;
  std::vector<T> kept(size_t(s.chunk_states_size()));
  delta_rule_recurrent<T>({}, s, in.view(), state_r.data(), out_r.data());
  delta_rule_chunked<T>({}, s, in.view(), state_c.data(), out_c.data(), kept.data());
  EXPECT_LT(relative_l2(out_c, out_r), tolerance) << "tokens " << s.tokens;
  EXPECT_LT(relative_l2(state_c, state_r), tolerance) << "tokens " << s.tokens;
  // the first chunk's kept state is the initial state
  for (int b = 0; b < s.sequences; ++b)
    for (int64_t i = 0; i < s.state_size(); ++i)
      ASSERT_EQ(kept[size_t(b * s.chunks() * s.state_size() + i)],
                in.state[size_t(b * s.state_size() + i)]);
}

TEST(DeltaRule, ChunkedEqualsRecurrentFloat) {
  for (int tokens : {1, 5, 63, 64, 65, 130, 200})
    expect_chunked_equals_recurrent<float>(shape(2, tokens, 2, 4, 12, 10), 2e-5);
  expect_chunked_equals_recurrent<float>(shape(1, 150, 2, 2, 64, 64), 2e-5);  // r = 1
}

TEST(DeltaRule, ChunkedEqualsRecurrentDouble) {
  for (int tokens : {3, 64, 129})
    expect_chunked_equals_recurrent<double>(shape(2, tokens, 1, 3, 5, 7), 1e-12);
}

TEST(DeltaRule, StrongDecayStaysFinite) {
  const DeltaRuleShape s = shape(1, 128, 1, 2, 8, 8);
  const Inputs<float> in(s, 3, 40.0);  // decays of exp(-40) per token: exp(gamma) underflows
  std::vector<float> out_r(size_t(s.tokens * s.out_stride), 0), out_c = out_r;
  std::vector<float> state_r = in.state, state_c = in.state;
  delta_rule_recurrent<float>({}, s, in.view(), state_r.data(), out_r.data());
  delta_rule_chunked<float>({}, s, in.view(), state_c.data(), out_c.data(), nullptr);
  for (float x : out_c) ASSERT_TRUE(std::isfinite(x));
  EXPECT_LT(relative_l2(out_c, out_r), 2e-5);
}

#if defined(__x86_64__) || defined(__i386__)
// The guard flushes denormals inside its scope only (a product reading one gives 0), and the
// delta rule leaves its caller's floating-point mode as it found it, flushing or not.
TEST(DeltaRule, FlushesDenormalsOnlyInsideItsScope) {
  volatile float tiny = 1e-39f, one = 1.0f;  // volatile: computed at run time
  {
    const DenormalsFlushed flushed;
    EXPECT_EQ(tiny * one, 0.0f);
  }
  EXPECT_NE(tiny * one, 0.0f);
  const DeltaRuleShape s = shape(1, 70, 1, 2, 8, 8);
  const Inputs<float> in(s, 5, 40.0);
  std::vector<float> out(size_t(s.tokens * s.out_stride)), state = in.state;
  std::vector<float> d_out(out.size(), 1.0f), dq(in.q.size()), dk(in.k.size()), dv(in.v.size()),
      dg(in.g.size()), dbeta(in.beta.size());
  const unsigned caller = _mm_getcsr();
  for (unsigned mode : {caller & ~0x8040u, caller | 0x8040u}) {
    _mm_setcsr(mode);
    delta_rule_recurrent<float>({}, s, in.view(), state.data(), out.data());
    delta_rule_chunked<float>({}, s, in.view(), state.data(), out.data(), nullptr);
    delta_rule_chunked_backward<float>({}, s, in.view(), nullptr, d_out.data(),
                                       {dq.data(), dk.data(), dv.data(), dg.data(), dbeta.data()});
    EXPECT_EQ(_mm_getcsr() & 0xffc0u, mode & 0xffc0u);  // the mode bits, not the sticky flags
  }
  _mm_setcsr(caller);
}
#endif

// A prompt of T1 + T2 tokens in two calls, the state carried, equals one call.
TEST(DeltaRule, SplitPromptContinuesFromTheState) {
  const DeltaRuleShape whole = shape(1, 150, 2, 4, 6, 9);
  const Inputs<double> in(whole, 11);
  std::vector<double> out(size_t(whole.tokens * whole.out_stride), 0), split = out;
  std::vector<double> state = in.state, state_split = in.state;
  delta_rule_chunked<double>({}, whole, in.view(), state.data(), out.data(), nullptr);
  for (auto [t0, n] : {std::pair{0, 70}, std::pair{70, 80}}) {
    DeltaRuleShape part = whole;
    part.tokens = n;
    const DeltaRuleInputs<double> v = in.view();
    const DeltaRuleInputs<double> shifted{v.q + t0 * whole.qk_stride, v.k + t0 * whole.qk_stride,
                                          v.v + t0 * whole.v_stride, v.g + t0 * whole.gate_stride,
                                          v.beta + t0 * whole.gate_stride};
    delta_rule_chunked<double>({}, part, shifted, state_split.data(),
                               split.data() + t0 * whole.out_stride, nullptr);
  }
  EXPECT_LT(relative_l2(split, out), 1e-12);
  EXPECT_LT(relative_l2(state_split, state), 1e-12);
}

// loss = <out, w_out> + <final state, w_state>, every input's gradient against central differences.
TEST(DeltaRule, ChunkedBackwardMatchesFiniteDifferences) {
  for (auto [sequences, key_heads, value_heads, tokens] :
       {std::tuple{1, 1, 2, 66}, std::tuple{1, 2, 2, 64}, std::tuple{2, 1, 1, 9}}) {
    const DeltaRuleShape s = shape(sequences, tokens, key_heads, value_heads, 3, 4);
    Inputs<double> in(s, 5);
    std::mt19937_64 rng(9);
    const std::vector<double> w_out =
        random_vector(size_t(s.sequences * s.tokens * s.out_stride), rng);
    const std::vector<double> w_state = random_vector(in.state.size(), rng);
    std::vector<double> initial = in.state;
    auto loss = [&] {
      std::vector<double> out(w_out.size(), 0), state = initial;
      delta_rule_chunked<double>({}, s, in.view(), state.data(), out.data(), nullptr);
      return dot(out, w_out) + dot(state, w_state);
    };
    std::vector<double> dq(in.q.size(), 0), dk(in.k.size(), 0), dv(in.v.size(), 0);
    std::vector<double> dg(in.g.size(), 0), dbeta(in.beta.size(), 0), dstate = w_state;
    delta_rule_chunked_backward<double>(
        {}, s, in.view(), initial.data(), w_out.data(),
        {dq.data(), dk.data(), dv.data(), dg.data(), dbeta.data(), dstate.data()});
    const std::string where =
        "tokens " + std::to_string(tokens) + " r " + std::to_string(value_heads / key_heads);
    EXPECT_LT(gradient_error(in.q, dq, loss), test::kGradTolerance) << "q " << where;
    EXPECT_LT(gradient_error(in.k, dk, loss), test::kGradTolerance) << "k " << where;
    EXPECT_LT(gradient_error(in.v, dv, loss), test::kGradTolerance) << "v " << where;
    EXPECT_LT(gradient_error(in.g, dg, loss), test::kGradTolerance) << "g " << where;
    EXPECT_LT(gradient_error(in.beta, dbeta, loss), test::kGradTolerance) << "beta " << where;
    EXPECT_LT(gradient_error(initial, dstate, loss), test::kGradTolerance) << "state " << where;
  }
}

// Grouped value head h (key head h / r) is tiled head (h % r) * key_heads + h / r. Copies each
// row's `heads` blocks of `width` values (the rest of the row as it is) into the other order.
std::vector<double> tile_heads(const std::vector<double>& x, int64_t stride,
                               const DeltaRuleShape& s, int width) {
  std::vector<double> out = x;
  const int r = s.ratio();
  for (size_t row = 0; row * stride < x.size(); ++row)
    for (int h = 0; h < s.value_heads; ++h)
      std::copy_n(x.data() + row * stride + int64_t(h) * width, width,
                  out.data() + row * stride + int64_t((h % r) * s.key_heads + h / r) * width);
  return out;
}

TEST(DeltaRule, TiledValueHeadsEqualGroupedOnesInTheirOrder) {
  const DeltaRuleShape grouped = shape(2, 70, 2, 6, 3, 4);
  DeltaRuleShape tiled = grouped;
  tiled.tiled_value_heads = true;
  Inputs<double> in(grouped, 11);
  Inputs<double> t = in;
  const int64_t head_size = int64_t(grouped.key_dim) * grouped.value_dim;
  t.v = tile_heads(in.v, grouped.v_stride, grouped, grouped.value_dim);
  t.g = tile_heads(in.g, grouped.gate_stride, grouped, 1);
  t.beta = tile_heads(in.beta, grouped.gate_stride, grouped, 1);
  t.state = tile_heads(in.state, grouped.state_size(), grouped, int(head_size));
  const size_t out_size = size_t(grouped.sequences * grouped.tokens * grouped.out_stride);
  std::vector<double> out_g(out_size, 0), out_t(out_size, 0), state_g = in.state, state_t = t.state;
  delta_rule_chunked<double>({}, grouped, in.view(), state_g.data(), out_g.data(), nullptr);
  delta_rule_chunked<double>({}, tiled, t.view(), state_t.data(), out_t.data(), nullptr);
  EXPECT_EQ(tile_heads(out_g, grouped.out_stride, grouped, grouped.value_dim), out_t);
  EXPECT_EQ(tile_heads(state_g, grouped.state_size(), grouped, int(head_size)), state_t);
  std::vector<double> rec_t(out_size, 0), rec_state = t.state;
  delta_rule_recurrent<double>({}, tiled, t.view(), rec_state.data(), rec_t.data());
  EXPECT_LT(relative_l2(rec_t, out_t), 1e-12);

  std::mt19937_64 rng(3);
  const std::vector<double> d_out = random_vector(out_size, rng);
  const std::vector<double> d_state = random_vector(in.state.size(), rng);
  struct Grads {
    std::vector<double> q, k, v, g, beta, state;
  };
  auto backward = [&](const DeltaRuleShape& s, const Inputs<double>& x,
                      const std::vector<double>& dy, const std::vector<double>& ds) {
    Grads d{std::vector<double>(x.q.size(), 0),    std::vector<double>(x.k.size(), 0),
            std::vector<double>(x.v.size(), 0),    std::vector<double>(x.g.size(), 0),
            std::vector<double>(x.beta.size(), 0), ds};
    delta_rule_chunked_backward<double>(
        {}, s, x.view(), x.state.data(), dy.data(),
        {d.q.data(), d.k.data(), d.v.data(), d.g.data(), d.beta.data(), d.state.data()});
    return d;
  };
  const Grads dg = backward(grouped, in, d_out, d_state);
  const Grads dt =
      backward(tiled, t, tile_heads(d_out, grouped.out_stride, grouped, grouped.value_dim),
               tile_heads(d_state, grouped.state_size(), grouped, int(head_size)));
  EXPECT_LT(relative_l2(dt.q, dg.q), 1e-13);  // the same terms summed in another order
  EXPECT_LT(relative_l2(dt.k, dg.k), 1e-13);
  EXPECT_EQ(dt.v, tile_heads(dg.v, grouped.v_stride, grouped, grouped.value_dim));
  EXPECT_EQ(dt.g, tile_heads(dg.g, grouped.gate_stride, grouped, 1));
  EXPECT_EQ(dt.beta, tile_heads(dg.beta, grouped.gate_stride, grouped, 1));
  EXPECT_EQ(dt.state, tile_heads(dg.state, grouped.state_size(), grouped, int(head_size)));
}

}  // namespace
}  // namespace gattn
