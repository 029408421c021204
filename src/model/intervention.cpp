#include "model/intervention.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "model/gate_site.h"
#include "model/weights.h"
#include "util/error.h"

namespace gattn {

namespace {
bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// A whole-string number that a float holds, or an Error naming the spec.
float number(const std::string& text, const std::string& spec, const char* what) {
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  const bool plain = !text.empty() && !std::isspace(static_cast<unsigned char>(text[0]));
  if (!plain || *end != '\0' || !std::isfinite(x))
    fail("--intervene '", spec, "': ", what, " '", text, "' is not a finite number");
  if (std::abs(x) > std::numeric_limits<float>::max())
    fail("--intervene '", spec, "': ", what, " '", text, "' is outside the float range (+-",
         std::numeric_limits<float>::max(), ")");
  return float(x);
}

// Decimal digits only (no sign, base prefix or space), below `limit`; an Error naming the spec.
int index(const std::string& text, int limit, const std::string& spec, const char* what,
          const std::string& range) {
  const bool digits = !text.empty() && text.size() <= 10 &&
                      text.find_first_not_of("0123456789") == std::string::npos &&
                      (text.size() == 1 || text[0] != '0');
  if (!digits || std::stoll(text) >= limit)
    fail("--intervene '", spec, "': ", what, " '", text, "' is not ", range);
  return int(std::stoll(text));
}

GateOverride gate_action(const std::string& action, const std::string& spec) {
  if (action == "open") return {.kind = GateOverride::Kind::open};
  if (action == "closed") return {.kind = GateOverride::Kind::closed};
  if (starts_with(action, "constant:"))
    return {.kind = GateOverride::Kind::constant,
            .score = number(action.substr(9), spec, "the constant")};
  fail("--intervene '", spec, "': gate action '", action,
       "' is not one of constant:X | open | closed");
}

// TARGET[@POSITION]: the target's name, and the position (kEveryPosition without one).
std::pair<std::string, int> target_and_position(const std::string& text, const std::string& spec,
                                                int window) {
  const size_t at = text.find('@');
  if (at == std::string::npos) return {text, kEveryPosition};
  const std::string where = text.substr(at + 1);
  if (where == "first") return {text.substr(0, at), 0};
  return {text.substr(0, at), index(where, window, spec, "position",
                                    cat("`first` or a position of the window, 0..", window - 1))};
}

// One intervention per layer and target: a second would silently replace the first.
void claim(std::vector<std::string>& owners, int first, int last, const char* target,
           const std::string& spec) {
  for (int l = first; l <= last; ++l) {
    if (!owners[l].empty())
      fail("--intervene '", spec, "': layer ", l, "'s ", target, " is already set by '", owners[l],
           "' (one ", target, " intervention per layer)");
    owners[l] = spec;
  }
}
}  // namespace

float forced_gate_score(const GateOverride& forced, const GateSite& site, int layer) {
  if (site.stage == GateStage::none) fail("--intervene: layer ", layer, " has no gate");
  using Kind = GateOverride::Kind;
  if (forced.kind == Kind::open) return site.op == GateOp::scores && site.additive ? 0.0f : 1.0f;
  if (site.op != GateOp::scores)
    fail("--intervene: layer ", layer, "'s gate has no scores; only 'open' applies to it");
  if (forced.kind == Kind::closed) {
    if (site.additive) fail("--intervene: layer ", layer, "'s gate is additive; it cannot close");
    return 0.0f;
  }
  return float(forced.score);
}

namespace {
// A spec that named its layer (layer:L:...), not one for every layer of the target's kind.
bool names_layer(const std::vector<std::string>& specs, int l) {
  return l < int(specs.size()) && specs[l].rfind("layer:", 0) == 0;
}
}  // namespace

InterventionHooks::InterventionHooks(const Interventions& interventions, const Weights& w)
    : interventions_(interventions), scores_(w.config().num_hidden_layers, 0.0f) {
  const Interventions& in = interventions;
  bool any_linear = false;
  for (int l = 0; l < w.config().num_hidden_layers; ++l) {
    const bool linear = w.layer(l).attention.kind == AttentionKind::linear;
    any_linear = any_linear || linear;
    for (const std::vector<std::string>* specs :
         {linear ? &in.gate_spec : &in.delta_net_gate_spec, linear ? &in.value_spec : nullptr})
      if (specs && names_layer(*specs, l))
        fail("--intervene '", (*specs)[l], "': layer ", l, " is ",
             linear ? "a Gated DeltaNet layer (linear_attention): gate and value interventions "
                      "apply to full-attention layers"
                    : "a full-attention layer: gdn_gate applies to Gated DeltaNet layers");
    const GateOverride forced = in.gate_at(l);
    if (!linear && forced.active())
      scores_[l] = forced_gate_score(forced, w.layer(l).attention.gate, l);
  }
  if (!any_linear && !in.delta_net_gate.empty())
    fail(
        "--intervene: gdn_gate needs Gated DeltaNet (linear_attention) layers; the model has none");
}

void InterventionHooks::on_tensor(const HookEvent& event) {
  if (event.site == HookSite::gate_output) force_gate(event);
  if (event.site == HookSite::attention_v) zero_values(event);
  if (event.site == HookSite::delta_net_gate) force_delta_net_gate(event);
}

// open: silu(z) replaced by 1; closed: by 0; constant:X: multiplied by X.
void InterventionHooks::force_delta_net_gate(const HookEvent& e) const {
  const GateOverride forced = interventions_.delta_net_gate_at(e.layer);
  if (!forced.active()) return;
  using Kind = GateOverride::Kind;
  for (int64_t r = 0; r < e.tensor.rows; ++r) {
    if (!forced.everywhere() && e.positions[r] != forced.position) continue;
    float* g = e.tensor.data + r * e.tensor.ld;
    for (int c = 0; c < e.tensor.cols; ++c)
      g[c] = forced.kind == Kind::open     ? 1.0f
             : forced.kind == Kind::closed ? 0.0f
                                           : g[c] * forced.score;
  }
}

namespace {
// The gate's output with its scores replaced by one forced score.
void forced_gate(const HookTensor& out, const HookTensor& x, int64_t first, int64_t rows,
                 const GateSite& site, float score) {
  const int width = site.width();
  const bool add = site.op == GateOp::scores && site.additive;
#pragma omp parallel for schedule(static)
  for (int64_t r = first; r < first + rows; ++r)
    for (int j = 0; j < width; ++j) {
      const float y = x.data[r * x.ld + j];
      out.data[r * out.ld + j] = add ? y + score : y * score;
    }
}
}  // namespace

void InterventionHooks::force_gate(const HookEvent& e) const {
  const GateOverride forced = interventions_.gate_at(e.layer);
  if (!forced.active()) return;
  const float score = scores_[e.layer];
  if (forced.everywhere()) {
    forced_gate(e.tensor, e.gate_input, 0, e.tensor.rows, *e.gate, score);
    return;
  }
  for (int64_t r = 0; r < e.tensor.rows; ++r)
    if (e.positions[r] == forced.position)
      forced_gate(e.tensor, e.gate_input, r, 1, *e.gate, score);
}

void InterventionHooks::zero_values(const HookEvent& e) const {
  const ValueOverride zero = interventions_.value_at(e.layer);
  if (!zero.active()) return;
  for (int64_t r = 0; r < e.tensor.rows; ++r)
    if (zero.position == kEveryPosition || e.positions[r] == zero.position)
      std::fill_n(e.tensor.data + r * e.tensor.ld, e.tensor.cols, 0.0f);
}

void add_intervention(Interventions& into, const std::string& spec, int layers, int window) {
  std::string rest = spec;
  int first = 0, last = layers - 1;
  if (starts_with(rest, "layer:")) {
    const size_t colon = rest.find(':', 6);
    if (colon == std::string::npos)
      fail("--intervene '", spec, "': expected layer:L:TARGET=ACTION");
    first = last = index(rest.substr(6, colon - 6), layers, spec, "layer",
                         cat("one of the model's layers 0..", layers - 1));
    rest = rest.substr(colon + 1);
  }
  const size_t equals = rest.find('=');
  if (equals == std::string::npos) fail("--intervene '", spec, "': expected TARGET=ACTION");
  const auto [target, position] = target_and_position(rest.substr(0, equals), spec, window);
  const std::string action = rest.substr(equals + 1);
  if (target == "gate") {
    GateOverride gate = gate_action(action, spec);
    gate.position = position;
    into.gate.resize(layers);
    into.gate_spec.resize(layers);
    claim(into.gate_spec, first, last, "gate", spec);
    for (int l = first; l <= last; ++l) into.gate[l] = gate;
  } else if (target == "value") {
    if (action != "zero") fail("--intervene '", spec, "': value action '", action, "' is not zero");
    into.value.resize(layers);
    into.value_spec.resize(layers);
    claim(into.value_spec, first, last, "value", spec);
    for (int l = first; l <= last; ++l) into.value[l] = {.zero = true, .position = position};
  } else if (target == "gdn_gate") {
    GateOverride gate = gate_action(action, spec);
    gate.position = position;
    into.delta_net_gate.resize(layers);
    into.delta_net_gate_spec.resize(layers);
    claim(into.delta_net_gate_spec, first, last, "gdn_gate", spec);
    for (int l = first; l <= last; ++l) into.delta_net_gate[l] = gate;
  } else {
    fail("--intervene '", spec, "': unknown target '", target,
         "' (supported: gate, value, gdn_gate)");
  }
  into.specs.push_back(spec);
}

}  // namespace gattn
