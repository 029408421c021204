#include "ops/gate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/fast_exp.h"

namespace gattn {

namespace {
template <typename T>
T sigmoid(T z) {
  return fast_sigmoid(z);
}

template <typename T>
T activation_derivative(GateActivation act, T z) {
  switch (act) {
    case GateActivation::sigmoid: {
      const T s = sigmoid(z);
      return s * (1 - s);
    }
    case GateActivation::silu: {
      const T s = sigmoid(z);
      return s * (1 + z * (1 - s));
    }
    case GateActivation::identity:
      return 1;
    case GateActivation::ns_sigmoid: {
      const T s = sigmoid(z);
      return T(0.5) * s * (1 - s);
    }
  }
  return 0;
}

// Where the score for channel c of head h lives in a row of scores (head-shared scores, after
// averaging, live in the first head's slots).
inline int score_index(const GateShape& s, int h, int c) {
  if (s.headwise) return s.head_shared ? 0 : h;
  return s.head_shared ? c : h * s.head_dim + c;
}

// Activates one row of scores; head-shared ones are then averaged over the heads.
template <typename T>
void activate_row(T* a, const T* z, const GateShape& s) {
  const int scores = s.scores();
  for (int j = 0; j < scores; ++j) a[j] = gate_activation(s.activation, z[j]);
  if (!s.head_shared) return;
  const int per_head = scores / s.heads;
  for (int g = 1; g < s.heads; ++g)
    for (int j = 0; j < per_head; ++j) a[j] += a[g * per_head + j];
  for (int j = 0; j < per_head; ++j) a[j] /= s.heads;
}
}  // namespace

template <typename T>
T gate_activation(GateActivation act, T z) {
  switch (act) {
    case GateActivation::sigmoid:
      return sigmoid(z);
    case GateActivation::silu:
      return z * sigmoid(z);
    case GateActivation::identity:
      return z;
    case GateActivation::ns_sigmoid:
      return T(0.5) + T(0.5) * sigmoid(z);
  }
  return 0;
}

template <typename T>
void gate_forward(T* y_out, const T* y_in, const T* z, const GateShape& s) {
#pragma omp parallel
  {
    thread_local std::vector<T> score;
    score.resize(s.scores());
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s.rows; ++r) {
      activate_row(score.data(), z + r * s.ld_z, s);
      for (int h = 0; h < s.heads; ++h) {
        const T* y = y_in + r * s.ld_y + h * s.head_dim;
        T* out = y_out + r * s.ld_y_out + h * s.head_dim;
        for (int c = 0; c < s.head_dim; ++c) {
          const T sc = score[score_index(s, h, c)];
          out[c] = s.additive ? y[c] + sc : y[c] * sc;
        }
      }
    }
  }
}

template <typename T>
void gate_backward(T* d_y_in, T* d_z, const T* d_y_out, const T* y_in, const T* z,
                   const GateShape& s) {
  const int scores = s.scores();
  const int ld_dz = s.ld_z == 0 ? scores : s.ld_z;
#pragma omp parallel
  {
    thread_local std::vector<T> score;
    score.resize(scores);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* zr = z + r * s.ld_z;
      T* dz = d_z + r * ld_dz;
      activate_row(score.data(), zr, s);
      std::fill(dz, dz + scores, T(0));
      // dz first gathers dL/d(score) at the score each channel used ...
      for (int h = 0; h < s.heads; ++h) {
        const T* y = y_in + r * s.ld_y + h * s.head_dim;
        const T* dy_out = d_y_out + r * s.ld_y_out + h * s.head_dim;
        T* dy = d_y_in + r * s.ld_y + h * s.head_dim;
        for (int c = 0; c < s.head_dim; ++c) {
          const int at = score_index(s, h, c);
          const T g = dy_out[c];
          dz[at] += s.additive ? g : g * y[c];
          dy[c] = s.additive ? g : g * score[at];
        }
      }
      // ... a head-shared score spreads it evenly back over the heads it averaged ...
      if (s.head_shared) {
        const int per_head = scores / s.heads;
        for (int j = 0; j < per_head; ++j) dz[j] /= s.heads;
        for (int g = 1; g < s.heads; ++g)
          for (int j = 0; j < per_head; ++j) dz[g * per_head + j] = dz[j];
      }
      // ... and then it goes through the activation.
      for (int j = 0; j < scores; ++j) dz[j] *= activation_derivative(s.activation, zr[j]);
    }
  }
}

#define GATTN_INSTANTIATE(T)                                               \
  template T gate_activation<T>(GateActivation, T);                        \
  template void gate_forward<T>(T*, const T*, const T*, const GateShape&); \
  template void gate_backward<T>(T*, T*, const T*, const T*, const T*, const GateShape&);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
