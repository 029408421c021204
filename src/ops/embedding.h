// Token embedding lookup and its scatter-add gradient.
#pragma once
#include <cstdint>

#include "ops/weight_view.h"

namespace gattn {

// out[n] = table[ids[n]]; every id must be in [0, vocab) (checked, Error naming the position).
template <typename T>
void embedding_forward(T* out, const int32_t* ids, const T* table, int64_t rows, int dim,
                       int vocab);

// The same from a table in any storage dtype (table: vocab x dim), widened to float.
void embedding_forward(float* out, const int32_t* ids, const WeightView& table, int64_t rows);

// d_table[ids[n]] += d_out[n], summed in token order (no atomics).
template <typename T>
void embedding_backward(T* d_table, const T* d_out, const int32_t* ids, int64_t rows, int dim);

}  // namespace gattn
