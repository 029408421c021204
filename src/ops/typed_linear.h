// out[rows, out_dim] = in[rows, in_dim] W^T for a weight matrix in any storage dtype
// (ops/weight_view.h): the one place a new weight format or device adds its product.
//   f32:  linear_forward (sgemm, or the small-batch kernel for a decode step).
//   bf16: a decode step (rows <= kSmallBatchRows) on the small-batch kernel, widening as it
//         reads; prefill with ExecContext::bf16_weights_on_bf16_gemm (where the CPU has one) or
//         in GemmPrecision::bf16 on the CPU's bf16 GEMM reading the stored bf16 directly (the
//         activations rounded to bf16); otherwise on fp32 panels widened from the
//         bf16 rows, sized for the L2 cache, each an sgemm: sgemm's products on the widened
//         matrix (summed in the order OpenBLAS picks for a panel's shape), without an fp32 copy.
//   q8_0, q4_0, q4_k, q6_k (GGUF blocks): ops/quantized_linear.h, at every batch size.
#pragma once
#include "ops/exec_context.h"
#include "ops/weight_view.h"

namespace gattn {

// w: out_dim x in_dim. ld_out: out's row stride (0: out_dim). panel_bytes: the widened panels'
// size (0: bf16_panel_bytes(); tests set others).
void typed_linear_forward(const ExecContext& x, float* out, const float* in, const WeightView& w,
                          int rows, int ld_out = 0, int64_t panel_bytes = 0);

// The same product for a matrix stored in parts (a fused view over a GGUF file's separate q, k, v
// tensors): parts[i] gives out's columns after those of parts[0..i-1]. Block-format parts whose
// products take the same activation blocks share one quantization of `in`.
void typed_linear_forward_parts(const ExecContext& x, float* out, const float* in,
                                const WeightView* parts, int n_parts, int rows, int ld_out);

// The rows of a bf16 matrix of `cols` columns one widened panel holds (a multiple of 16, at
// least 16): panel_bytes of floats.
int bf16_panel_rows(int cols, int64_t panel_bytes);
// The panel size typed_linear_forward uses: this CPU's L2 cache, at least 4 MiB. Each panel's
// sgemm packs the whole input again, so narrow panels lose to it: at the 0.6B shape's matrices
// and a 256-token chunk (gattn_bench_typed_linear, AVX2 path, 2 MiB L2) panels of 1 MiB ran at
// 0.84 of sgemm on the fp32 matrix, 4 MiB at 0.95, 8 MiB at 0.96 (BENCHMARKS.md).
int64_t bf16_panel_bytes();

}  // namespace gattn
