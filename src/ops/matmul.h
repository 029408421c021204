// The one GEMM entry point (BLAS underneath), so a better kernel can replace it in one place.
#pragma once

namespace gattn {

// c[m, n] = alpha * op(a) op(b) + beta * c, row-major; op(x) = x^T when the flag is set.
// Leading dimensions default (0) to the packed width of each stored matrix.
template <typename T>
void matmul(T* c, const T* a, const T* b, int m, int n, int k, bool trans_a, bool trans_b,
            T alpha = 1, T beta = 0, int lda = 0, int ldb = 0, int ldc = 0);

// out[rows, out_dim] = in[rows, in_dim] w[out_dim, in_dim]^T (+ out if accumulate); out (and
// d_out below) may have a row stride ld_out wider than out_dim (0: packed).
template <typename T>
void linear_forward(T* out, const T* in, const T* w, int rows, int in_dim, int out_dim,
                    bool accumulate = false, int ld_out = 0);

// d_w += d_out^T in; d_in = d_out w (+ d_in if accumulate_d_in). Either output may be null.
template <typename T>
void linear_backward(T* d_in, T* d_w, const T* d_out, const T* in, const T* w, int rows, int in_dim,
                     int out_dim, bool accumulate_d_in = false, int ld_out = 0);

}  // namespace gattn
