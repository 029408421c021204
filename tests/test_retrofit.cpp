// Retrofitting a gate: a G1 (or G2) gate with init "identity" added to a model trained without
// one starts as that model (scores 0.5, o_proj doubled: both exact in binary floating point), and
// --init-from copies what the source has. "Starts as" is exact up to the fused q/k/v/gate GEMM:
// with the gate's rows the GEMM is wider and OpenBLAS sums the q/k/v columns in another order
// (relative differences ~1e-7); a random gate moves the logits by ~1e-1.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "model/train_state.h"
#include "train/step.h"
#include "util/error.h"

namespace gattn {
namespace {

Config base() {
  Config c;
  c.vocab_size = 90;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 40;
  return c;
}

double max_relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, double(std::abs(a[i] - b[i])));
    scale = std::max(scale, double(std::abs(b[i])));
  }
  return worst / scale;
}

std::vector<float> logits_of(const Weights& w) {
  std::vector<int32_t> ids(40);
  std::mt19937_64 rng(2);
  for (int32_t& id : ids) id = int32_t(rng() % 90);
  TrainState state(w);
  std::vector<float> logits(ids.size() * 90);
  state.forward({ids.data(), nullptr, 1, int(ids.size())}, logits.data());
  return logits;
}

TEST(Retrofit, AnIdentityGateStartsAsTheModelWithoutIt) {
  Weights original(base());
  original.init(1);
  for (GatePosition position : {GatePosition::sdpa, GatePosition::value}) {
    for (bool headwise : {false, true}) {
      Config c = base();
      c.gate.position = position;
      c.gate.headwise = headwise;
      c.gate.identity_init = true;
      Weights gated(c);
      gated.init(7);
      const std::vector<std::string> fresh = gated.init_from(original);
      ASSERT_EQ(fresh.size(), 2u) << "one gate weight per layer";
      const std::vector<float> expected = logits_of(original);
      EXPECT_LT(max_relative_difference(logits_of(gated), expected), 1e-6);
      // Random gate weights instead change the first logits.
      Config random = c;
      random.gate.identity_init = false;
      Weights spiky(random);
      spiky.init(7);
      spiky.init_from(original);
      EXPECT_GT(max_relative_difference(logits_of(spiky), expected), 1e-2);
    }
  }
}

TEST(Retrofit, InitFromCopiesEveryTensorTheSourceHas) {
  Config c = base();
  c.gate.position = GatePosition::sdpa;
  Weights source(c), target(c);
  source.init(3);
  target.init(4);
  EXPECT_TRUE(target.init_from(source).empty());
  EXPECT_EQ(target.values(), source.values());
  Config wider = c;
  wider.intermediate_size = 48;
  Weights other(wider);
  EXPECT_THROW(other.init_from(source), Error);
}

TEST(Retrofit, IdentityInitNeedsAGateWhoseHalfO_projUndoes) {
  for (const char* gate : {R"({"position": "key", "init": "identity"})",
                           R"({"position": "dense", "init": "identity"})",
                           R"({"position": "sdpa", "mode": "additive", "init": "identity"})",
                           R"({"position": "sdpa", "activation": "silu", "init": "identity"})",
                           R"({"position": "sdpa", "kind": "ns_sigmoid", "init": "identity"})"}) {
    nlohmann::json j = config_to_json(base());
    j["gate"] = nlohmann::json::parse(gate);
    EXPECT_THROW(config_from_json(j, "test"), Error) << gate;
  }
  nlohmann::json j = config_to_json(base());
  j["gate"] = {{"position", "sdpa"}, {"init", "identity"}};
  EXPECT_TRUE(config_from_json(j, "test").gate.identity_init);
  EXPECT_EQ(config_to_json(config_from_json(j, "test"))["gate"]["init"], "identity");
}

// Issue 30's experiment c freezes a trained G1 gate at its mean score: an input-independent gate
// whose logits start at a given value and never move.
Config frozen_gate(double logit) {
  Config c = base();
  c.gate.position = GatePosition::sdpa;
  c.gate.kind = GateKind::input_independent;
  c.gate.initial_logit = logit;
  c.gate.frozen = true;
  return c;
}

TEST(Retrofit, AGateStartedAtALogitScalesTheOutputByItsSigmoid) {
  const double logit = -1.25;
  Weights gated(frozen_gate(logit));
  gated.init(5);
  const TensorSpec* t = gated.layout().find("model.layers.0.self_attn.sdpa_gate.logit");
  ASSERT_NE(t, nullptr);
  for (int64_t i = 0; i < t->numel; ++i) ASSERT_EQ(gated.at(t->offset)[i], float(logit));
  // Y' = Y sigmoid(logit) reaches o_proj linearly: the model without the gate, o_proj scaled.
  Weights plain(base());
  plain.init(5);
  EXPECT_TRUE(plain.init_from(gated).empty());
  const float score = float(1 / (1 + std::exp(-logit)));
  for (const LayerParams& l : plain.layout().layers) {
    const TensorSpec* o = nullptr;
    for (const TensorSpec& s : plain.layout().tensors())
      if (s.offset == l.attention.o_proj) o = &s;
    ASSERT_NE(o, nullptr);
    for (int64_t i = 0; i < o->numel; ++i) plain.data()[o->offset + i] *= score;
  }
  EXPECT_LT(max_relative_difference(logits_of(gated), logits_of(plain)), 1e-5);
}

TEST(Retrofit, AFrozenGateNeverMovesWhileTheRestTrains) {
  Weights w(frozen_gate(0.75));
  w.init(6);
  const std::vector<float> before(w.values().begin(), w.values().end());
  TrainState state(w);
  AdamWOptions options;
  options.no_decay.clear();  // decay would move every tensor it reaches
  AdamW optimizer(w.layout(), options);
  std::vector<int32_t> ids(2 * 12), targets(2 * 12);
  std::mt19937_64 rng(3);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = int32_t(rng() % 90), targets[i] = int32_t(rng() % 90);
  for (int step = 0; step < 3; ++step)
    ASSERT_TRUE(
        optimizer_step(w, state, optimizer, {ids.data(), targets.data(), 1, 2, 12}, 0.01, 1.0)
            .updated);
  int frozen = 0;
  for (const TensorSpec& t : w.layout().tensors()) {
    const bool same = std::equal(before.begin() + t.offset, before.begin() + t.offset + t.numel,
                                 w.values().begin() + t.offset);
    EXPECT_EQ(same, t.frozen) << t.name;
    frozen += t.frozen;
  }
  EXPECT_EQ(frozen, 2) << "one logit tensor per layer";
  // No gradient of a frozen tensor is left for the norm and the clip.
  for (const TensorSpec& t : w.layout().tensors()) {
    if (!t.frozen) continue;
    for (int64_t i = 0; i < t.numel; ++i) ASSERT_EQ(state.grads().data()[t.offset + i], 0.0f);
  }
}

TEST(Retrofit, LogitAndFrozenAreReadCheckedAndWritten) {
  nlohmann::json j = config_to_json(base());
  j["gate"] = {
      {"position", "sdpa"}, {"kind", "input_independent"}, {"logit", -2.5}, {"frozen", true}};
  const Config c = config_from_json(j, "test");
  EXPECT_EQ(c.gate.initial_logit.value_or(0), -2.5);
  EXPECT_TRUE(c.gate.frozen);
  nlohmann::json expected = j["gate"];
  expected.update({{"granularity", "elementwise"},
                   {"sharing", "head_specific"},
                   {"activation", "sigmoid"},
                   {"mode", "multiplicative"}});
  EXPECT_EQ(config_to_json(c)["gate"], expected);
  for (const char* gate : {R"({"position": "sdpa", "logit": 1.0})",
                           R"({"position": "sdpa", "kind": "input_independent", "logit": 31})",
                           R"({"position": "sdpa", "kind": "input_independent", "logit": "x"})",
                           R"({"position": "sdpa", "kind": "silu_only", "frozen": true})",
                           R"({"position": "none", "frozen": true})"}) {
    j["gate"] = nlohmann::json::parse(gate);
    try {
      config_from_json(j, "test");
      ADD_FAILURE() << gate;
    } catch (const Error& e) {
      const std::string field =
          std::string(gate).find("logit") != std::string::npos ? "logit" : "frozen";
      EXPECT_NE(std::string(e.what()).find("'" + field + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace gattn
