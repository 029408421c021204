// out[rows, out_dim] = in[rows, in_dim] w[out_dim, in_dim]^T for the few rows of a decode step.
// Decode is bound by reading the weights: each weight row is streamed once and multiplied into
// every input row while it is in the L1 cache (BLAS sgemm at one row is call- and packing-bound).
// Weights in fp32, or bfloat16 (the upper half of an fp32, as Hugging Face stores it) widened to
// fp32 as they are read; fp32 accumulation either way. Threads split the output columns.
#pragma once
#include <cstdint>

namespace gattn {

// The most rows the kernel takes; linear_forward sends larger batches to sgemm.
inline constexpr int kSmallBatchRows = 8;

// ld_out: row stride of out (0: out_dim). accumulate: out += instead of out =.
void small_batch_linear(float* out, const float* in, const float* w, int rows, int in_dim,
                        int out_dim, bool accumulate = false, int ld_out = 0);
void small_batch_linear(float* out, const float* in, const uint16_t* w_bf16, int rows, int in_dim,
                        int out_dim, bool accumulate = false, int ld_out = 0);

}  // namespace gattn
