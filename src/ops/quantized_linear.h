// out[rows, out_dim] = in[rows, in_dim] W^T for W in one of llama.cpp's block formats (a
// WeightView of dtype q8_0, q4_0, q4_k or q6_k), as llama.cpp's CPU backend computes it: each input
// row quantized once (Q8_0 or Q8_K blocks, ops/quant_dot.h), then integer dot products against
// the weight rows as stored. Threads split the weight rows; each output is one quant_dot over a
// fixed group of up to eight input rows, so the values do not depend on the thread count.
#pragma once
#include "ops/weight_view.h"

namespace gattn {

// Input rows quantized for block-format weights. One set serves every matrix whose products take
// the same activation blocks (Q8_0 for q8_0 and q4_0 weights, Q8_K for the K-quants) and `cols`.
struct QuantizedRows {
  const uint8_t* data = nullptr;
  int rows = 0;
  int64_t cols = 0, row_bytes = 0;
  bool k_quant = false;

  bool serves(const WeightView& w) const {
    return data && is_k_quant(w.dtype) == k_quant && w.cols == cols;
  }
};

// in[rows, cols] quantized for weights of `dtype`, into this thread's buffer: valid until this
// thread's next quantize_rows.
QuantizedRows quantize_rows(const float* in, int rows, int64_t cols, WeightDtype dtype);

// ld_out: out's row stride (0: w.rows). reference: the scalar kernels (the oracle) instead of
// the process's vector ones.
void quantized_linear(float* out, const QuantizedRows& x, const WeightView& w, int ld_out = 0,
                      bool reference = false);
void quantized_linear(float* out, const float* in, const WeightView& w, int rows, int ld_out = 0,
                      bool reference = false);

// Decode-sized products of several block-format matrices that take the same input rows (x serves
// each), their columns side by side in out (rows ld_out apart), in one parallel region; the values
// are each part's quantized_linear's. Returns false, computing nothing, where that does not apply
// (a part in another format or input blocks, more than eight parts, or prefill-sized rows: those go
// part by part).
bool quantized_linear_parts(float* out, const QuantizedRows& x, const WeightView* parts,
                            int n_parts, int ld_out, bool reference = false);

}  // namespace gattn
