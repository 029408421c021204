// out[rows, out_dim] = in[rows, in_dim] W^T for W in one of llama.cpp's block formats (a
// WeightView of dtype q8_0, q4_0, q4_k or q6_k), as llama.cpp's CPU backend computes it: each input
// row quantized once (Q8_0 or Q8_K blocks, ops/quant_dot.h), then integer dot products against
// the weight rows as stored. Threads split the weight rows; each output is one quant_dot over a
// fixed group of up to eight input rows, so the values do not depend on the thread count.
#pragma once
#include "ops/weight_view.h"

namespace gattn {

// ld_out: out's row stride (0: w.rows). reference: the scalar kernels (the oracle) instead of
// the process's vector ones.
void quantized_linear(float* out, const float* in, const WeightView& w, int rows, int ld_out = 0,
                      bool reference = false);

}  // namespace gattn
