// A model written as a llama.cpp GGUF file (`gattn quantize`) of architecture qwen3, or qwen35 for
// a G1-gated or hybrid model (q_proj and the gate rows interleaved per head in attn_q, the Gated
// DeltaNet's V heads tiled, A_log as A = -exp(A_log), the conv kernel squeezed): its matrices
// as f32, bf16, or quantized as llama.cpp's quantizer writes a file of that type
// (model/quantize_model.h: Q8_0, Q4_0, Q4_K_M, the blocks bit for bit), the norms as f32, the
// config as qwen3.* (qwen35.*) metadata and the tokenizer as tokenizer.ggml.*
// (infer/gguf_tokenizer.h). Tensors in layer order (token_embd, blk.0.*, ..., output_norm,
// output). Models neither can express (MoE, a gate other than G1, no QK-norm, RoPE scaling...) are
// refused with the reason.
#pragma once
#include <string>

#include "model/weights.h"
#include "tokenizer/tokenizer_spec.h"
#include "util/log.h"

namespace gattn {

// "f32", "bf16", "q8_0", "q4_0", "q4_k_m".
bool gguf_export_type_known(const std::string& type);

// model: f32 storage. Writes `path` atomically. tokenizer null: no tokenizer.ggml.* metadata (gattn
// reads such a file; llama.cpp needs a tokenizer).
void export_gguf(const Weights& model, const TokenizerSpec* tokenizer, const std::string& type,
                 const std::string& path, LogSink& log);

}  // namespace gattn
