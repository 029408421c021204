// Interventions (--intervene): the grammar and its errors, and what a forced gate computes.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
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

std::vector<int32_t> some_ids(int n = 30) {
  std::vector<int32_t> ids(n);
  std::mt19937_64 rng(4);
  for (int32_t& id : ids) id = int32_t(rng() % 100);
  return ids;
}

std::vector<float> logits_of(const Weights& w, const Interventions* interventions = nullptr,
                             std::vector<int32_t> ids = some_ids()) {
  TrainState state(w);
  std::optional<InterventionHooks> hooks;
  if (interventions) hooks.emplace(*interventions, w);
  state.set_hooks(hooks ? &*hooks : nullptr);
  std::vector<float> logits(ids.size() * 100);
  state.forward({ids.data(), nullptr, 1, int(ids.size())}, logits.data());
  return logits;
}

Interventions parse(std::initializer_list<const char*> specs) {
  Interventions i;
  for (const char* s : specs) add_intervention(i, s, 3, 16);
  return i;
}

TEST(Intervention, ParsesLayersTargetsAndActions) {
  const Interventions i =
      parse({"layer:0:gate=constant:0.25", "layer:1:gate=open", "layer:2:gate=constant:0.25"});
  EXPECT_EQ(i.gate_at(0).kind, GateOverride::Kind::constant);
  EXPECT_EQ(i.gate_at(0).score, 0.25);
  EXPECT_EQ(i.gate_at(1).kind, GateOverride::Kind::open);
  EXPECT_EQ(i.gate_at(2).kind, GateOverride::Kind::constant);
  EXPECT_EQ(i.specs.size(), 3u);
  const Interventions at = parse({"gate@first=open", "layer:2:value@5=zero"});
  EXPECT_EQ(at.gate_at(1).position, 0);
  EXPECT_FALSE(at.gate_at(1).everywhere());
  EXPECT_TRUE(at.value_at(2).zero);
  EXPECT_EQ(at.value_at(2).position, 5);
  EXPECT_FALSE(at.value_at(1).active());
  EXPECT_EQ(parse({"value=zero"}).value_at(0).position, kEveryPosition);
  for (const char* bad : {"layer:3:gate=open", "layer:x:gate=open", "gate=shut", "value=open",
                          "gate@x=open", "gate@-1=open", "gate@1.5=open", "key@first=zero",
                          "gate=constant:abc", "gate", "layer:1"}) {
    Interventions j;
    EXPECT_THROW(add_intervention(j, bad, 3, 16), Error) << bad;
  }
}

// D10: numbers parsed strictly; positions outside the window and constants outside float range
// refused (1e39 overflowed the double -> float conversion).
TEST(Intervention, RefusesLenientNumbersAndNoOpPositions) {
  for (const char* bad :
       {"layer:0x1:gate=open", "layer:-0:gate=open", "layer:01:gate=open", "layer: 1:gate=open",
        "layer:+1:gate=open", "gate=constant: 1", "gate=constant:1e39", "gate=constant:-1e39",
        "gate@16=open", "gate@1000000=open", "value@16=zero", "gate@ 3=open"}) {
    Interventions j;
    EXPECT_THROW(add_intervention(j, bad, 3, 16), Error) << bad;
  }
  Interventions ok;
  add_intervention(ok, "layer:2:gate@15=constant:3.4e38", 3, 16);
  EXPECT_EQ(ok.gate_at(2).position, 15);
  EXPECT_EQ(ok.gate_at(2).score, 3.4e38f);
}

// D10: a second intervention on a layer's gate or value silently replaced the first while the
// report listed both.
TEST(Intervention, RefusesConflictingSpecs) {
  for (const auto& [first, second] :
       std::vector<std::pair<const char*, const char*>>{{"gate=open", "gate=closed"},
                                                        {"gate@0=open", "gate@5=closed"},
                                                        {"layer:1:gate=closed", "gate=open"},
                                                        {"gate=open", "layer:2:gate=closed"},
                                                        {"value@0=zero", "layer:1:value=zero"}}) {
    Interventions j;
    add_intervention(j, first, 3, 16);
    try {
      add_intervention(j, second, 3, 16);
      ADD_FAILURE() << first << " then " << second << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("is already set by '") + first + "'"),
                std::string::npos)
          << e.what();
    }
  }
  Interventions both;
  add_intervention(both, "gate=open", 3, 16);
  add_intervention(both, "value@first=zero", 3, 16);  // another target: no conflict
  EXPECT_EQ(both.specs.size(), 2u);
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

// Zeroing the values at position 3 changes nothing before it (causality) and every logit from it
// on.
TEST(Intervention, ZeroValuesAtOnePositionActFromThatPositionOn) {
  Weights w(config(GatePosition::none));
  w.init(7);
  const Interventions zero = parse({"value@3=zero"});
  const std::vector<float> a = logits_of(w, &zero), b = logits_of(w);
  for (int t = 0; t < 30; ++t) {
    double diff = 0;
    for (int j = 0; j < 100; ++j)
      diff = std::max(diff, double(std::abs(a[t * 100 + j] - b[t * 100 + j])));
    if (t < 3)
      EXPECT_EQ(diff, 0.0) << "position " << t;
    else
      EXPECT_GT(diff, 1e-4) << "position " << t;
  }
}

// With every value zero attention adds nothing, so each position's logits are those of its token
// alone under the same intervention (RoPE only moves q and k).
TEST(Intervention, ZeroValuesEverywhereLeaveEachTokenAlone) {
  Weights w(config(GatePosition::none));
  w.init(8);
  const Interventions zero = parse({"value=zero"});
  const std::vector<int32_t> ids = some_ids(6);
  const std::vector<float> all = logits_of(w, &zero, ids);
  for (int t = 0; t < 6; ++t) {
    const std::vector<float> alone = logits_of(w, &zero, {ids[t]});
    for (int j = 0; j < 100; ++j) EXPECT_NEAR(all[t * 100 + j], alone[j], 1e-4) << t << " " << j;
  }
}

// In a 1-layer G2 model the first query sees only the first key: opening the first token's gate
// gives its logits exactly as opening every gate does, and leaves the rest of the sequence's
// values gated (other positions differ from the everywhere-open model).
TEST(Intervention, AGateOpenAtTheFirstTokenActsThereOnly) {
  Config c = config(GatePosition::value);
  c.num_hidden_layers = 1;
  Weights w(c);
  w.init(9);
  Interventions first, everywhere;
  add_intervention(first, "gate@first=open", 1, 16);
  add_intervention(everywhere, "gate=open", 1, 16);
  const std::vector<float> a = logits_of(w, &first), b = logits_of(w, &everywhere),
                           u = logits_of(w);
  double at_first = 0, unmodified = 0, later = 0;
  for (int j = 0; j < 100; ++j) {
    at_first = std::max(at_first, double(std::abs(a[j] - b[j])));
    unmodified = std::max(unmodified, double(std::abs(a[j] - u[j])));
  }
  for (size_t i = 100; i < a.size(); ++i) later = std::max(later, double(std::abs(a[i] - b[i])));
  EXPECT_LT(at_first, 1e-6);
  EXPECT_GT(unmodified, 1e-3);
  EXPECT_GT(later, 1e-3);
}

TEST(Intervention, RefusesWhatTheModelCannotDo) {
  Weights plain(config(GatePosition::none));
  const Interventions open = parse({"gate=open"}), closed = parse({"layer:2:gate=closed"});
  EXPECT_THROW(InterventionHooks(open, plain), Error);  // no gate
  Config additive = config(GatePosition::sdpa);
  additive.gate.additive = true;
  Weights w(additive);
  TrainState additive_state(w);
  EXPECT_THROW(InterventionHooks(closed, w), Error);
  InterventionHooks hooks(open, w);
  additive_state.set_hooks(&hooks);
  std::vector<int32_t> ids(4, 1), targets(4, 2);
  EXPECT_THROW(additive_state.forward_backward({ids.data(), targets.data(), 1, 4}, 1.0f),
               InternalError);
}

}  // namespace
}  // namespace gattn
