// Retrofitting a gate: a G1 (or G2) gate with init "identity" added to a model trained without
// one starts as that model (scores 0.5, o_proj doubled: both exact in binary floating point), and
// --init-from copies what the source has. "Starts as" is exact up to the fused q/k/v/gate GEMM:
// with the gate's rows the GEMM is wider and OpenBLAS sums the q/k/v columns in another order
// (relative differences ~1e-7); a random gate moves the logits by ~1e-1.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <random>

#include "model/train_state.h"
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

}  // namespace
}  // namespace gattn
