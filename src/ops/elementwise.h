// Residual adds with the optional clamp of the block output, and column sums.
#pragma once
#include <cstdint>

namespace gattn {

// out = resid + clamp(a, -clip, clip); clip <= 0 means no clamp. out may equal resid.
template <typename T>
void residual_add(T* out, const T* resid, const T* a, int64_t count, T clip);

// d_a = d_out where a was inside [-clip, clip], else 0 (clamp's gradient, bounds included).
template <typename T>
void clip_backward(T* d_a, const T* d_out, const T* a, int64_t count, T clip);

// dst[j] += sum over rows of src[r * cols + j], in row order.
template <typename T>
void column_sum(T* dst, const T* src, int64_t rows, int cols);

}  // namespace gattn
