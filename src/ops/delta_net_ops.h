// The ops of a Gated DeltaNet block around its delta rule (ops/delta_rule.h), as transformers'
// Qwen3.5 computes them, each with its backward pass:
// - the causal depthwise convolution of q|k|v followed by SiLU, with a decode state of the last
//   kernel - 1 inputs of every channel;
// - the l2 normalisation of q and k: x / sqrt(sum x^2 + 1e-6), times a scale;
// - the decay and write strength: g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b);
// - the gated RMSNorm of each value head's output: w * o / rms(o) * silu(z), w shared by heads.
#pragma once
#include <cstdint>

namespace gattn {

inline constexpr float kDeltaNetL2Eps = 1e-6f;

// `sequences` sequences of `tokens` rows each, consecutive; `channels` values per row.
struct ShortConvShape {
  int sequences = 1, tokens = 0, channels = 0, kernel = 0;
  int64_t in_stride = 0, out_stride = 0;
};

// out = silu(pre), pre[t, c] = sum_j weight[c, j] in[t - kernel + 1 + j, c], where rows before
// the first come from state [sequences, kernel - 1, channels] (oldest first; null: zeros). The
// state is then overwritten with each sequence's last kernel - 1 inputs. pre (null: not kept) is
// packed [rows, channels].
template <typename T>
void short_conv_forward(const ShortConvShape& s, const T* in, const T* weight, T* state, T* pre,
                        T* out);

// From a forward pass over whole sequences that started from zero state: d_in written,
// d_weight [channels, kernel] added to.
template <typename T>
void short_conv_backward(const ShortConvShape& s, const T* in, const T* weight, const T* pre,
                         const T* d_out, T* d_in, T* d_weight);

// Each of `heads` vectors of `dim` values of every row: x <- scale x / sqrt(sum x^2 + eps),
// in place; inv_norm (null: not kept) receives 1 / sqrt(sum x^2 + eps) per row and head.
template <typename T>
void l2_normalize_forward(T* x, int64_t rows, int heads, int dim, int64_t stride, T scale,
                          T* inv_norm);
// d (dL/d(output), in place -> dL/d(input)), from the output y and the kept inv_norm.
template <typename T>
void l2_normalize_backward(T* d, const T* y, const T* inv_norm, int64_t rows, int heads, int dim,
                           int64_t stride, T scale);

// g[r, h] = -exp(a_log[h]) softplus(a[r, h] + dt_bias[h]); beta[r, h] = sigmoid(b[r, h]).
template <typename T>
void delta_gates_forward(const T* a, const T* b, int64_t in_stride, const T* a_log,
                         const T* dt_bias, int64_t rows, int heads, T* g, T* beta,
                         int64_t out_stride);
// d_a, d_b written (in_stride), d_a_log and d_dt_bias added to, from dL/dg and dL/dbeta.
template <typename T>
void delta_gates_backward(const T* a, const T* b, int64_t in_stride, const T* a_log,
                          const T* dt_bias, int64_t rows, int heads, const T* g, const T* beta,
                          const T* d_g, const T* d_beta, int64_t out_stride, T* d_a, T* d_b,
                          T* d_a_log, T* d_dt_bias);

// out[r, h*dim + c] = w[c] o_hat silu(z), o_hat = o / sqrt(mean(o^2) + eps) per row and head;
// inv_rms (null: not kept) per row and head. o and out may be the same.
template <typename T>
void gated_rmsnorm_forward(const T* o, const T* z, const T* w, int64_t rows, int heads, int dim,
                           int64_t o_stride, int64_t z_stride, T eps, T* out, int64_t out_stride,
                           T* inv_rms);
// The same with the gate's values given (gate, stride gate_stride: silu(z), or what an analysis
// hook made of it): out = w o_hat gate.
template <typename T>
void gated_rmsnorm_forward_with_gate(const T* o, const T* gate, const T* w, int64_t rows, int heads,
                                     int dim, int64_t o_stride, int64_t gate_stride, T eps, T* out,
                                     int64_t out_stride, T* inv_rms);
// gate[r, c] = silu(z[r, c]) for `cols` columns of every row.
template <typename T>
void silu_rows(const T* z, int64_t rows, int cols, int64_t z_stride, T* gate, int64_t gate_stride);
// d_o, d_z written (o_stride, z_stride), d_w added to, from d_out.
template <typename T>
void gated_rmsnorm_backward(const T* o, const T* z, const T* w, const T* inv_rms, const T* d_out,
                            int64_t rows, int heads, int dim, int64_t o_stride, int64_t z_stride,
                            int64_t out_stride, T* d_o, T* d_z, T* d_w);

}  // namespace gattn
