// A model written as a llama.cpp GGUF file of architecture qwen3 (`gattn quantize`): its matrices
// as f32, bf16, or quantized as llama.cpp's quantizer writes a file of that type
// (model/quantize_model.h: Q8_0, Q4_0, Q4_K_M, the blocks bit for bit), the norms as f32, the
// config as qwen3.* metadata and the tokenizer as tokenizer.ggml.* (infer/gguf_tokenizer.h).
// Tensors in layer order (token_embd, blk.0.*, ..., output_norm, output). Models Qwen3 cannot
// express (a gate, a hybrid or MoE, no QK-norm, RoPE scaling...) are refused with the reason.
#pragma once
#include <string>

#include "model/weights.h"
#include "tokenizer/tokenizer_spec.h"
#include "util/log.h"

namespace gattn {

// "f32", "bf16", "q8_0", "q4_0", "q4_k_m".
bool gguf_export_type_known(const std::string& type);

// model: f32 storage. Writes `path` atomically.
void export_gguf(const Weights& model, const TokenizerSpec& tokenizer, const std::string& type,
                 const std::string& path, LogSink& log);

}  // namespace gattn
