#include "model/config.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "model/gate_site.h"
#include "util/error.h"
#include "util/json_fields.h"

namespace gattn {

namespace {
using json = nlohmann::json;

const std::map<std::string, GatePosition> kPositions = [] {
  std::map<std::string, GatePosition> names = {{"none", GatePosition::none}};
  for (const GatePositionInfo& info : gate_positions()) names[info.name] = info.position;
  return names;
}();
const std::map<std::string, GateKind> kKinds = {{"input_dependent", GateKind::input_dependent},
                                                {"input_independent", GateKind::input_independent},
                                                {"ns_sigmoid", GateKind::ns_sigmoid},
                                                {"silu_only", GateKind::silu_only},
                                                {"head_rmsnorm", GateKind::head_rmsnorm}};
const std::map<std::string, bool> kGranularities = {{"elementwise", false}, {"headwise", true}};
const std::map<std::string, bool> kSharings = {{"head_specific", false}, {"head_shared", true}};
const std::map<std::string, GateActivation> kActivations = {{"sigmoid", GateActivation::sigmoid},
                                                            {"silu", GateActivation::silu},
                                                            {"identity", GateActivation::identity}};
const std::map<std::string, bool> kModes = {{"multiplicative", false}, {"additive", true}};
const std::map<std::string, bool> kGateInits = {{"random", false}, {"identity", true}};
const std::map<std::string, RopeScaling::Type> kRopeTypes = {{"default", RopeScaling::Type::none},
                                                             {"linear", RopeScaling::Type::linear},
                                                             {"ntk", RopeScaling::Type::ntk},
                                                             {"yarn", RopeScaling::Type::yarn}};

const std::map<std::string, AttentionKind> kAttentionKinds = {
    {"full_attention", AttentionKind::full}, {"linear_attention", AttentionKind::linear}};
const std::map<std::string, MlpKind> kMlpKinds = {{"dense", MlpKind::dense}, {"moe", MlpKind::moe}};

// `field` (a list of one name per layer) into each layer's spec.
template <typename Kind>
void read_layer_kinds(JsonFields& f, const char* field, const std::map<std::string, Kind>& kinds,
                      int layers, std::vector<LayerSpec>& specs, Kind LayerSpec::*member) {
  std::vector<std::string> names;
  f.read(field, names);
  if (!f.has(field)) return;
  if (int(names.size()) != layers)
    fail(f.where(), ": field '", field, "': expected one entry per layer (", layers, "), found ",
         names.size());
  specs.resize(layers);
  for (int l = 0; l < layers; ++l) {
    if (!kinds.count(names[l])) {
      std::string choices;
      for (const auto& [key, value] : kinds) choices += (choices.empty() ? "" : " | ") + key;
      fail(f.where(), ": field '", field, "': layer ", l, " has type '", names[l],
           "', which gattn does not support (supported: ", choices, ")");
    }
    specs[l].*member = kinds.at(names[l]);
  }
}

GateConfig gate_from_json(const json& j, const std::string& source) {
  JsonFields f(j, source + ": gate");
  GateConfig g;
  f.read("position", g.position, kPositions);
  f.read("kind", g.kind, kKinds);
  f.read("granularity", g.headwise, kGranularities);
  f.read("sharing", g.head_shared, kSharings);
  f.read("activation", g.activation, kActivations);
  f.read("mode", g.additive, kModes);
  f.read("after_qk_norm", g.after_qk_norm);
  f.read("init", g.identity_init, kGateInits);
  if (f.has("logit")) {
    double logit = 0;
    f.read_in("logit", logit, -30, 30);
    g.initial_logit = logit;
  }
  f.read("frozen", g.frozen);
  f.reject_unknown();

  auto must_be_absent = [&](const char* field, const std::string& because) {
    if (f.has(field)) fail(f.where(), ": field '", field, "' is not allowed ", because);
  };
  const char* options[] = {"kind",          "granularity", "sharing", "activation", "mode",
                           "after_qk_norm", "init",        "logit",   "frozen"};
  if (g.position == GatePosition::none) {
    for (const char* field : options) must_be_absent(field, "with position 'none'");
    return g;
  }
  const std::string position = "'" + name_of(kPositions, g.position) + "'";
  if (g.kind == GateKind::silu_only || g.kind == GateKind::head_rmsnorm) {
    const std::string kind = "with kind '" + name_of(kKinds, g.kind) + "'";
    if (g.position != GatePosition::sdpa)
      fail(f.where(), ": kind '", name_of(kKinds, g.kind),
           "' is a G1 ablation: position must be 'sdpa', found ", position);
    for (const char* field : options)
      if (std::string(field) != "kind") must_be_absent(field, kind + " (it has no scores)");
    return g;
  }
  if (g.kind != GateKind::input_independent)
    must_be_absent("logit", "with kind '" + name_of(kKinds, g.kind) +
                                "' (only 'input_independent' has logits)");
  if (g.kind == GateKind::ns_sigmoid) {
    must_be_absent("activation", "with kind 'ns_sigmoid' (its activation is 0.5 + 0.5*sigmoid)");
    g.activation = GateActivation::ns_sigmoid;
  }
  const GatePositionInfo& info = gate_position_info(g.position);
  if (info.heads == GatedHeads::hidden) {
    const std::string why =
        " is not allowed at position " + position + " (its tensor has no heads)";
    if (g.headwise) fail(f.where(), ": granularity 'headwise'", why);
    if (g.head_shared) fail(f.where(), ": sharing 'head_shared'", why);
  }
  if (info.stage_after_qk_norm == info.stage)
    must_be_absent("after_qk_norm", "at position " + position + " (only 'query' and 'key')");
  if (g.identity_init &&
      (info.stage != GateStage::attention_output && info.stage != GateStage::value_projection))
    fail(f.where(),
         ": init 'identity' needs position 'sdpa' or 'value' (their output reaches "
         "o_proj linearly, so doubling o_proj undoes a score of 0.5), found ",
         position);
  if (g.identity_init &&
      (g.activation != GateActivation::sigmoid || g.additive || g.kind == GateKind::ns_sigmoid))
    fail(f.where(), ": init 'identity' needs a multiplicative sigmoid gate (score 0.5 at zero)");
  return g;
}
}  // namespace

RopeScaling rope_scaling_from_json(const json& j, const std::string& source) {
  RopeScaling r;
  if (j.is_null()) return r;
  JsonFields f(j, source + ": rope_scaling");
  const char* type_field = j.contains("type") && !j.contains("rope_type") ? "type" : "rope_type";
  if (!f.has(type_field)) fail(f.where(), ": field 'rope_type' is required");
  f.read(type_field, r.type, kRopeTypes);
  if (r.type == RopeScaling::Type::none) {
    f.reject_unknown();
    return r;
  }
  f.read_in("factor", r.factor, 1, 1e6);
  if (!f.has("factor")) fail(f.where(), ": field 'factor' is required");
  if (r.type == RopeScaling::Type::yarn) {
    f.read("original_max_position_embeddings", r.original_max_position_embeddings);
    if (!f.has("original_max_position_embeddings"))
      fail(f.where(), ": field 'original_max_position_embeddings' is required for yarn");
    f.read("beta_fast", r.beta_fast);
    f.read("beta_slow", r.beta_slow);
    f.read("attention_factor", r.attention_factor);
  }
  f.reject_unknown();
  return r;
}

// The Gated DeltaNet fields, checked where some layer is linear attention.
static void read_delta_net_fields(JsonFields& f, Config& c) {
  const std::tuple<const char*, int*, int> fields[] = {
      {"linear_num_key_heads", &c.linear_num_key_heads, 4096},
      {"linear_num_value_heads", &c.linear_num_value_heads, 4096},
      {"linear_key_head_dim", &c.linear_key_head_dim, 4096},
      {"linear_value_head_dim", &c.linear_value_head_dim, 4096},
      {"linear_conv_kernel_dim", &c.linear_conv_kernel_dim, 16}};
  for (auto [name, value, most] : fields) f.read_in(name, *value, 1, most);
  f.read("linear_value_heads_tiled", c.linear_value_heads_tiled);
  if (c.has_linear_layers() && c.linear_num_value_heads % c.linear_num_key_heads != 0)
    fail(f.where(),
         ": field 'linear_num_value_heads': expected a multiple of linear_num_key_heads (",
         c.linear_num_key_heads, "), found ", c.linear_num_value_heads);
}

static void read_moe_fields(JsonFields& f, Config& c) {
  const std::pair<const char*, int*> fields[] = {
      {"num_experts", &c.num_experts},
      {"num_experts_per_tok", &c.num_experts_per_tok},
      {"moe_intermediate_size", &c.moe_intermediate_size},
      {"shared_expert_intermediate_size", &c.shared_expert_intermediate_size}};
  for (auto [name, value] : fields) f.read_in(name, *value, 0, 65536);
  f.read("norm_topk_prob", c.norm_topk_prob);
  f.read_in("router_aux_loss_coef", c.router_aux_loss_coef, 0, 1e6);
  if (!c.has_moe_layers()) return;
  for (auto [name, value] : fields)  // (a shared expert is optional)
    if (*value == 0 && std::string(name) != "shared_expert_intermediate_size")
      fail(f.where(), ": field '", name, "' is required (a positive integer) with 'moe' layers");
  if (c.num_experts_per_tok > c.num_experts)
    fail(f.where(), ": field 'num_experts_per_tok': expected at most num_experts (", c.num_experts,
         "), found ", c.num_experts_per_tok);
}

Config config_from_json(const json& j, const std::string& source) {
  JsonFields f(j, source);
  Config c;
  f.read("vocab_size", c.vocab_size);
  f.read("hidden_size", c.hidden_size);
  f.read("num_hidden_layers", c.num_hidden_layers);
  f.read("num_attention_heads", c.num_attention_heads);
  f.read("num_key_value_heads", c.num_key_value_heads);
  f.read("head_dim", c.head_dim);
  f.read("intermediate_size", c.intermediate_size);
  f.read("rope_theta", c.rope_theta);
  f.read_in("partial_rotary_factor", c.partial_rotary_factor, 0, 1);  // 0: no RoPE
  f.read("rms_norm_eps", c.rms_norm_eps);
  f.read("tie_word_embeddings", c.tie_word_embeddings);
  f.read("use_qk_norm", c.use_qk_norm);
  f.read("max_position_embeddings", c.max_position_embeddings);
  f.read("initializer_range", c.initializer_range);
  f.read("sandwich_norm", c.sandwich_norm);
  f.read("block_output_clip", c.block_output_clip);
  read_layer_kinds(f, "layer_types", kAttentionKinds, c.num_hidden_layers, c.layer_specs,
                   &LayerSpec::attention);
  read_layer_kinds(f, "mlp_types", kMlpKinds, c.num_hidden_layers, c.layer_specs, &LayerSpec::mlp);
  read_delta_net_fields(f, c);
  read_moe_fields(f, c);
  for (const char* info : {"model_type", "architectures", "torch_dtype", "transformers_version",
                           "bos_token_id", "eos_token_id", "pad_token_id", "use_cache"})
    f.ignore(info);
  f.ignore("gate");
  f.ignore("rope_scaling");
  f.reject_unknown();
  if (j.contains("gate")) c.gate = gate_from_json(j.at("gate"), source);
  if (j.contains("rope_scaling"))
    c.rope_scaling = rope_scaling_from_json(j.at("rope_scaling"), source);

  for (const char* required : {"vocab_size", "hidden_size", "num_hidden_layers",
                               "num_attention_heads", "intermediate_size"})
    if (!f.has(required)) fail(source, ": field '", required, "' is required");
  const int heads = c.num_attention_heads;
  if (!f.has("num_key_value_heads")) c.num_key_value_heads = heads;
  if (heads % c.num_key_value_heads != 0)
    fail(source, ": field 'num_key_value_heads': expected a divisor of num_attention_heads (",
         heads, "), found ", c.num_key_value_heads);
  if (!f.has("head_dim")) {
    if (c.hidden_size % heads != 0)
      fail(source, ": field 'head_dim' is missing and hidden_size (", c.hidden_size,
           ") is not divisible by num_attention_heads (", heads, ")");
    c.head_dim = c.hidden_size / heads;
  }
  const double rotary = c.head_dim * c.partial_rotary_factor;
  if (std::abs(rotary - std::round(rotary)) > 1e-9 || int(std::round(rotary)) % 2 != 0)
    fail(source,
         ": field 'partial_rotary_factor': head_dim * partial_rotary_factor must be an even "
         "integer, found ",
         c.head_dim, " * ", c.partial_rotary_factor, " = ", rotary);
  return c;
}

json config_to_json(const Config& c) {
  json j = {
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"intermediate_size", c.intermediate_size},
      {"rope_theta", c.rope_theta},
      {"partial_rotary_factor", c.partial_rotary_factor},
      {"rms_norm_eps", c.rms_norm_eps},
      {"tie_word_embeddings", c.tie_word_embeddings},
      {"use_qk_norm", c.use_qk_norm},
      {"max_position_embeddings", c.max_position_embeddings},
      {"initializer_range", c.initializer_range},
      {"sandwich_norm", c.sandwich_norm},
      {"block_output_clip", c.block_output_clip > 0 ? json(c.block_output_clip) : json(nullptr)}};
  const RopeScaling& r = c.rope_scaling;
  j["rope_scaling"] = nullptr;
  if (r.type != RopeScaling::Type::none) {
    j["rope_scaling"] = {{"rope_type", name_of(kRopeTypes, r.type)}, {"factor", r.factor}};
    if (r.type == RopeScaling::Type::yarn) {
      j["rope_scaling"]["original_max_position_embeddings"] = r.original_max_position_embeddings;
      j["rope_scaling"]["beta_fast"] = r.beta_fast;
      j["rope_scaling"]["beta_slow"] = r.beta_slow;
      if (r.attention_factor > 0) j["rope_scaling"]["attention_factor"] = r.attention_factor;
    }
  }
  json attention = json::array(), mlp = json::array();
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    attention.push_back(name_of(kAttentionKinds, c.layer(l).attention));
    mlp.push_back(name_of(kMlpKinds, c.layer(l).mlp));
  }
  j["layer_types"] = attention;
  j["mlp_types"] = mlp;
  if (c.has_linear_layers()) {
    j["linear_num_key_heads"] = c.linear_num_key_heads;
    j["linear_num_value_heads"] = c.linear_num_value_heads;
    j["linear_key_head_dim"] = c.linear_key_head_dim;
    j["linear_value_head_dim"] = c.linear_value_head_dim;
    j["linear_conv_kernel_dim"] = c.linear_conv_kernel_dim;
    if (c.linear_value_heads_tiled) j["linear_value_heads_tiled"] = true;
  }
  if (c.has_moe_layers()) {
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
    j["norm_topk_prob"] = c.norm_topk_prob;
    j["router_aux_loss_coef"] = c.router_aux_loss_coef;
  }
  const GateConfig& g = c.gate;
  json gate = {{"position", name_of(kPositions, g.position)}};
  if (g.enabled()) {
    gate["kind"] = name_of(kKinds, g.kind);
    if (g.has_scores()) {
      gate["granularity"] = name_of(kGranularities, g.headwise);
      gate["sharing"] = name_of(kSharings, g.head_shared);
      if (g.kind != GateKind::ns_sigmoid) gate["activation"] = name_of(kActivations, g.activation);
      gate["mode"] = name_of(kModes, g.additive);
      const GatePositionInfo& info = gate_position_info(g.position);
      if (info.stage_after_qk_norm != info.stage) gate["after_qk_norm"] = g.after_qk_norm;
      if (g.identity_init) gate["init"] = "identity";
      if (g.initial_logit) gate["logit"] = *g.initial_logit;
      if (g.frozen) gate["frozen"] = true;
    }
  }
  j["gate"] = gate;
  return j;
}

std::string gate_description(const GateConfig& g) {
  if (!g.enabled()) return "none";
  std::string s = name_of(kPositions, g.position) + " " + name_of(kKinds, g.kind);
  if (!g.has_scores()) return s;
  s += " " + name_of(kGranularities, g.headwise) + " " + name_of(kSharings, g.head_shared) + " " +
       (g.kind == GateKind::ns_sigmoid ? "ns_sigmoid" : name_of(kActivations, g.activation)) + " " +
       name_of(kModes, g.additive);
  if (g.after_qk_norm) s += " after_qk_norm";
  if (g.frozen) s += " frozen";
  return s;
}

bool Config::has_linear_layers() const {
  for (const LayerSpec& spec : layer_specs)
    if (spec.attention == AttentionKind::linear) return true;
  return false;
}

bool Config::has_moe_layers() const {
  for (const LayerSpec& spec : layer_specs)
    if (spec.mlp == MlpKind::moe) return true;
  return false;
}

int Config::rotary_dim() const { return int(std::lround(head_dim * partial_rotary_factor)); }

}  // namespace gattn
