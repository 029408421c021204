// A llama.cpp GGUF file as a gattn model: the config from the file's metadata and its tensors in
// gattn's layout (Hugging Face names). Architectures `qwen3` (Qwen3's dense layout, no gate) and
// `qwen35` (Qwen3.5: G1-gated full attention, Gated DeltaNet layers as the file's
// attention.recurrent_layers (or full_attention_interval) say; its V heads kept in the file's
// tiled order, Config::linear_value_heads_tiled; its norms as stored, 1 + w; A_log = log(-A);
// q_proj's per-head gate rows split into sdpa_gate). The MoE qwen35moe is refused.
// Tensor types F32, F16, BF16, Q8_0, Q4_0, Q4_K and Q6_K; other types and architectures are
// refused by name. Storage f32: every tensor dequantized into f32 (as llama.cpp's dequantize_row_*:
// the dequantize-then-fp32 reference, and a model to fine-tune). Storage bf16: every matrix as the
// file stores it (ops/weight_view.h), the block formats and bf16 read in place from the mapped
// file (their products: ops/quantized_linear.h), f32 and f16 matrices as f32; norms as floats.
#pragma once
#include <memory>
#include <string>

#include "io/gguf.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/log.h"

namespace gattn {

// True for a regular file that starts with the GGUF magic.
bool is_gguf_file(const std::string& path);

// The model's config from a qwen3 file's metadata; an Error naming the file and key otherwise.
Config gguf_config(const GgufReader& gguf);

// The Hugging Face (gattn layout) name of a GGUF tensor name of architecture `arch` (qwen3 or
// qwen35), "" for a name it has none.
std::string hf_name_of_gguf_tensor(const std::string& gguf_name, const std::string& arch = "qwen3");
// The reverse: "blk.3.attn_v.weight" of "model.layers.3.self_attn.v_proj.weight" ("" if none).
std::string gguf_name_of_hf_tensor(const std::string& hf_name, const std::string& arch = "qwen3");

std::unique_ptr<Weights> load_gguf_model(const std::string& path, LogSink& log = discard_log(),
                                         WeightDtype storage = WeightDtype::f32);

}  // namespace gattn
