// SwiGLU: h = silu(g) * u, with g and u side by side in one row of the fused gate/up GEMM,
// and plain SiLU (the parameter-free non-linearity ablation at G1).
#pragma once
#include <cstdint>

namespace gattn {

// gu[rows, 2*dim] holds g in columns [0, dim) and u in [dim, 2*dim); h[rows, dim].
template <typename T>
void swiglu_forward(T* h, const T* gu, int64_t rows, int dim);
template <typename T>
void swiglu_backward(T* d_gu, const T* d_h, const T* gu, int64_t rows, int dim);

template <typename T>
void silu_forward(T* out, const T* in, int64_t count);
template <typename T>
void silu_backward(T* d_in, const T* d_out, const T* in, int64_t count);

}  // namespace gattn
