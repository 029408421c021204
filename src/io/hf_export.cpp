#include "io/hf_export.h"

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "io/file.h"
#include "io/hf_config.h"
#include "model/layout.h"
#include "model/value_head_order.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {

namespace {
using json = nlohmann::json;

const char* format_name(HfExportFormat f) {
  switch (f) {
    case HfExportFormat::qwen3:
      return "qwen3";
    case HfExportFormat::authors:
      return "authors";
    case HfExportFormat::qwen3_next:
      return "qwen3_next";
    case HfExportFormat::qwen3_5:
      return "qwen3_5";
  }
  return "?";
}

// One tensor of the checkpoint: its name, shape and how to compute its float values.
struct OutTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::function<void(float*)> fill;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// q_proj with the gate rows put back in the format's blocks (the inverse of the loader's split).
void merge_q_gate(float* out, const float* q, const float* gate, QGateBlocks b, int64_t cols) {
  for (int64_t g = 0; g < b.groups; ++g) {
    std::memcpy(out, q + g * b.q_rows * cols, size_t(b.q_rows * cols) * sizeof(float));
    out += b.q_rows * cols;
    std::memcpy(out, gate + g * b.gate_rows * cols, size_t(b.gate_rows * cols) * sizeof(float));
    out += b.gate_rows * cols;
  }
}

// The layer's DeltaNet geometry, from a tensor name "model.layers.L.linear_attn...".
const DeltaNetConfig& delta_net_of(const Weights& weights, const std::string& name) {
  const int l = std::stoi(name.substr(std::string("model.layers.").size()));
  return weights.layer(l).attention.delta_net;
}

// Qwen3-Next's grouped in_proj_qkvz (in_proj_ba) from gattn's flat in_proj_qkv | in_proj_z
// (in_proj_b | in_proj_a), which the layout keeps consecutive: `first` is in_proj_qkv (in_proj_b).
OutTensor grouped_projection(const Weights& weights, const TensorSpec& first, bool ba) {
  const ParamLayout& layout = weights.layout();
  const std::string stem = first.name.substr(0, first.name.size() - (ba ? 8 : 10));  // ..in_proj_
  const TensorSpec* second = layout.find(stem + (ba ? "a.weight" : "z.weight"));
  if (!second || second->offset != first.offset + first.numel)
    fail("export: ", first.name, " and its partner are not consecutive in the layout");
  const DeltaNetConfig d = delta_net_of(weights, first.name);
  const int64_t rows = first.shape[0] + second->shape[0], cols = first.shape[1];
  const float* base = weights.at(first.offset);
  return {.name = stem + (ba ? "ba.weight" : "qkvz.weight"),
          .shape = {rows, cols},
          .fill = [=](float* dst) {
            for (int64_t r = 0; r < rows; ++r)
              std::memcpy(dst + r * cols, base + qwen3_next_flat_row(d, ba, r) * cols,
                          size_t(cols) * sizeof(float));
          }};
}

// Qwen3.5-MoE's experts of one layer as its checkpoints store them: gate_up_proj [E, 2 Ie, C]
// (each expert's gate rows, then its up rows) or down_proj [E, C, Ie], from the layout's experts
// (expert e's gate, up and down consecutive, `stride` floats apart).
OutTensor fused_experts(const Weights& weights, const std::string& prefix, const MlpParams& p,
                        const MoeConfig& m, int64_t C, bool gate_up) {
  const int64_t E = m.experts, I = m.expert_intermediate, per_expert = (gate_up ? 2 : 1) * I * C;
  const float* first = weights.at(gate_up ? p.experts : p.expert_down(0));
  const int64_t stride = p.expert_stride;
  return {.name = prefix + (gate_up ? "gate_up_proj" : "down_proj"),
          .shape = gate_up ? std::vector<int64_t>{E, 2 * I, C} : std::vector<int64_t>{E, C, I},
          .fill = [=](float* dst) {
            for (int64_t e = 0; e < E; ++e)
              std::memcpy(dst + e * per_expert, first + e * stride,
                          size_t(per_expert) * sizeof(float));
          }};
}

// Norm weights the format stores zero-centred (w - 1): every RMSNorm but the Gated DeltaNet's
// output norm, in Qwen3-Next and Qwen3.5.
bool zero_centred(HfExportFormat format, const std::string& name) {
  return (format == HfExportFormat::qwen3_next || format == HfExportFormat::qwen3_5) &&
         name.ends_with("norm.weight") && !name.ends_with("linear_attn.norm.weight");
}

std::vector<OutTensor> out_tensors(const Weights& weights, HfExportFormat format) {
  const Config& c = weights.config();
  const ParamLayout& layout = weights.layout();
  const bool gated = format != HfExportFormat::qwen3;
  const HfLayout hf =
      format == HfExportFormat::authors ? HfLayout::authors_gated : HfLayout::qwen3_next;
  std::vector<OutTensor> out;
  for (const TensorSpec& t : layout.tensors()) {
    const float* src = weights.at(t.offset);
    const std::string& name = t.name;
    if (name.find("sdpa_gate.weight") != std::string::npos) continue;  // inside q_proj
    if (format == HfExportFormat::qwen3_next) {
      if (name.ends_with("linear_attn.in_proj_z.weight") ||
          name.ends_with("linear_attn.in_proj_a.weight"))
        continue;  // inside in_proj_qkvz, in_proj_ba
      if (name.ends_with("linear_attn.in_proj_qkv.weight") ||
          name.ends_with("linear_attn.in_proj_b.weight")) {
        out.push_back(grouped_projection(weights, t, name.ends_with("in_proj_b.weight")));
        continue;
      }
    }
    if (format == HfExportFormat::qwen3_5 && name.find(".mlp.experts.") != std::string::npos) {
      // Fused: expert 0's gate_proj stands for the layer's gate_up_proj, its down_proj for the
      // layer's down_proj; every other expert tensor is inside them.
      const std::string prefix = name.substr(0, name.find(".mlp.experts.") + 13);
      const bool gate = name == prefix + "0.gate_proj.weight",
                 down = name == prefix + "0.down_proj.weight";
      if (gate || down) {
        const int l = std::stoi(name.substr(std::string("model.layers.").size()));
        out.push_back(fused_experts(weights, prefix, layout.layers[l].mlp, weights.layer(l).mlp.moe,
                                    c.hidden_size, gate));
      }
      continue;
    }
    OutTensor o{.name = name, .shape = t.shape, .fill = nullptr};
    const int64_t n = t.numel;
    if (gated && name.ends_with("self_attn.q_proj.weight")) {
      const std::string gate_name = name.substr(0, name.size() - 13) + "sdpa_gate.weight";
      const float* gate = weights.at(layout.find(gate_name)->offset);
      const QGateBlocks blocks = q_gate_blocks(c, hf);
      o.shape[0] += layout.find(gate_name)->shape[0];
      o.fill = [=](float* dst) { merge_q_gate(dst, src, gate, blocks, t.shape[1]); };
    } else if (zero_centred(format, name)) {
      // Transformers multiplies by 1 + w; exact for w in [0.5, 2] (Sterbenz).
      o.fill = [=](float* dst) {
        for (int64_t i = 0; i < n; ++i) dst[i] = src[i] - 1.0f;
      };
    } else {
      o.fill = [=](float* dst) { std::memcpy(dst, src, size_t(n) * sizeof(float)); };
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<std::string> layer_types(const Config& c) {
  std::vector<std::string> types;
  for (int l = 0; l < c.num_hidden_layers; ++l)
    types.push_back(c.layer(l).attention == AttentionKind::linear ? "linear_attention"
                                                                  : "full_attention");
  return types;
}

const char* architecture(HfExportFormat f, bool moe) {
  switch (f) {
    case HfExportFormat::qwen3_next:
      return "Qwen3NextForCausalLM";
    case HfExportFormat::qwen3_5:
      return moe ? "Qwen3_5MoeForCausalLM" : "Qwen3_5ForCausalLM";
    default:
      return "Qwen3ForCausalLM";
  }
}

json hf_config_json(const Config& c, HfExportFormat format, Dtype dtype) {
  const bool next = format == HfExportFormat::qwen3_next, q35 = format == HfExportFormat::qwen3_5;
  const bool moe = c.has_moe_layers();
  json j = {{"architectures", {architecture(format, moe)}},
            {"model_type", next  ? "qwen3_next"
                           : q35 ? (moe ? "qwen3_5_moe_text" : "qwen3_5_text")
                                 : "qwen3"},
            {"vocab_size", c.vocab_size},
            {"hidden_size", c.hidden_size},
            {"intermediate_size", c.intermediate_size},
            {"num_hidden_layers", c.num_hidden_layers},
            {"num_attention_heads", c.num_attention_heads},
            {"num_key_value_heads", c.num_key_value_heads},
            {"head_dim", c.head_dim},
            {"hidden_act", "silu"},
            {"attention_bias", false},
            {"rms_norm_eps", c.rms_norm_eps},
            {"tie_word_embeddings", c.tie_word_embeddings},
            {"max_position_embeddings", c.max_position_embeddings},
            {"initializer_range", c.initializer_range},
            {"layer_types", layer_types(c)},
            {"torch_dtype", dtype == Dtype::BF16 ? "bfloat16" : "float32"}};
  const json scaling = config_to_json(c)["rope_scaling"];
  if (q35) {  // transformers 5's form: theta and partial rotary inside rope_parameters
    json rope = scaling.is_object() ? scaling : json{{"rope_type", "default"}};
    rope["rope_theta"] = c.rope_theta;
    rope["partial_rotary_factor"] = c.partial_rotary_factor;
    j["rope_parameters"] = rope;
  } else {
    j["rope_theta"] = c.rope_theta;
    j["rope_scaling"] = scaling;
  }
  if (next) {
    j["partial_rotary_factor"] = c.partial_rotary_factor;
    j["num_experts"] = c.has_moe_layers() ? c.num_experts : 0;
    j["mlp_only_layers"] = json::array();
    j["decoder_sparse_step"] = 1;
    if (c.has_moe_layers()) {  // the dense layers by index, every other one with experts
      for (int l = 0; l < c.num_hidden_layers; ++l)
        if (c.layer(l).mlp == MlpKind::dense) j["mlp_only_layers"].push_back(l);
      j["num_experts_per_tok"] = c.num_experts_per_tok;
      j["moe_intermediate_size"] = c.moe_intermediate_size;
      j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
      j["norm_topk_prob"] = c.norm_topk_prob;
      j["router_aux_loss_coef"] = c.router_aux_loss_coef;
    }
  } else if (!q35) {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
  }
  if (q35 && moe) {  // every layer has experts; the router always renormalises
    j["num_experts"] = c.num_experts;
    j["num_experts_per_tok"] = c.num_experts_per_tok;
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["shared_expert_intermediate_size"] = c.shared_expert_intermediate_size;
    j["router_aux_loss_coef"] = c.router_aux_loss_coef;
  }
  if (next || q35)
    for (const auto& [key, value] : {std::pair{"linear_num_key_heads", c.linear_num_key_heads},
                                     {"linear_num_value_heads", c.linear_num_value_heads},
                                     {"linear_key_head_dim", c.linear_key_head_dim},
                                     {"linear_value_head_dim", c.linear_value_head_dim},
                                     {"linear_conv_kernel_dim", c.linear_conv_kernel_dim}})
      j[key] = value;
  if (format == HfExportFormat::authors) {
    j["elementwise_attn_output_gate"] = !c.gate.headwise;
    j["headwise_attn_output_gate"] = c.gate.headwise;
  }
  return j;
}

std::vector<uint8_t> tensor_bytes(const OutTensor& t, Dtype dtype) {
  std::vector<float> values(size_t(t.numel()));
  t.fill(values.data());
  std::vector<uint8_t> bytes(values.size() * dtype_bytes(dtype));
  if (dtype == Dtype::F32) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return bytes;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    const float r = round_to_bf16(values[i]);
    uint32_t u;
    std::memcpy(&u, &r, 4);
    const uint16_t h = uint16_t(u >> 16);
    std::memcpy(bytes.data() + 2 * i, &h, 2);
  }
  return bytes;
}

// Tensors in order, cut into shards of at most max_bytes (a larger tensor gets a shard alone).
std::vector<std::vector<const OutTensor*>> shard(const std::vector<OutTensor>& tensors, Dtype dtype,
                                                 int64_t max_bytes) {
  std::vector<std::vector<const OutTensor*>> shards(1);
  int64_t bytes = 0;
  for (const OutTensor& t : tensors) {
    const int64_t size = t.numel() * int64_t(dtype_bytes(dtype));
    if (!shards.back().empty() && bytes + size > max_bytes) {
      shards.emplace_back();
      bytes = 0;
    }
    shards.back().push_back(&t);
    bytes += size;
  }
  return shards;
}

void write_shards(const std::vector<OutTensor>& tensors, const std::string& out, Dtype dtype,
                  int64_t max_bytes) {
  const auto shards = shard(tensors, dtype, max_bytes);
  json weight_map = json::object();
  int64_t total = 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    const std::string file = shards.size() == 1 ? "model.safetensors" : name;
    std::vector<std::vector<uint8_t>> data;  // one shard's bytes at a time
    std::vector<TensorToWrite> writes;
    for (const OutTensor* t : shards[s]) {
      data.push_back(tensor_bytes(*t, dtype));
      writes.push_back({t->name, dtype, t->shape, data.back().data()});
      weight_map[t->name] = file;
      total += int64_t(data.back().size());
    }
    write_safetensors(out + "/" + file, writes, {{"format", "pt"}});
  }
  if (shards.size() > 1) {
    const json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_text_file_atomically(out + "/model.safetensors.index.json", index.dump(2) + "\n");
  }
}
}  // namespace

std::string hf_export_refusal(const Config& c, HfExportFormat format) {
  const bool hybrid_format =
      format == HfExportFormat::qwen3_next || format == HfExportFormat::qwen3_5;
  if (c.has_linear_layers() && !hybrid_format)
    return "it has Gated DeltaNet (linear_attention) layers, which only --format qwen3_5 and "
           "qwen3_next have";
  if (c.has_moe_layers() && format != HfExportFormat::qwen3_next &&
      format != HfExportFormat::qwen3_5)
    return "it has mixture-of-experts MLPs, which only --format qwen3_next and qwen3_5 have";
  if (c.has_moe_layers() && format == HfExportFormat::qwen3_5) {
    for (int l = 0; l < c.num_hidden_layers; ++l)
      if (c.layer(l).mlp != MlpKind::moe)
        return "layer " + std::to_string(l) +
               " has a dense MLP, and every Qwen3.5-MoE layer has experts (--format qwen3_next "
               "has mlp_only_layers)";
    if (!c.norm_topk_prob)
      return "its router does not renormalise the chosen probabilities (norm_topk_prob false), "
             "which Qwen3.5-MoE's always does (--format qwen3_next has the flag)";
  }
  if (!c.use_qk_norm) return "it has no QK-norm (every format has per-head q_norm and k_norm)";
  if (c.sandwich_norm) return "it has sandwich norms (the format has no such tensors)";
  if (c.block_output_clip > 0) return "it clips block outputs (the format does not)";
  if (c.rotary_dim() == 0) return "it has no RoPE (partial_rotary_factor 0)";
  if (c.rope_scaling.type == RopeScaling::Type::ntk)
    return "its rope_scaling 'ntk' is not a Hugging Face RoPE type";
  if (!hybrid_format && c.partial_rotary_factor != 1.0)
    return "it uses partial rotary, which Qwen3 does not (--format qwen3_next or qwen3_5 has it)";
  const GateConfig& g = c.gate;
  if (format == HfExportFormat::qwen3)
    return g.enabled() ? "it has a gate (" + gate_description(g) +
                             "); Qwen3 has none (--format authors or qwen3_next)"
                       : "";
  const bool g1 = g.position == GatePosition::sdpa && g.kind == GateKind::input_dependent &&
                  g.activation == GateActivation::sigmoid && !g.additive && !g.head_shared;
  if (!g1)
    return "its gate (" + gate_description(g) +
           ") is not G1 as the format has it: sdpa, input-dependent, head-specific, sigmoid, "
           "multiplicative";
  if (hybrid_format && g.headwise)
    return std::string("its gate is headwise; ") +
           (format == HfExportFormat::qwen3_5 ? "Qwen3.5's" : "Qwen3-Next's") +
           " is elementwise (--format authors has headwise)";
  return "";
}

void export_hf(const Weights& weights, const std::string& out, const HfExportOptions& options) {
  const Config& config = weights.config();
  const std::string why = hf_export_refusal(config, options.format);
  if (!why.empty()) fail("export to ", format_name(options.format), ": refused because ", why);
  if (options.dtype != Dtype::BF16 && options.dtype != Dtype::F32)
    fail("export: dtype ", dtype_name(options.dtype), " is not supported (BF16 or F32)");
  StagedFolder staged(out, options.existing);
  // A model read from a qwen35 GGUF file keeps llama.cpp's tiled V heads; the formats group them.
  const std::unique_ptr<Weights> grouped = reorder_value_heads(weights, false);
  write_shards(out_tensors(grouped ? *grouped : weights, options.format), staged.path(),
               options.dtype, options.max_shard_bytes);
  write_text_file_atomically(staged.file("config.json"),
                             hf_config_json(config, options.format, options.dtype).dump(2) + "\n");
  write_text_file_atomically(staged.file("generation_config.json"),
                             json{{"_from_model_config", true}}.dump(2) + "\n");
  if (!options.tokenizer_json.empty())
    write_text_file_atomically(staged.file("tokenizer.json"),
                               read_text_file(options.tokenizer_json));
  staged.publish();
}

}  // namespace gattn
