#include "ops/rope.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "util/error.h"
#include "util/threads.h"

namespace gattn {

std::vector<double> rope_inverse_frequencies(int rotary_dim, double theta,
                                             const RopeScaling& scaling, double* attention_factor) {
  using Type = RopeScaling::Type;
  const int half = rotary_dim / 2;
  const double d = rotary_dim, s = scaling.factor;
  *attention_factor = 1;
  if (scaling.type == Type::ntk) theta *= std::pow(s, d / (d - 2));
  std::vector<double> inv_freq(half);
  for (int i = 0; i < half; ++i) inv_freq[i] = std::pow(theta, -2.0 * i / d);
  if (scaling.type == Type::linear)
    for (double& f : inv_freq) f /= s;
  if (scaling.type == Type::yarn) {
    // The channel pair at which a frequency turns `rotations` times over the original context.
    auto pair_of = [&](double rotations) {
      return d * std::log(scaling.original_max_position_embeddings / (rotations * 2 * M_PI)) /
             (2 * std::log(theta));
    };
    const double low = std::max(std::floor(pair_of(scaling.beta_fast)), 0.0);
    double high = std::min(std::ceil(pair_of(scaling.beta_slow)), d - 1);
    if (low == high) high += 0.001;
    for (int i = 0; i < half; ++i) {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);  // 1: interpolate
      inv_freq[i] = inv_freq[i] / s * ramp + inv_freq[i] * (1 - ramp);
    }
    *attention_factor = scaling.attention_factor > 0 ? scaling.attention_factor
                        : s <= 1                     ? 1.0
                                                     : 0.1 * std::log(s) + 1;
  }
  return inv_freq;
}

template <typename T>
RopeTable<T> make_rope_table(int rotary_dim, double theta, int max_positions,
                             const RopeScaling& scaling) {
  RopeTable<T> t;
  t.rotary_dim = rotary_dim;
  t.max_positions = max_positions;
  const int half = rotary_dim / 2;
  double attention_factor = 1;
  const std::vector<double> inv_freq =
      rope_inverse_frequencies(rotary_dim, theta, scaling, &attention_factor);
  t.cos.resize(size_t(max_positions) * half);
  t.sin.resize(size_t(max_positions) * half);
  for (int p = 0; p < max_positions; ++p) {
    for (int i = 0; i < half; ++i) {
      const double angle = p * inv_freq[i];
      t.cos[size_t(p) * half + i] = T(attention_factor * std::cos(angle));
      t.sin[size_t(p) * half + i] = T(attention_factor * std::sin(angle));
    }
  }
  return t;
}

namespace {
// Rotates every head of every row by +angle (sign = 1) or -angle (sign = -1).
template <typename T>
void rotate(T* out, const T* in, const RopeTable<T>& table, const RopeShape& s, T sign) {
  const int half = table.rotary_dim / 2;
  for (int64_t r = 0; r < s.rows; ++r)
    if (s.positions[r] < 0 || s.positions[r] >= table.max_positions)
      fail("rope: position ", s.positions[r], " is outside the table's [0, ", table.max_positions,
           ")");
#pragma omp parallel for schedule(static) if (s.rows * s.heads * s.head_dim >= kMinParallelElements)
  for (int64_t r = 0; r < s.rows; ++r) {
    const int64_t p = s.positions[r];
    const T* cos = table.cos.data() + p * half;
    const T* sin = table.sin.data() + p * half;
    for (int h = 0; h < s.heads; ++h) {
      const T* x = in + r * s.ld_in + h * s.head_dim;
      T* y = out + r * s.ld_out + h * s.head_dim;
      for (int i = 0; i < half; ++i) {
        const T a = x[i], b = x[i + half], sn = sign * sin[i];
        y[i] = a * cos[i] - b * sn;
        y[i + half] = b * cos[i] + a * sn;
      }
      if (y != x)
        for (int i = table.rotary_dim; i < s.head_dim; ++i) y[i] = x[i];
    }
  }
}
}  // namespace

template <typename T>
void rope_forward(T* out, const T* in, const RopeTable<T>& table, const RopeShape& s) {
  rotate(out, in, table, s, T(1));
}

template <typename T>
void rope_backward(T* d_in, const T* d_out, const RopeTable<T>& table, const RopeShape& s) {
  RopeShape back = s;
  std::swap(back.ld_in, back.ld_out);
  rotate(d_in, d_out, table, back, T(-1));
}

#define GATTN_INSTANTIATE(T)                                                          \
  template RopeTable<T> make_rope_table<T>(int, double, int, const RopeScaling&);     \
  template void rope_forward<T>(T*, const T*, const RopeTable<T>&, const RopeShape&); \
  template void rope_backward<T>(T*, const T*, const RopeTable<T>&, const RopeShape&);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
