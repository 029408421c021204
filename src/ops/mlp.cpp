#include "ops/mlp.h"

#include <cmath>

#include "ops/fast_exp.h"
#include "util/threads.h"

namespace gattn {

namespace {
template <typename T>
T sigmoid(T x) {
  return fast_sigmoid(x);
}
}  // namespace

template <typename T>
void swiglu_forward(T* h, const T* gu, int64_t rows, int dim) {
#pragma omp parallel for schedule(static) if (rows * dim >= kMinParallelElements)
  for (int64_t r = 0; r < rows; ++r) {
    const T* g = gu + r * 2 * dim;
    const T* u = g + dim;
    for (int i = 0; i < dim; ++i) h[r * dim + i] = g[i] * sigmoid(g[i]) * u[i];
  }
}

template <typename T>
void swiglu_backward(T* d_gu, const T* d_h, const T* gu, int64_t rows, int dim) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const T* g = gu + r * 2 * dim;
    const T* u = g + dim;
    T* dg = d_gu + r * 2 * dim;
    T* du = dg + dim;
    for (int i = 0; i < dim; ++i) {
      const T s = sigmoid(g[i]), dh = d_h[r * dim + i];
      dg[i] = dh * u[i] * s * (1 + g[i] * (1 - s));
      du[i] = dh * g[i] * s;
    }
  }
}

template <typename T>
void silu_forward(T* out, const T* in, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) out[i] = in[i] * sigmoid(in[i]);
}

template <typename T>
void silu_backward(T* d_in, const T* d_out, const T* in, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const T s = sigmoid(in[i]);
    d_in[i] = d_out[i] * s * (1 + in[i] * (1 - s));
  }
}

#define GATTN_INSTANTIATE(T)                                              \
  template void swiglu_forward<T>(T*, const T*, int64_t, int);            \
  template void swiglu_backward<T>(T*, const T*, const T*, int64_t, int); \
  template void silu_forward<T>(T*, const T*, int64_t);                   \
  template void silu_backward<T>(T*, const T*, const T*, int64_t);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
