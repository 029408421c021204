#include "ops/delta_net_ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gattn {

namespace {

template <typename T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

template <typename T>
T softplus(T x) {  // log(1 + e^x) without overflow, as torch (threshold 20)
  return x > T(20) ? x : std::log1p(std::exp(x));
}

template <typename T>
T silu(T x) {
  return x * sigmoid(x);
}

template <typename T>
T silu_grad(T x) {
  const T s = sigmoid(x);
  return s * (T(1) + x * (T(1) - s));
}

// The input row `src` (negative: from the state) of channel range [c0, c0 + n) of sequence b.
template <typename T>
const T* conv_source(const ShortConvShape& s, const T* in, const T* state, int b, int src) {
  if (src >= 0) return in + (int64_t(b) * s.tokens + src) * s.in_stride;
  return state + (int64_t(b) * (s.kernel - 1) + src + s.kernel - 1) * s.channels;
}

}  // namespace

template <typename T>
void short_conv_forward(const ShortConvShape& s, const T* in, const T* weight, T* state, T* pre,
                        T* out) {
  const int K = s.kernel, C = s.channels;
  std::vector<T> zeros;
  const T* past = state;
  if (!past) {
    zeros.assign(size_t(s.sequences) * (K - 1) * C, T(0));
    past = zeros.data();
  }
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < int64_t(s.sequences) * s.tokens; ++row) {
    const int b = int(row / s.tokens), t = int(row % s.tokens);
    T* o = out + row * s.out_stride;
    std::fill(o, o + C, T(0));
    for (int j = 0; j < K; ++j) {
      const T* x = conv_source(s, in, past, b, t - K + 1 + j);
      for (int c = 0; c < C; ++c) o[c] += weight[int64_t(c) * K + j] * x[c];
    }
    if (pre) std::copy_n(o, C, pre + row * C);
    for (int c = 0; c < C; ++c) o[c] = silu(o[c]);
  }
  if (!state) return;
  std::vector<T> kept(size_t(K - 1) * C);
  for (int b = 0; b < s.sequences; ++b) {  // the last K - 1 inputs of [state | in]
    for (int j = 0; j < K - 1; ++j)
      std::copy_n(conv_source(s, in, state, b, s.tokens - (K - 1) + j), C,
                  kept.data() + int64_t(j) * C);
    std::copy(kept.begin(), kept.end(), state + int64_t(b) * (K - 1) * C);
  }
}

// Blocks of channels, each walking its sequences' rows in order (the rows are contiguous per
// channel block: a cache line serves 16 channels), tap gradients summed per block.
template <typename T>
void short_conv_backward(const ShortConvShape& s, const T* in, const T* weight, const T* pre,
                         const T* d_out, T* d_in, T* d_weight) {
  const int K = s.kernel, C = s.channels;
  constexpr int kBlock = 64;
  const int blocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int block = 0; block < blocks; ++block) {
    const int c0 = block * kBlock, width = std::min(kBlock, C - c0);
    std::vector<T> dw(size_t(K) * width, T(0)), dp(width);
    for (int b = 0; b < s.sequences; ++b) {
      const int64_t first = int64_t(b) * s.tokens;
      for (int t = 0; t < s.tokens; ++t)
        std::fill_n(d_in + (first + t) * s.in_stride + c0, width, T(0));
      for (int t = 0; t < s.tokens; ++t) {
        const int64_t row = first + t;
        const T* d_row = d_out + row * s.out_stride + c0;
        const T* pre_row = pre + row * C + c0;
        for (int c = 0; c < width; ++c) dp[c] = d_row[c] * silu_grad(pre_row[c]);
        for (int j = std::max(0, K - 1 - t); j < K; ++j) {
          const int64_t src = first + t - K + 1 + j;
          const T* x = in + src * s.in_stride + c0;
          T* dx = d_in + src * s.in_stride + c0;
          T* dwj = dw.data() + int64_t(j) * width;
          for (int c = 0; c < width; ++c) {
            dwj[c] += dp[c] * x[c];
            dx[c] += dp[c] * weight[int64_t(c0 + c) * K + j];
          }
        }
      }
    }
    for (int c = 0; c < width; ++c)
      for (int j = 0; j < K; ++j) d_weight[int64_t(c0 + c) * K + j] += dw[int64_t(j) * width + c];
  }
}

template <typename T>
void l2_normalize_forward(T* x, int64_t rows, int heads, int dim, int64_t stride, T scale,
                          T* inv_norm) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      T* v = x + r * stride + int64_t(h) * dim;
      T sum = 0;
      for (int c = 0; c < dim; ++c) sum += v[c] * v[c];
      const T inv = T(1) / std::sqrt(sum + T(kDeltaNetL2Eps));
      for (int c = 0; c < dim; ++c) v[c] *= scale * inv;
      if (inv_norm) inv_norm[r * heads + h] = inv;
    }
}

// y = scale x inv, inv = (|x|^2 + eps)^-1/2: dx = scale inv (dy - x inv^2 (x . dy)), x = y / (scale
// inv).
template <typename T>
void l2_normalize_backward(T* d, const T* y, const T* inv_norm, int64_t rows, int heads, int dim,
                           int64_t stride, T scale) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      T* dv = d + r * stride + int64_t(h) * dim;
      const T* yv = y + r * stride + int64_t(h) * dim;
      const T inv = inv_norm[r * heads + h];
      T y_dot = 0;
      for (int c = 0; c < dim; ++c) y_dot += yv[c] * dv[c];
      // x inv^2 (x . dy) = y (y . dy) / scale^2
      for (int c = 0; c < dim; ++c) dv[c] = scale * inv * (dv[c] - yv[c] * y_dot / (scale * scale));
    }
}

template <typename T>
void delta_gates_forward(const T* a, const T* b, int64_t in_stride, const T* a_log,
                         const T* dt_bias, int64_t rows, int heads, T* g, T* beta,
                         int64_t out_stride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      g[r * out_stride + h] = -std::exp(a_log[h]) * softplus(a[r * in_stride + h] + dt_bias[h]);
      beta[r * out_stride + h] = sigmoid(b[r * in_stride + h]);
    }
}

template <typename T>
void delta_gates_backward(const T* a, const T* /*b*/, int64_t in_stride, const T* a_log,
                          const T* dt_bias, int64_t rows, int heads, const T* g, const T* beta,
                          const T* d_g, const T* d_beta, int64_t out_stride, T* d_a, T* d_b,
                          T* d_a_log, T* d_dt_bias) {
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      const int64_t o = r * out_stride + h, i = r * in_stride + h;
      const T dg = d_g[o], bt = beta[o];
      d_a_log[h] += dg * g[o];  // g = -exp(a_log) softplus(.)
      const T da = dg * -std::exp(a_log[h]) * sigmoid(a[i] + dt_bias[h]);
      d_a[i] = da;
      d_dt_bias[h] += da;
      d_b[i] = d_beta[o] * bt * (T(1) - bt);
    }
}

namespace {
// out = w o_hat gate_of(z) per row and head.
template <typename T, typename GateOf>
void rmsnorm_times_gate(const T* o, const T* z, const T* w, int64_t rows, int heads, int dim,
                        int64_t o_stride, int64_t z_stride, T eps, T* out, int64_t out_stride,
                        T* inv_rms, GateOf gate_of) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      const T* ov = o + r * o_stride + int64_t(h) * dim;
      const T* zv = z + r * z_stride + int64_t(h) * dim;
      T* yv = out + r * out_stride + int64_t(h) * dim;
      T sum = 0;
      for (int c = 0; c < dim; ++c) sum += ov[c] * ov[c];
      const T inv = T(1) / std::sqrt(sum / T(dim) + eps);
      for (int c = 0; c < dim; ++c) yv[c] = w[c] * (ov[c] * inv) * gate_of(zv[c]);
      if (inv_rms) inv_rms[r * heads + h] = inv;
    }
}
}  // namespace

template <typename T>
void gated_rmsnorm_forward(const T* o, const T* z, const T* w, int64_t rows, int heads, int dim,
                           int64_t o_stride, int64_t z_stride, T eps, T* out, int64_t out_stride,
                           T* inv_rms) {
  rmsnorm_times_gate(o, z, w, rows, heads, dim, o_stride, z_stride, eps, out, out_stride, inv_rms,
                     [](T x) { return silu(x); });
}

template <typename T>
void gated_rmsnorm_forward_with_gate(const T* o, const T* gate, const T* w, int64_t rows, int heads,
                                     int dim, int64_t o_stride, int64_t gate_stride, T eps, T* out,
                                     int64_t out_stride, T* inv_rms) {
  rmsnorm_times_gate(o, gate, w, rows, heads, dim, o_stride, gate_stride, eps, out, out_stride,
                     inv_rms, [](T x) { return x; });
}

template <typename T>
void silu_rows(const T* z, int64_t rows, int cols, int64_t z_stride, T* gate, int64_t gate_stride) {
  for (int64_t r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) gate[r * gate_stride + c] = silu(z[r * z_stride + c]);
}

template <typename T>
void gated_rmsnorm_backward(const T* o, const T* z, const T* w, const T* inv_rms, const T* d_out,
                            int64_t rows, int heads, int dim, int64_t o_stride, int64_t z_stride,
                            int64_t out_stride, T* d_o, T* d_z, T* d_w) {
#pragma omp parallel
  {
    std::vector<T> dw(dim, T(0)), d_hat(dim);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int h = 0; h < heads; ++h) {
        const T* ov = o + r * o_stride + int64_t(h) * dim;
        const T* zv = z + r * z_stride + int64_t(h) * dim;
        const T* dy = d_out + r * out_stride + int64_t(h) * dim;
        T* dov = d_o + r * o_stride + int64_t(h) * dim;
        T* dzv = d_z + r * z_stride + int64_t(h) * dim;
        const T inv = inv_rms[r * heads + h];
        T hat_dot = 0;
        for (int c = 0; c < dim; ++c) {
          const T hat = ov[c] * inv, gate = silu(zv[c]);
          dw[c] += dy[c] * hat * gate;
          dzv[c] = dy[c] * w[c] * hat * silu_grad(zv[c]);
          d_hat[c] = dy[c] * w[c] * gate;
          hat_dot += d_hat[c] * hat;
        }
        for (int c = 0; c < dim; ++c) dov[c] = inv * (d_hat[c] - ov[c] * inv * hat_dot / T(dim));
      }
#pragma omp critical
    for (int c = 0; c < dim; ++c) d_w[c] += dw[c];
  }
}

#define GATTN_INSTANTIATE(T)                                                                       \
  template void short_conv_forward<T>(const ShortConvShape&, const T*, const T*, T*, T*, T*);      \
  template void short_conv_backward<T>(const ShortConvShape&, const T*, const T*, const T*,        \
                                       const T*, T*, T*);                                          \
  template void l2_normalize_forward<T>(T*, int64_t, int, int, int64_t, T, T*);                    \
  template void l2_normalize_backward<T>(T*, const T*, const T*, int64_t, int, int, int64_t, T);   \
  template void delta_gates_forward<T>(const T*, const T*, int64_t, const T*, const T*, int64_t,   \
                                       int, T*, T*, int64_t);                                      \
  template void delta_gates_backward<T>(const T*, const T*, int64_t, const T*, const T*, int64_t,  \
                                        int, const T*, const T*, const T*, const T*, int64_t, T*,  \
                                        T*, T*, T*);                                               \
  template void gated_rmsnorm_forward<T>(const T*, const T*, const T*, int64_t, int, int, int64_t, \
                                         int64_t, T, T*, int64_t, T*);                             \
  template void gated_rmsnorm_forward_with_gate<T>(const T*, const T*, const T*, int64_t, int,     \
                                                   int, int64_t, int64_t, T, T*, int64_t, T*);     \
  template void silu_rows<T>(const T*, int64_t, int, int64_t, T*, int64_t);                        \
  template void gated_rmsnorm_backward<T>(const T*, const T*, const T*, const T*, const T*,        \
                                          int64_t, int, int, int64_t, int64_t, int64_t, T*, T*,    \
                                          T*);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
