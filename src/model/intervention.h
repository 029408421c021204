// Changes to what a model computes, for analysis (gattn eval and analyze --intervene): each spec
// names a target in some layers and what to do with it, e.g.
//   gate=constant:0.15      every layer's gate scores replaced by 0.15
//   layer:3:gate=open       layer 3's gate passes its input through (score 1; additive: 0)
//   layer:0:gate=closed     layer 0's multiplicative gate outputs zero
// Grammar: [layer:L:]TARGET=ACTION. Targets today: gate (ACTION constant:X | open | closed).
// New targets (values, attention) are new names in parse_intervention() and new fields here.
#pragma once
#include <string>
#include <vector>

namespace gattn {

struct GateOverride {
  enum class Kind { none, constant, open, closed };
  Kind kind = Kind::none;
  double score = 0;  // constant
  bool active() const { return kind != Kind::none; }
};

struct Interventions {
  std::vector<GateOverride> gate;  // per layer; empty: none
  std::vector<std::string> specs;  // as given, for reports

  bool any() const { return !specs.empty(); }
  GateOverride gate_at(int layer) const {
    return layer < int(gate.size()) ? gate[layer] : GateOverride{};
  }
};

// Adds one spec for a model of `layers` layers; an Error names the spec and what is wrong.
void add_intervention(Interventions& into, const std::string& spec, int layers);

struct GateSite;
// The score a forced gate applies at `site`: an Error when the layer's gate cannot do it (no
// gate, a parameter-free gate given a score, "closed" on an additive gate).
float forced_gate_score(const GateOverride& forced, const GateSite& site, int layer);

}  // namespace gattn
