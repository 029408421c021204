// Whole-model properties: bitwise reproducibility, gradient accumulation, input checks, and the
// seam the KV cache uses: a sequence run in chunks against the cache equals one full pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>

#include "model/infer_state.h"
#include "model/train_state.h"
#include "model_test_data.h"
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

TEST(Model, StepIsBitwiseReproducible) {
  const ThreadScope threads(2);
  const Tokens t(3, 150, 300, 1);  // three attention tiles per sequence
  AlignedFloats first_grads;
  double first_loss = 0;
  for (int run = 0; run < 2; ++run) {
    Weights w(small());
    w.init(9);
    TrainState m(w);
    m.zero_grads();
    const LossSum loss = m.forward_backward(t.b, 1.0f / float(count_targets(t.b)));
    if (run == 0) {
      first_grads = m.grads().values();
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
  const ThreadScope threads(2);
  const Tokens t(2, 40, 300, 2);
  Weights w(small());
  w.init(3);
  TrainState m(w);
  m.zero_grads();
  m.forward_backward(t.b, 0.5f);
  const AlignedFloats once = m.grads().values();
  m.forward_backward(t.b, 0.5f);
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < once.size(); ++i) {
    max_diff = std::max(max_diff, double(std::abs(m.grads().data()[i] - 2 * once[i])));
    max_abs = std::max(max_abs, double(std::abs(once[i])));
  }
  EXPECT_GT(max_abs, 0.0);
  EXPECT_LE(max_diff, 1e-6 * max_abs);
}

TEST(Model, InitialLossIsNearLnVocab) {
  const Tokens t(2, 64, 300, 3);
  Weights w(small());
  w.init(4);
  TrainState m(w);
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
    Weights w(c);
    w.init(5);
    TrainState m(w);
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
  Weights w(small());
  w.init(1);
  TrainState m(w);
  Tokens t(1, 8, 300, 4);
  t.ids[3] = 300;
  EXPECT_THROW(m.forward(t.b), Error);
  Tokens long_seq(1, 5000, 300, 5);
  EXPECT_THROW(m.forward(long_seq.b), Error);
  Tokens bad_target(1, 8, 300, 6);
  bad_target.targets[2] = -2;
  EXPECT_THROW(m.forward(bad_target.b), Error);
}

// Positions 0..k-1 as one chunk, then k..T-1 against the cached keys and values of the first:
// the logits of every position equal those of one forward pass over all T tokens. For every gate
// stage (G2/G3 put gated tensors in the cache), chunks that split attention tiles, and decode
// steps of one token.
class ChunkedForward : public ::testing::TestWithParam<std::string> {};

TEST_P(ChunkedForward, EqualsTheFullForward) {
  const ThreadScope threads(2);
  nlohmann::json j = config_to_json(small());
  j["gate"] = nlohmann::json::parse(GetParam());
  const Config c = config_from_json(j, "test");
  Weights w(c);
  w.init(11);
  const int T = 150, V = c.vocab_size;
  const Tokens t(1, T, V, 12);
  std::vector<float> full(size_t(T) * V);
  TrainState train(w);
  train.forward(t.b, full.data());
  for (const std::vector<int>& chunks :
       {std::vector<int>{70, 80}, std::vector<int>{1, 63, 64, 22}, std::vector<int>(T, 1)}) {
    InferState infer(w, 160, 80);
    std::vector<float> logits(size_t(T) * V);
    int done = 0;
    for (int n : chunks) {
      infer.forward(t.ids.data() + done, n, logits.data() + size_t(done) * V);
      done += n;
    }
    ASSERT_EQ(infer.length(), T);
    double worst = 0;
    for (int p = 0; p < T; ++p)
      worst = std::max(worst,
                       relative_l2(logits.data() + size_t(p) * V, full.data() + size_t(p) * V, V));
    EXPECT_LT(worst, 1e-6) << chunks.size() << " chunks";
  }
}

INSTANTIATE_TEST_SUITE_P(
    GateStages, ChunkedForward,
    ::testing::Values(R"({"position": "none"})", R"({"position": "sdpa"})",
                      R"({"position": "value", "granularity": "headwise"})",
                      R"({"position": "key"})", R"({"position": "key", "after_qk_norm": true})",
                      R"({"position": "query", "after_qk_norm": true})", R"({"position": "dense"})",
                      R"({"position": "sdpa", "kind": "head_rmsnorm"})"),
    [](const auto& param_info) { return "gate" + std::to_string(param_info.index); });

// bf16 weights for inference: decode steps read the bf16 matrices (the small-batch kernel),
// prefill fp32 panels widened from them, so chunked decode still equals one full pass; and the
// rounding is real: the logits move away from those of the fp32 weights.
TEST(InferState, Bf16WeightsDecodeLikeTheFullForward) {
  const ThreadScope threads(2);
  Weights w(small());
  w.init(11);
  const int T = 40, V = w.config().vocab_size;
  const Tokens t(1, T, V, 12);
  std::vector<float> fp32(size_t(T) * V), full(size_t(T) * V), decoded(size_t(T) * V);
  TrainState(w).forward(t.b, fp32.data());
  w.convert_to_bf16();
  ASSERT_NE(w.bf16_data(), nullptr);
  TrainState(w).forward({t.ids.data(), nullptr, 1, T}, full.data());
  InferState infer(w, T, 8);
  infer.forward(t.ids.data(), 8, decoded.data());
  for (int p = 8; p < T; ++p) infer.forward(t.ids.data() + p, 1, decoded.data() + size_t(p) * V);
  double worst = 0, moved = 0;
  for (int p = 0; p < T; ++p) {
    worst = std::max(worst,
                     relative_l2(decoded.data() + size_t(p) * V, full.data() + size_t(p) * V, V));
    moved =
        std::max(moved, relative_l2(full.data() + size_t(p) * V, fp32.data() + size_t(p) * V, V));
  }
  EXPECT_LT(worst, 1e-6);
  EXPECT_GT(moved, 1e-4);
}

TEST(InferState, RejectsChunksBeyondItsContextOrSize) {
  Weights w(small());
  w.init(1);
  InferState infer(w, 10, 4);
  const std::vector<int32_t> ids(8, 1);
  EXPECT_THROW(infer.forward(ids.data(), 5, nullptr), Error);
  infer.forward(ids.data(), 4, nullptr);
  infer.forward(ids.data(), 4, nullptr);
  EXPECT_THROW(infer.forward(ids.data(), 3, nullptr), Error);
  EXPECT_THROW(InferState(w, 5000, 4), Error);
}

}  // namespace
}  // namespace gattn
