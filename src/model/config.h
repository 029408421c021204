// The model's shape and gate variant, with Hugging Face field names (docs/MODEL.md), validated.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ops/gate.h"
#include "ops/rope.h"

namespace gattn {

enum class GatePosition { none, sdpa, value, key, query, dense };
enum class GateKind { input_dependent, input_independent, ns_sigmoid, silu_only, head_rmsnorm };

struct GateConfig {
  GatePosition position = GatePosition::none;
  GateKind kind = GateKind::input_dependent;
  bool headwise = false;
  bool head_shared = false;
  GateActivation activation = GateActivation::sigmoid;  // ns_sigmoid kind: ns_sigmoid
  bool additive = false;
  bool after_qk_norm = false;
  // "init": "identity": the gate starts as the identity of the model without it: scores 0.5
  // (zero weights or logits) and o_proj doubled. Retrofits a gate without a loss spike.
  bool identity_init = false;
  // "logit": x (kind input_independent): every logit starts at x instead of 0, e.g. the logit of
  // a trained gate's mean score. "frozen": true: the gate's parameters get no update in training
  // (an input-independent gate with a fixed logit and no gradient).
  std::optional<double> initial_logit;
  bool frozen = false;

  bool enabled() const { return position != GatePosition::none; }
  // A gate whose scores come from X W^T, computed in the same GEMM as q, k and v.
  bool has_weight() const {
    return enabled() && (kind == GateKind::input_dependent || kind == GateKind::ns_sigmoid);
  }
  bool has_logit() const { return kind == GateKind::input_independent && enabled(); }
  // Multiplies or adds scores (every kind but the two parameter-free ablations).
  bool has_scores() const { return has_weight() || has_logit(); }
};

// What a layer is made of. Hugging Face's `layer_types` names the attention kind per layer
// ("full_attention", or "linear_attention": Gated DeltaNet, as in Qwen3.5 and Qwen3-Next);
// gattn's `mlp_types` the MLP kind ("dense", or "moe": a mixture of experts as in Qwen3-Next and
// Qwen3.5-MoE).
enum class AttentionKind { full, linear };
enum class MlpKind { dense, moe };

struct LayerSpec {
  AttentionKind attention = AttentionKind::full;
  MlpKind mlp = MlpKind::dense;
};

struct Config {
  int vocab_size = 0;
  int hidden_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int head_dim = 0;
  int intermediate_size = 0;
  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  RopeScaling rope_scaling;  // HF's `rope_scaling` (null: none)
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  bool use_qk_norm = true;
  int max_position_embeddings = 4096;
  double initializer_range = 0.02;
  bool sandwich_norm = false;
  double block_output_clip = 0;        // 0: no clamp
  GateConfig gate;                     // of the full-attention layers
  std::vector<LayerSpec> layer_specs;  // empty: every layer the default spec
  // Gated DeltaNet layers (Hugging Face's Qwen3.5 names and defaults): read where a layer is
  // "linear_attention".
  int linear_num_key_heads = 16;
  int linear_num_value_heads = 32;  // a multiple of linear_num_key_heads
  int linear_key_head_dim = 128;
  int linear_value_head_dim = 128;
  int linear_conv_kernel_dim = 4;
  // Value heads in llama.cpp's tiled order (value head h reads key head h % key heads, as a qwen35
  // GGUF file stores them) rather than Hugging Face's grouped one (h / (value / key heads)).
  bool linear_value_heads_tiled = false;
  // Mixture-of-experts layers (Hugging Face's Qwen3-Next names): read where a layer is "moe".
  // shared_expert_intermediate_size 0: no shared expert and no shared-expert gate (the paper's
  // 15A2B); norm_topk_prob: the k selected probabilities renormalised to sum to 1.
  int num_experts = 0;
  int num_experts_per_tok = 0;
  int moe_intermediate_size = 0;
  int shared_expert_intermediate_size = 0;
  bool norm_topk_prob = true;
  // The load-balancing loss's coefficient in training (model/router_balance.h; transformers'
  // default); a run's config may override it.
  double router_aux_loss_coef = 0.001;

  LayerSpec layer(int l) const {
    return l < int(layer_specs.size()) ? layer_specs[l] : LayerSpec{};
  }
  int rotary_dim() const;
  bool has_linear_layers() const;
  bool has_moe_layers() const;
  int q_dim() const { return num_attention_heads * head_dim; }
  int kv_dim() const { return num_key_value_heads * head_dim; }
};

// Parses and validates; every error names `source` (a file name or "config") and the field.
Config config_from_json(const nlohmann::json& j, const std::string& source);
nlohmann::json config_to_json(const Config& c);
// HF's `rope_scaling` object (or null): rope_type (or type) linear | ntk | yarn, factor >= 1, and
// for yarn original_max_position_embeddings and optionally beta_fast, beta_slow,
// attention_factor.
RopeScaling rope_scaling_from_json(const nlohmann::json& j, const std::string& source);
// A one-line name of the gate variant, e.g. "sdpa elementwise head_specific sigmoid
// multiplicative".
std::string gate_description(const GateConfig& g);

}  // namespace gattn
