// Changes to what a model computes, for analysis (gattn eval and analyze --intervene): each spec
// names a target in some layers and what to do with it, e.g.
//   gate=constant:0.15      every layer's gate scores replaced by 0.15
//   layer:3:gate=open       layer 3's gate passes its input through (score 1; additive: 0)
//   layer:0:gate=closed     layer 0's multiplicative gate outputs zero
//   gate@first=open         only the first token's gate is held open (a G2 gate: the first
//                           token's value passes ungated; G1: the first query's output)
//   value@first=zero        every layer's value vectors of the first token are zero
//   layer:0:gdn_gate=closed a Gated DeltaNet layer's output gate silu(z) replaced by 0 (open: 1;
//                           constant:X: silu(z) multiplied by X)
// Grammar: [layer:L:]TARGET[@POSITION]=ACTION, POSITION a sequence position or `first` (0);
// without it the change applies at every position. Targets: gate (ACTION constant:X | open |
// closed) and value (ACTION zero) of full-attention layers, gdn_gate (the same actions as gate)
// of Gated DeltaNet layers; without a layer, every layer of the target's kind. New targets are new
// names in add_intervention() and new fields here.
#pragma once
#include <string>
#include <vector>

#include "model/hooks.h"

namespace gattn {

constexpr int kEveryPosition = -1;

struct GateOverride {
  enum class Kind { none, constant, open, closed };
  Kind kind = Kind::none;
  float score = 0;                // constant
  int position = kEveryPosition;  // the only sequence position it applies at
  bool active() const { return kind != Kind::none; }
  bool everywhere() const { return active() && position == kEveryPosition; }
};

struct ValueOverride {
  bool zero = false;
  int position = kEveryPosition;
  bool active() const { return zero; }
};

struct Interventions {
  std::vector<GateOverride> gate;                                       // per layer; empty: none
  std::vector<ValueOverride> value;                                     // per layer; empty: none
  std::vector<GateOverride> delta_net_gate;                             // per layer; empty: none
  std::vector<std::string> gate_spec, value_spec, delta_net_gate_spec;  // the spec that set it
  std::vector<std::string> specs;                                       // as given, for reports

  bool any() const { return !specs.empty(); }
  GateOverride gate_at(int layer) const {
    return layer < int(gate.size()) ? gate[layer] : GateOverride{};
  }
  ValueOverride value_at(int layer) const {
    return layer < int(value.size()) ? value[layer] : ValueOverride{};
  }
  GateOverride delta_net_gate_at(int layer) const {
    return layer < int(delta_net_gate.size()) ? delta_net_gate[layer] : GateOverride{};
  }
};

// Adds one spec for a model of `layers` layers whose windows hold `window` positions; an Error
// names the spec and what is wrong: a number that is not plain decimal digits (layers and
// positions) or does not fit a float (constants), a layer or position outside the model or window,
// a second intervention on the same layer's gate or value.
void add_intervention(Interventions& into, const std::string& spec, int layers, int window);

struct GateSite;
// The score a forced gate applies at `site`: an Error when the layer's gate cannot do it (no
// gate, a parameter-free gate given a score, "closed" on an additive gate).
float forced_gate_score(const GateOverride& forced, const GateSite& site, int layer);

class Weights;
// Interventions as the hooks of a forward pass: a forced gate's output rewritten from the gate's
// input with the forced score (at every position or one), value vectors zeroed before attention
// reads them. Constructing it checks every layer can take its intervention (an Error otherwise).
// Keeps a reference to `interventions`.
class InterventionHooks final : public PassHooks {
 public:
  InterventionHooks(const Interventions& interventions, const Weights& w);
  void on_tensor(const HookEvent& event) override;
  bool changes_tensors() const override { return true; }
  const Interventions& interventions() const { return interventions_; }

 private:
  void force_gate(const HookEvent& event) const;
  void zero_values(const HookEvent& event) const;
  void force_delta_net_gate(const HookEvent& event) const;

  const Interventions& interventions_;
  std::vector<float> scores_;  // per layer: the forced gate's score
};

}  // namespace gattn
