// The one GEMM entry point (BLAS underneath), so a better kernel can replace it in one place.
#pragma once

namespace gattn {

// bf16 mode (off by default): every float GEMM first rounds its inputs to bfloat16 (round to
// nearest even) and accumulates in fp32, as bf16 training on accelerators does. The products of
// bf16 values are exact in fp32, so this emulates such hardware up to the order of the additions.
// Weight GEMMs and the attention tiles (QK^T and PV) all pass through here. Process-wide.
void set_bf16_gemm_inputs(bool on);
bool bf16_gemm_inputs();
float round_to_bf16(float x);

// c[m, n] = alpha * op(a) op(b) + beta * c, row-major; op(x) = x^T when the flag is set.
// Leading dimensions default (0) to the packed width of each stored matrix.
template <typename T>
void matmul(T* c, const T* a, const T* b, int m, int n, int k, bool trans_a, bool trans_b,
            T alpha = 1, T beta = 0, int lda = 0, int ldb = 0, int ldc = 0);

// out[rows, out_dim] = in[rows, in_dim] w[out_dim, in_dim]^T (+ out if accumulate); out (and
// d_out below) may have a row stride ld_out wider than out_dim (0: packed). In fp32, at most
// kSmallBatchRows rows (a decode step) go to small_batch_linear (ops/small_batch_linear.h).
template <typename T>
void linear_forward(T* out, const T* in, const T* w, int rows, int in_dim, int out_dim,
                    bool accumulate = false, int ld_out = 0);

// d_w += d_out^T in; d_in = d_out w (+ d_in if accumulate_d_in). Either output may be null.
template <typename T>
void linear_backward(T* d_in, T* d_w, const T* d_out, const T* in, const T* w, int rows, int in_dim,
                     int out_dim, bool accumulate_d_in = false, int ld_out = 0);

}  // namespace gattn
