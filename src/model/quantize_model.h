// A model's matrices quantized in memory to llama.cpp's block formats, each typed as llama.cpp's
// quantizer types it for a file of that kind (llama-quant.cpp's llama_tensor_get_type, no
// importance matrix, no overrides) and its blocks written bit for bit as llama.cpp writes them
// (ops/quantize_blocks.h):
//   q8_0:   every matrix Q8_0.
//   q4_0:   Q4_0; the output matrix (the embedding when tied) Q6_K.
//   q4_k_m: Q4_K; Q6_K for the output matrix (the embedding when tied), and for v_proj (with a
//           Gated DeltaNet's in_proj_qkv, which llama.cpp counts among them) and down_proj where
//           use_more_bits picks them (the first and last eighth, and every third between).
// A K-quant matrix whose rows are not whole 256-value blocks takes llama.cpp's fallback where
// gattn reads it (Q6_K -> Q8_0, the output when not 256-divisible -> Q8_0) and is refused where
// llama.cpp would write a format gattn does not read (Q4_K -> Q5_0). Elementwise tensors (norms,
// gate biases, convolution taps) stay floats.
#pragma once
#include <memory>
#include <string>

#include "model/layout.h"
#include "model/weights.h"

namespace gattn {

enum class QuantMix : uint8_t { q8_0, q4_0, q4_k_m };
// "q8_0", "q4_0", "q4_k_m" (llama.cpp's names: llama-quantize's Q8_0, Q4_0, Q4_K_M).
bool quant_mix_of(const std::string& name, QuantMix* mix);
const char* quant_mix_name(QuantMix mix);

// The dtype of tensor `spec` of `layout` under `mix`: a block format for a matrix, f32 for an
// elementwise tensor. An Error naming the tensor where llama.cpp would fall back to a format gattn
// does not read.
WeightDtype mixed_dtype(QuantMix mix, const ParamLayout& layout, const TensorSpec& spec);

// The model (f32 storage) with its matrices quantized: bf16 storage whose matrices are mapped to
// the blocks (owned by the result), the elementwise tensors stored as floats. Non-finite weights
// are an Error naming the tensor.
std::unique_ptr<Weights> quantize_model(const Weights& model, QuantMix mix);

// W8A8's weights (f32 storage, in place): each row of every matrix (the embedding too) rounded to
// int8 steps of its max|w| / 127 (nearest, ties to even) and multiplied back. Its activations:
// ExecContext::int8_projection_inputs.
void round_weights_to_int8_rows(Weights& model);

}  // namespace gattn
