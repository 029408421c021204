#include "ops/elementwise.h"

#include <algorithm>
#include <cmath>

#include "ops/reduce.h"
#include "util/threads.h"

namespace gattn {

template <typename T>
void residual_add(T* out, const T* resid, const T* a, int64_t count, T clip) {
  if (clip > 0) {
#pragma omp parallel for schedule(static) if (count >= kMinParallelElements)
    for (int64_t i = 0; i < count; ++i) out[i] = resid[i] + std::clamp(a[i], -clip, clip);
  } else {
#pragma omp parallel for schedule(static) if (count >= kMinParallelElements)
    for (int64_t i = 0; i < count; ++i) out[i] = resid[i] + a[i];
  }
}

template <typename T>
void clip_backward(T* d_a, const T* d_out, const T* a, int64_t count, T clip) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) d_a[i] = std::abs(a[i]) <= clip ? d_out[i] : T(0);
}

template <typename T>
void column_sum(T* dst, const T* src, int64_t rows, int cols) {
  column_reduce<T>(dst, cols, rows, [&](int64_t r, int j0, int j1, double* acc) {
    for (int j = j0; j < j1; ++j) acc[j - j0] += src[r * cols + j];
  });
}

#define GATTN_INSTANTIATE(T)                                          \
  template void residual_add<T>(T*, const T*, const T*, int64_t, T);  \
  template void clip_backward<T>(T*, const T*, const T*, int64_t, T); \
  template void column_sum<T>(T*, const T*, int64_t, int);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
