// Whole-model properties: bitwise reproducibility, gradient accumulation, and input checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "model/model.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {
namespace {

Config small() {
  Config c;
  c.vocab_size = 300;
  c.hidden_size = 64;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 20;
  c.intermediate_size = 96;
  c.gate.position = GatePosition::sdpa;
  return c;
}

struct Tokens {
  Tokens(int batch, int seq, int vocab, uint64_t seed) : ids(batch * seq), targets(batch * seq) {
    std::mt19937_64 rng(seed);
    for (auto& id : ids) id = int32_t(rng() % vocab);
    for (size_t i = 0; i < ids.size(); ++i) targets[i] = (i + 1) % seq ? ids[i + 1] : -1;
    b = {ids.data(), targets.data(), batch, seq};
  }
  std::vector<int32_t> ids, targets;
  Batch b{};
};

TEST(Model, StepIsBitwiseReproducible) {
  set_num_threads(2);
  const Tokens t(3, 150, 300, 1);  // three attention tiles per sequence
  std::vector<float> first_grads;
  double first_loss = 0;
  for (int run = 0; run < 2; ++run) {
    Model m(small());
    m.init(9);
    m.zero_grads();
    const LossSum loss = m.forward_backward(t.b, 1.0f / float(count_targets(t.b)));
    if (run == 0) {
      first_grads = m.grads();
      first_loss = loss.nats;
    } else {
      EXPECT_EQ(std::memcmp(&loss.nats, &first_loss, sizeof(double)), 0);
      ASSERT_EQ(m.grads().size(), first_grads.size());
      EXPECT_EQ(
          std::memcmp(m.grads().data(), first_grads.data(), first_grads.size() * sizeof(float)), 0);
    }
  }
}

TEST(Model, GradientsAccumulateOverMicroBatches) {
  set_num_threads(2);
  const Tokens t(2, 40, 300, 2);
  Model m(small());
  m.init(3);
  m.zero_grads();
  m.forward_backward(t.b, 0.5f);
  const std::vector<float> once = m.grads();
  m.forward_backward(t.b, 0.5f);
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < once.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(m.grads()[i] - 2 * once[i])));
    max_abs = std::max(max_abs, double(std::abs(once[i])));
  }
  EXPECT_GT(max_abs, 0.0);
  EXPECT_LE(max_diff, 1e-6 * max_abs);
}

TEST(Model, InitialLossIsNearLnVocab) {
  const Tokens t(2, 64, 300, 3);
  Model m(small());
  m.init(4);
  const LossSum loss = m.forward(t.b);
  EXPECT_EQ(loss.tokens, 2 * 63);
  EXPECT_NEAR(loss.nats / loss.tokens, std::log(300.0), 0.05);
}

// Without positions (partial_rotary_factor 0, "NoPE") one causal attention layer sees its prefix
// as a set: the last token's logits do not change when the tokens before it are shuffled. With
// RoPE they do. (From two layers on, earlier positions' outputs depend on their own prefixes.)
TEST(Model, NoRopeMakesTheLastTokenBlindToPrefixOrder) {
  for (const double factor : {0.0, 1.0}) {
    Config c = small();
    c.partial_rotary_factor = factor;
    c.num_hidden_layers = 1;
    Model m(c);
    m.init(5);
    Tokens t(1, 24, 300, 7);
    std::vector<float> before(24 * 300), after(24 * 300);
    m.forward(t.b, before.data());
    std::shuffle(t.ids.begin(), t.ids.end() - 1, std::mt19937_64(8));
    m.forward(t.b, after.data());
    double max_diff = 0;
    for (int v = 0; v < 300; ++v)
      max_diff = std::max(max_diff, double(std::abs(after[23 * 300 + v] - before[23 * 300 + v])));
    if (factor == 0)
      EXPECT_LT(max_diff, 1e-5);
    else
      EXPECT_GT(max_diff, 1e-3);
  }
}

TEST(Model, RejectsBadInputs) {
  Model m(small());
  m.init(1);
  Tokens t(1, 8, 300, 4);
  t.ids[3] = 300;
  EXPECT_THROW(m.forward(t.b), Error);
  Tokens long_seq(1, 5000, 300, 5);
  EXPECT_THROW(m.forward(long_seq.b), Error);
  Tokens bad_target(1, 8, 300, 6);
  bad_target.targets[2] = -2;
  EXPECT_THROW(m.forward(bad_target.b), Error);
}

}  // namespace
}  // namespace gattn
