#include "io/hf_config.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "util/error.h"
#include "util/json_fields.h"
#include "util/json_parse.h"

namespace gattn {

namespace {
using json = nlohmann::json;
namespace fs = std::filesystem;

const char* const kSupported =
    "qwen3 (plain or the authors' gated), qwen3_next, qwen3_5, qwen3_5_text, qwen3_5_moe, "
    "qwen3_5_moe_text";

// Keys that do not change the forward pass of a model gattn accepts (the MoE and
// linear-attention sizes are read where a layer has such a block).
const char* const kInformational[] = {"architectures",
                                      "model_type",
                                      "torch_dtype",
                                      "dtype",
                                      "transformers_version",
                                      "bos_token_id",
                                      "eos_token_id",
                                      "pad_token_id",
                                      "use_cache",
                                      "attention_dropout",
                                      "max_window_layers",
                                      "output_router_logits",
                                      "router_aux_loss_coef",
                                      "num_experts_per_tok",
                                      "moe_intermediate_size",
                                      "shared_expert_intermediate_size",
                                      "norm_topk_prob",
                                      "linear_conv_kernel_dim",
                                      "linear_key_head_dim",
                                      "linear_value_head_dim",
                                      "linear_num_key_heads",
                                      "linear_num_value_heads",
                                      "mtp_num_hidden_layers",
                                      "mtp_use_dedicated_embeddings",
                                      "mamba_ssm_dtype",
                                      "sliding_window"};

// Hugging Face's defaults where a config.json leaves a field out (the config classes' values).
struct ArchDefaults {
  int head_dim;
  double partial_rotary_factor;
};

ArchDefaults arch_defaults(HfLayout layout) {
  if (layout == HfLayout::qwen3 || layout == HfLayout::authors_gated) return {128, 1.0};
  return {256, 0.25};
}

// HF's rope object (rope_scaling, or rope_parameters less rope_theta and partial_rotary_factor)
// as gattn's rope_scaling: linear and yarn; default or null is none.
json rope_scaling_for_gattn(json rope, const std::string& where) {
  if (rope.is_null()) return rope;
  if (!rope.is_object()) fail(where, ": expected an object or null, found ", rope.dump());
  const char* type_key = rope.contains("rope_type") ? "rope_type" : "type";
  const std::string type = rope.value(type_key, "default");
  if (type == "default") return nullptr;
  if (type != "linear" && type != "yarn")
    fail(where, ": rope_type '", type,
         "' is not supported (gattn computes default, linear and yarn RoPE)");
  if (rope.contains("truncate")) {
    if (rope["truncate"] != true)
      fail(where, ": yarn with 'truncate' false is not supported (gattn truncates the ramp)");
    rope.erase("truncate");
  }
  return rope;
}

// rope_theta, partial_rotary_factor and rope_scaling into the gattn config object `g`, from the
// hub's top-level keys or the rope_parameters object transformers 5 writes.
void read_rope(JsonFields& f, const json& j, json& g, const std::string& source) {
  json rope = nullptr;
  if (f.has("rope_parameters"))
    for (const char* key : {"rope_theta", "partial_rotary_factor", "rope_scaling"})
      if (f.has(key))
        fail(source, ": fields 'rope_parameters' and '", key,
             "' are both given; which one holds is ambiguous (keep one)");
  if (const json* params = f.value("rope_parameters")) {
    rope = *params;
    if (!rope.is_object()) fail(source, ": field 'rope_parameters': expected an object");
    for (const char* key : {"rope_theta", "partial_rotary_factor"})
      if (rope.contains(key)) {
        g[key] = rope[key];
        rope.erase(key);
      }
    // M-RoPE sections: with text only, every section sees the same position, i.e. plain RoPE.
    rope.erase("mrope_section");
    rope.erase("mrope_interleaved");
  }
  for (const char* key : {"rope_theta", "partial_rotary_factor"})
    if (f.value(key)) g[key] = j[key];
  if (const json* scaling = f.value("rope_scaling")) rope = *scaling;
  g["rope_scaling"] = rope_scaling_for_gattn(rope, source + ": rope");
}

struct LayerTypes {
  std::vector<std::string> attention, mlp;  // gattn's layer_types and mlp_types
};

// Each layer's attention kind (HF's layer_types, or for qwen3_next and qwen3_5 transformers'
// default pattern): full attention, or for those two layouts Gated DeltaNet (linear_attention);
// and its MLP's: a mixture of experts where num_experts > 0 (default 512 for qwen3_next, 256 for
// qwen3_5_moe, whose every layer has experts), the layer is not in mlp_only_layers and
// (l + 1) % decoder_sparse_step == 0 (transformers' rule), else dense. gattn has no sliding window.
LayerTypes check_layers(JsonFields& f, HfLayout layout, bool every_layer_moe, int layers,
                        const std::string& source) {
  std::vector<std::string> types;
  f.read("layer_types", types);
  if (f.has("layer_types") && int(types.size()) != layers)
    fail(source, ": field 'layer_types' has ", types.size(), " entries for ", layers, " layers");
  const bool hybrid = layout == HfLayout::qwen3_next || layout == HfLayout::qwen3_5;
  if (!f.has("layer_types") && hybrid) {
    int interval = 4;  // HF's default pattern: three linear-attention layers, then a full one
    f.read("full_attention_interval", interval);
    for (int l = 0; l < layers; ++l)
      types.push_back((l + 1) % interval ? "linear_attention" : "full_attention");
  }
  f.ignore("full_attention_interval");
  bool sliding = false;
  f.read("use_sliding_window", sliding);
  if (sliding)
    fail(source, ": field 'use_sliding_window' is true: sliding-window attention is not supported");
  for (int l = 0; l < layers && l < int(types.size()); ++l)
    if (types[l] != "full_attention" && !(hybrid && types[l] == "linear_attention"))
      fail(source, ": layer ", l, " has type '", types[l], "' (field 'layer_types'): gattn runs ",
           hybrid ? "full_attention and linear_attention" : "only full_attention", " layers");
  std::string output_gate = "silu";
  f.read("output_gate_type", output_gate);
  if (output_gate != "silu" && output_gate != "swish")
    fail(source, ": field 'output_gate_type' is '", output_gate,
         "': gattn's Gated DeltaNet gates its output with silu(z) (silu or swish)");
  int experts = layout == HfLayout::qwen3_next ? 512 : every_layer_moe ? 256 : 0, sparse_step = 1;
  f.read_count("num_experts", experts);
  f.read("decoder_sparse_step", sparse_step);
  std::vector<int> dense_layers;
  if (const json* only = f.value("mlp_only_layers")) {
    if (!only->is_array()) f.bad("mlp_only_layers", "an array of layer indices");
    for (const json& l : *only) {
      if (!l.is_number_integer()) f.bad("mlp_only_layers", "an array of layer indices");
      dense_layers.push_back(l.get<int>());
    }
  }
  std::vector<std::string> mlp;
  for (int l = 0; l < layers; ++l)
    mlp.push_back(experts > 0 &&
                          std::find(dense_layers.begin(), dense_layers.end(), l) ==
                              dense_layers.end() &&
                          (l + 1) % sparse_step == 0
                      ? "moe"
                      : "dense");
  return {types, mlp};
}

// The MoE fields of a layout with experts, with transformers' defaults: Qwen3NextConfig's, or
// Qwen3_5MoeTextConfig's (whose router always renormalises the selected probabilities).
void read_moe(const json& j, bool qwen3_5_moe, json& g) {
  const std::pair<const char*, json> defaults[] = {{"num_experts", qwen3_5_moe ? 256 : 512},
                                                   {"num_experts_per_tok", qwen3_5_moe ? 8 : 10},
                                                   {"moe_intermediate_size", 512},
                                                   {"shared_expert_intermediate_size", 512},
                                                   {"norm_topk_prob", true},
                                                   {"router_aux_loss_coef", 0.001}};
  for (const auto& [key, value] : defaults) g[key] = j.contains(key) ? j[key] : value;
  if (qwen3_5_moe) g["norm_topk_prob"] = true;
}

// Fields whose only value gattn can compute.
void check_math(JsonFields& f, const std::string& source) {
  std::string act = "silu";
  f.read("hidden_act", act);
  if (act != "silu")
    fail(source, ": field 'hidden_act' is '", act, "': gattn's MLP is SwiGLU (silu)");
  for (const char* bias : {"attention_bias", "qkv_bias", "mlp_bias"}) {
    bool on = false;
    f.read(bias, on);
    if (on) fail(source, ": field '", bias, "' is true: gattn has no projection biases");
  }
  bool gate = true;
  f.read("attn_output_gate", gate);
  if (!gate)
    fail(source,
         ": field 'attn_output_gate' is false: transformers' Qwen3-Next/Qwen3.5 attention "
         "always gates, so this checkpoint's layout is unknown");
}

// The authors' gated Qwen3: the flags decide G1 elementwise or headwise.
json authors_gate(JsonFields& f, const std::string& source, HfLayout& layout) {
  bool headwise = false, elementwise = false;
  f.read("headwise_attn_output_gate", headwise);
  f.read("elementwise_attn_output_gate", elementwise);
  if (headwise && elementwise)
    fail(source,
         ": fields 'headwise_attn_output_gate' and 'elementwise_attn_output_gate' are both true");
  if (!headwise && !elementwise) return {{"position", "none"}};
  layout = HfLayout::authors_gated;
  json gate = {{"position", "sdpa"}};
  if (headwise) gate["granularity"] = "headwise";
  return gate;
}

HfLayout layout_of(const std::string& model_type, const std::string& source) {
  if (model_type == "qwen3") return HfLayout::qwen3;
  if (model_type == "qwen3_next") return HfLayout::qwen3_next;
  if (model_type == "qwen3_5" || model_type == "qwen3_5_text" || model_type == "qwen3_5_moe" ||
      model_type == "qwen3_5_moe_text")
    return HfLayout::qwen3_5;  // (the MoE's experts: HfModelInfo::fused_experts)
  fail(source, ": model_type '", model_type, "' is not supported; supported: ", kSupported);
}

void note_unread(const JsonFields& f, std::vector<std::string>& notes) {
  const std::vector<std::string> unread = f.unread();
  if (unread.empty()) return;
  std::string names;
  for (const std::string& n : unread) names += (names.empty() ? "" : ", ") + n;
  notes.push_back(f.where() + ": ignoring fields gattn does not use: " + names);
}
}  // namespace

const char* hf_layout_name(HfLayout layout) {
  switch (layout) {
    case HfLayout::qwen3:
      return "qwen3";
    case HfLayout::authors_gated:
      return "authors_gated";
    case HfLayout::qwen3_next:
      return "qwen3_next";
    case HfLayout::qwen3_5:
      return "qwen3_5";
  }
  return "?";
}

QGateBlocks q_gate_blocks(const Config& c, HfLayout layout) {
  const int64_t G = c.num_attention_heads / c.num_key_value_heads, d = c.head_dim;
  if (layout == HfLayout::authors_gated)
    return {
        .groups = c.num_key_value_heads, .q_rows = G * d, .gate_rows = c.gate.headwise ? G : G * d};
  return {.groups = c.num_attention_heads, .q_rows = d, .gate_rows = d};
}

int64_t qwen3_next_flat_row(const DeltaNetConfig& d, bool ba, int64_t r) {
  const int64_t ratio = d.value_heads / d.key_heads, dk = d.key_dim, rv = ratio * d.value_dim;
  if (ba) {  // per group: b (ratio rows), then a (ratio rows)
    const int64_t g = r / (2 * ratio), w = r % (2 * ratio);
    return w < ratio ? g * ratio + w : d.value_heads + g * ratio + w - ratio;
  }
  const int64_t g = r / (2 * dk + 2 * rv), w = r % (2 * dk + 2 * rv), K = d.key_width();
  if (w < dk) return g * dk + w;                            // q
  if (w < 2 * dk) return K + g * dk + w - dk;               // k
  if (w < 2 * dk + rv) return 2 * K + g * rv + w - 2 * dk;  // v: heads g*ratio..
  return d.conv_channels() + g * rv + w - 2 * dk - rv;      // z
}

bool is_hf_model_folder(const std::string& folder) {
  const fs::path dir(folder);
  if (!fs::is_regular_file(dir / "config.json")) return false;
  if (!fs::is_regular_file(dir / "model.safetensors") &&
      !fs::is_regular_file(dir / "model.safetensors.index.json"))
    return false;
  try {
    const json j = parse_json_file((dir / "config.json").string());
    return j.is_object() && j.contains("model_type");
  } catch (const std::exception&) {
    return false;
  }
}

HfModelInfo hf_model_info_from_json(const json& outer, const std::string& source) {
  if (!outer.is_object() || !outer.contains("model_type") || !outer["model_type"].is_string())
    fail(source, ": field 'model_type' (a string) is required in a Hugging Face config.json");
  HfModelInfo info;
  const std::string model_type = outer["model_type"].get<std::string>();
  info.layout = layout_of(model_type, source);
  info.zero_centred_norms = info.layout == HfLayout::qwen3_next || info.layout == HfLayout::qwen3_5;

  // Qwen3.5's multimodal checkpoints nest the language model: text_config, model.language_model.*.
  const bool nested = model_type == "qwen3_5" || model_type == "qwen3_5_moe";
  info.fused_experts = model_type.starts_with("qwen3_5_moe");
  if (nested && !(outer.contains("text_config") && outer["text_config"].is_object()))
    fail(source, ": model_type '", model_type, "' needs a 'text_config' object");
  const json& j = nested ? outer["text_config"] : outer;
  const std::string where = nested ? source + ": text_config" : source;
  if (nested) info.tensor_prefix = "model.language_model.";

  JsonFields f(j, where);
  for (const char* key : kInformational) f.ignore(key);
  const ArchDefaults defaults = arch_defaults(info.layout);
  json g = {{"head_dim", defaults.head_dim},
            {"partial_rotary_factor", defaults.partial_rotary_factor},
            {"max_position_embeddings", 32768},
            {"use_qk_norm", true}};
  for (const char* key : {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                          "num_key_value_heads", "head_dim", "intermediate_size", "rms_norm_eps",
                          "tie_word_embeddings", "max_position_embeddings", "initializer_range"})
    if (f.value(key)) g[key] = j[key];
  if (nested && outer.contains("tie_word_embeddings"))
    g["tie_word_embeddings"] = outer["tie_word_embeddings"];
  read_rope(f, j, g, where);
  check_math(f, where);
  g["gate"] = info.layout == HfLayout::qwen3 ? authors_gate(f, where, info.layout)
                                             : json{{"position", "sdpa"}};
  if (!g.contains("num_hidden_layers") || !g["num_hidden_layers"].is_number_integer() ||
      g["num_hidden_layers"].get<int64_t>() < 1 ||
      g["num_hidden_layers"].get<int64_t>() > (int64_t(1) << 30))
    fail(where, ": field 'num_hidden_layers': expected an integer in [1, 2^30], found ",
         g.contains("num_hidden_layers") ? json_summary(g["num_hidden_layers"]) : "nothing");
  const LayerTypes types =
      check_layers(f, info.layout, info.fused_experts, g["num_hidden_layers"].get<int>(), where);
  if (std::find(types.mlp.begin(), types.mlp.end(), "moe") != types.mlp.end()) {
    g["mlp_types"] = types.mlp;
    read_moe(j, info.fused_experts, g);
  }
  if (std::find(types.attention.begin(), types.attention.end(), "linear_attention") !=
      types.attention.end()) {
    g["layer_types"] = types.attention;
    for (const char* key : {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                            "linear_value_head_dim", "linear_conv_kernel_dim"})
      if (j.contains(key)) g[key] = j[key];
  }
  note_unread(f, info.notes);
  info.config = config_from_json(g, where);
  return info;
}

HfModelInfo read_hf_model_info(const std::string& folder) {
  const std::string path = (fs::path(folder) / "config.json").string();
  HfModelInfo info = hf_model_info_from_json(parse_json_file(path), path);
  info.folder = folder;
  const fs::path tokenizer = fs::path(folder) / "tokenizer.json";
  if (fs::is_regular_file(tokenizer)) info.tokenizer_json = tokenizer.string();
  return info;
}

}  // namespace gattn
