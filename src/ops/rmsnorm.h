// RMSNorm over groups of `dim` channels: out = x / sqrt(mean(x^2) + eps) * weight.
// One group per row for the layer norms; one per head for QK-norm and the head RMSNorm gate.
#pragma once

namespace gattn {

struct RmsNormShape {
  int rows;
  int groups;  // groups of `dim` channels per row
  int dim;
  int ld_in;                // row stride of in and d_in
  int ld_out;               // row stride of out and d_out
  int weight_group_stride;  // 0: one weight vector shared by all groups; dim: one per group
};

// rstd[r * groups + g] receives 1 / sqrt(mean(x^2) + eps) for the backward pass.
template <typename T>
void rmsnorm_forward(T* out, T* rstd, const T* in, const T* weight, const RmsNormShape& s, T eps);

// d_in = (or +=, if accumulate) the input gradient; d_weight += the weight gradient.
template <typename T>
void rmsnorm_backward(T* d_in, T* d_weight, const T* d_out, const T* in, const T* weight,
                      const T* rstd, const RmsNormShape& s, bool accumulate);

}  // namespace gattn
