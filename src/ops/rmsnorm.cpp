#include "ops/rmsnorm.h"

#include <cmath>
#include <cstdint>

#include "ops/reduce.h"
#include "util/threads.h"

namespace gattn {

template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* in, const T* weight, const RmsNormShape& s, T eps) {
#pragma omp parallel for schedule(static) if (s.rows * s.groups * s.dim >= kMinParallelElements)
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int g = 0; g < s.groups; ++g) {
      const T* x = in + r * s.ld_in + g * s.dim;
      T* y = out + r * s.ld_out + g * s.dim;
      const T* w = weight + g * s.weight_group_stride;
      T sum_sq = 0;
      for (int i = 0; i < s.dim; ++i) sum_sq += x[i] * x[i];
      const T inv = T(1) / std::sqrt(sum_sq / s.dim + eps);
      rstd[r * s.groups + g] = inv;
      for (int i = 0; i < s.dim; ++i) y[i] = x[i] * inv * w[i];
    }
  }
}

template <typename T>
void rmsnorm_backward(T* d_in, T* d_weight, const T* d_out, const T* in, const T* weight,
                      const T* rstd, const RmsNormShape& s, bool accumulate) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.rows; ++r) {
    for (int g = 0; g < s.groups; ++g) {
      const T* x = in + r * s.ld_in + g * s.dim;
      const T* dy = d_out + r * s.ld_out + g * s.dim;
      const T* w = weight + g * s.weight_group_stride;
      T* dx = d_in + r * s.ld_in + g * s.dim;
      const T inv = rstd[r * s.groups + g];
      T dot = 0;  // sum_i dy_i w_i xhat_i
      for (int i = 0; i < s.dim; ++i) dot += dy[i] * w[i] * x[i];
      dot *= inv / s.dim;
      for (int i = 0; i < s.dim; ++i) {
        const T grad = inv * (dy[i] * w[i] - x[i] * inv * dot);
        dx[i] = accumulate ? dx[i] + grad : grad;
      }
    }
  }
  // d_weight += dy * xhat summed over rows (and over the groups that share one weight vector).
  if (s.weight_group_stride == 0) {
    column_reduce<T>(d_weight, s.dim, int64_t(s.rows) * s.groups,
                     [&](int64_t item, int j0, int j1, double* acc) {
                       const int64_t r = item / s.groups, g = item % s.groups;
                       const T* x = in + r * s.ld_in + g * s.dim;
                       const T* dy = d_out + r * s.ld_out + g * s.dim;
                       const T inv = rstd[item];
                       for (int j = j0; j < j1; ++j) acc[j - j0] += double(dy[j] * x[j] * inv);
                     });
  } else {
    column_reduce<T>(d_weight, s.groups * s.dim, s.rows,
                     [&](int64_t r, int j0, int j1, double* acc) {
                       const T* x = in + r * s.ld_in;
                       const T* dy = d_out + r * s.ld_out;
                       for (int j = j0; j < j1; ++j)
                         acc[j - j0] += double(dy[j] * x[j] * rstd[r * s.groups + j / s.dim]);
                     });
  }
}

template void rmsnorm_forward<float>(float*, float*, const float*, const float*,
                                     const RmsNormShape&, float);
template void rmsnorm_forward<double>(double*, double*, const double*, const double*,
                                      const RmsNormShape&, double);
template void rmsnorm_backward<float>(float*, float*, const float*, const float*, const float*,
                                      const float*, const RmsNormShape&, bool);
template void rmsnorm_backward<double>(double*, double*, const double*, const double*,
                                       const double*, const double*, const RmsNormShape&, bool);

}  // namespace gattn
