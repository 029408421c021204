// A Hugging Face model folder's config.json read as a gattn Config plus the tensor layout the
// checkpoint uses (docs/INTEROP.md): plain Qwen3, the paper authors' gated Qwen3 (gate rows grouped
// by KV group inside q_proj), and the full-attention layers of Qwen3-Next and Qwen3.5 (gate rows
// interleaved per head, zero-centred RMSNorm weights). Anything gattn cannot compute exactly is
// refused with an error naming the file and the field.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "model/config.h"
#include "model/layer_config.h"

namespace gattn {

enum class HfLayout { qwen3, authors_gated, qwen3_next, qwen3_5 };

const char* hf_layout_name(HfLayout layout);

struct HfModelInfo {
  Config config;
  HfLayout layout = HfLayout::qwen3;
  std::string folder;
  std::string tokenizer_json;  // folder/tokenizer.json, "" when absent
  // Where the language model's tensors live: "model." (Qwen3ForCausalLM) or
  // "model.language_model." (Qwen3.5's multimodal checkpoints); the gattn name is "model." + rest.
  std::string tensor_prefix = "model.";
  bool zero_centred_norms = false;  // RMSNorm weights stored as w, applied as (1 + w)
  // Qwen3.5-MoE: every layer a mixture of experts whose experts are two 3-D tensors,
  // mlp.experts.gate_up_proj [E, 2 Ie, C] and mlp.experts.down_proj [E, C, Ie].
  bool fused_experts = false;
  std::vector<std::string> notes;  // what the reader ignored (fields gattn does not use)
};

// How a gated layout's q_proj interleaves query and gate rows: `groups` blocks, each of q_rows
// query rows then gate_rows gate rows. Authors: one block per KV group (G*d query rows, G*d or G
// gate rows); Qwen3-Next/Qwen3.5: one block per head (d and d).
struct QGateBlocks {
  int64_t groups, q_rows, gate_rows;
};
QGateBlocks q_gate_blocks(const Config& config, HfLayout layout);

// Qwen3-Next groups a Gated DeltaNet layer's projections per key head: in_proj_qkvz holds, per
// group, q (d_k rows), k (d_k), v and z (r * d_v each, r = value heads / key heads); in_proj_ba
// holds b (r rows) then a (r). Row r of the grouped tensor as a row of the flat q | k | v | z
// (ba: b | a) rows, the order of Qwen3.5's in_proj_qkv, in_proj_z (in_proj_b, in_proj_a).
int64_t qwen3_next_flat_row(const DeltaNetConfig& d, bool ba, int64_t r);

// True when the folder has a config.json with a model_type and model.safetensors or
// model.safetensors.index.json (a gattn checkpoint has no model_type).
bool is_hf_model_folder(const std::string& folder);

HfModelInfo read_hf_model_info(const std::string& folder);
// The same from a parsed config.json; `source` names it in errors.
HfModelInfo hf_model_info_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace gattn
