// Float rows to llama.cpp's block formats (ops/ggml_blocks.h), bit for bit as llama.cpp's
// quantizer writes them without an importance matrix (llama_model_quantize -> ggml_quantize_chunk
// -> ggml-quants.c quantize_row_*_ref, which ggml builds without FMA: every float operation
// rounded on its own; this file is compiled with -ffp-contract=off for the same):
//   Q8_0: d = max|x| / 127, q = round-half-away(x / d).
//   Q4_0: d = m / -8 for m the value of largest magnitude, q = min(15, trunc(x / d + 8.5)).
//   Q4_K: per 32 values a scale and a min fitted by llama.cpp's weighted search
//         (make_qkx2_quants: 21 candidate scales, weights av|x| + |x|), both quantized to 6 bits
//         against the block's largest, then each value re-rounded against the quantized pair.
//   Q6_K: per 16 values a scale by llama.cpp's x^2-weighted search (make_qx_quants, 19
//         candidates), quantized to int8 against the block's largest, then the values re-rounded.
// Tests: tests/test_quantize_blocks.cpp (against llama.cpp's own files of the same values).
#pragma once
#include <cstdint>

#include "ops/weight_view.h"

namespace gattn {

// x[cols] -> one row of `dtype` blocks (weight_row_bytes(dtype, cols) bytes at out); cols a
// multiple of the format's block.
void quantize_block_row(WeightDtype dtype, const float* x, int64_t cols, uint8_t* out);

// W8A8's rounding (model/quantize_model.h, ExecContext::int8_projection_inputs): x[n] to int8
// steps of max|x| / 127 (nearest, ties to even) and multiplied back, into out (may be x).
void round_to_int8_steps(const float* x, int64_t n, float* out);

}  // namespace gattn
