// Interventions (--intervene): the grammar and its errors, and what a forced gate computes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "model/intervention.h"
#include "model/train_state.h"
#include "util/error.h"

namespace gattn {
namespace {

Config config(GatePosition gate) {
  Config c;
  c.vocab_size = 100;
  c.hidden_size = 32;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 40;
  c.gate.position = gate;
  return c;
}

std::vector<float> logits_of(const Weights& w, const Interventions* interventions = nullptr) {
  std::vector<int32_t> ids(30);
  std::mt19937_64 rng(4);
  for (int32_t& id : ids) id = int32_t(rng() % 100);
  TrainState state(w);
  state.set_interventions(interventions);
  std::vector<float> logits(ids.size() * 100);
  state.forward({ids.data(), nullptr, 1, int(ids.size())}, logits.data());
  return logits;
}

Interventions parse(std::initializer_list<const char*> specs) {
  Interventions i;
  for (const char* s : specs) add_intervention(i, s, 3);
  return i;
}

TEST(Intervention, ParsesLayersTargetsAndActions) {
  const Interventions i = parse({"gate=constant:0.25", "layer:1:gate=open"});
  EXPECT_EQ(i.gate_at(0).kind, GateOverride::Kind::constant);
  EXPECT_EQ(i.gate_at(0).score, 0.25);
  EXPECT_EQ(i.gate_at(1).kind, GateOverride::Kind::open);
  EXPECT_EQ(i.gate_at(2).kind, GateOverride::Kind::constant);
  EXPECT_EQ(i.specs.size(), 2u);
  for (const char* bad : {"layer:3:gate=open", "layer:x:gate=open", "gate=shut", "value=zero",
                          "gate=constant:abc", "gate", "layer:1"}) {
    Interventions j;
    EXPECT_THROW(add_intervention(j, bad, 3), Error) << bad;
  }
}

// A gate held open is no gate: the logits equal those of the ungated model with the same weights.
TEST(Intervention, AnOpenG1GateIsTheUngatedModel) {
  Weights gated(config(GatePosition::sdpa)), plain(config(GatePosition::none));
  gated.init(5);
  for (const TensorSpec& t : plain.layout().tensors())
    std::copy_n(gated.at(gated.layout().find(t.name)->offset), t.numel, plain.data() + t.offset);
  const Interventions open = parse({"gate=open"});
  const std::vector<float> a = logits_of(gated, &open), b = logits_of(plain);
  double worst = 0, unmodified = 0;
  const std::vector<float> c = logits_of(gated);
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, double(std::abs(a[i] - b[i])));
    unmodified = std::max(unmodified, double(std::abs(c[i] - b[i])));
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(unmodified, 1e-2) << "the gate matters without the intervention";
}

// sigmoid(0) = 0.5: with zero gate weights, forcing 0.5 changes nothing (bit for bit).
TEST(Intervention, AConstantEqualToTheScoresChangesNothing) {
  Weights w(config(GatePosition::sdpa));
  w.init(6);
  for (const TensorSpec& t : w.layout().tensors())
    if (t.name.find("sdpa_gate") != std::string::npos) std::fill_n(w.data() + t.offset, t.numel, 0);
  const Interventions half = parse({"gate=constant:0.5"});
  EXPECT_EQ(logits_of(w, &half), logits_of(w));
}

TEST(Intervention, RefusesWhatTheModelCannotDo) {
  Weights plain(config(GatePosition::none));
  const Interventions open = parse({"gate=open"}), closed = parse({"layer:2:gate=closed"});
  TrainState state(plain);
  EXPECT_THROW(state.set_interventions(&open), Error);  // no gate
  Config additive = config(GatePosition::sdpa);
  additive.gate.additive = true;
  Weights w(additive);
  TrainState additive_state(w);
  EXPECT_THROW(additive_state.set_interventions(&closed), Error);
  additive_state.set_interventions(&open);
  std::vector<int32_t> ids(4, 1), targets(4, 2);
  EXPECT_THROW(additive_state.forward_backward({ids.data(), targets.data(), 1, 4}, 1.0f), Error);
}

}  // namespace
}  // namespace gattn
