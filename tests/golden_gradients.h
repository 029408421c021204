// The golden-gradient rule every reference comparison uses: per tensor, relative L2 error within
// max(10 x the reference's own fp32 error, 1e-6) (PyTorch in fp32 against float64: a sum order
// ten times worse than PyTorch's still passes, a wrong formula errs by O(1)); per row (a 2-D
// tensor's rows, a 1-D tensor as one row), relative L2 within max(100 x the reference's fp32
// error, 1e-4) for every row holding at least 1e-6 of the tensor's norm, so an error confined to a
// few rows cannot hide in a large tensor. A row resolves less than its tensor: where PyTorch's own
// fp32 error is ~1e-5 (a hybrid's DeltaNet layers feeding a mixture's experts) a correct fp32
// computation's small rows err by ~1e-4 (1.13e-4 on an Intel Xeon's OpenBLAS, under 1e-4 on AMD).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace gattn {

struct GradientError {
  double tensor = 0;  // relative L2 over the tensor
  double worst_row = 0;
  int64_t worst_row_index = -1;
};

inline double golden_gradient_tolerance(double reference_fp32_error) {
  return std::max(10 * reference_fp32_error, 1e-6);
}
inline double golden_row_tolerance(double reference_fp32_error) {
  return std::max(100 * reference_fp32_error, 1e-4);
}

inline GradientError gradient_error(const float* ours, const float* ref,
                                    const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const int64_t cols = shape.size() == 2 ? shape[1] : numel,
                rows = numel / std::max<int64_t>(cols, 1);
  std::vector<double> diff(size_t(rows), 0), norm(size_t(rows), 0);
  double total_diff = 0, total_norm = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double o = ours[r * cols + c], x = ref[r * cols + c];
      diff[size_t(r)] += (o - x) * (o - x);
      norm[size_t(r)] += x * x;
    }
  for (int64_t r = 0; r < rows; ++r) total_diff += diff[size_t(r)], total_norm += norm[size_t(r)];
  GradientError e;
  e.tensor = std::sqrt(total_diff / total_norm);
  for (int64_t r = 0; r < rows; ++r) {
    if (std::sqrt(norm[size_t(r)]) < 1e-6 * std::sqrt(total_norm)) continue;
    const double row = std::sqrt(diff[size_t(r)] / norm[size_t(r)]);
    if (row > e.worst_row) e.worst_row = row, e.worst_row_index = r;
  }
  return e;
}

}  // namespace gattn
