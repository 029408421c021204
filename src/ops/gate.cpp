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

// sig = sigmoid(z) over n scores, for every activation that uses it (all but identity).
template <typename T>
void sigmoids(T* sig, const T* z, int n, GateActivation act) {
  if (act == GateActivation::identity) return;
  for (int j = 0; j < n; ++j) sig[j] = sigmoid(z[j]);
}

// a = act(z) over n scores, from sig = sigmoids(z) (a may be sig); the switch stays outside the
// loops so they vectorise.
template <typename T>
void activate(T* a, const T* z, const T* sig, int n, GateActivation act) {
  switch (act) {
    case GateActivation::sigmoid:
      if (a != sig) std::copy_n(sig, n, a);
      break;
    case GateActivation::silu:
      for (int j = 0; j < n; ++j) a[j] = z[j] * sig[j];
      break;
    case GateActivation::identity:
      std::copy_n(z, n, a);
      break;
    case GateActivation::ns_sigmoid:
      for (int j = 0; j < n; ++j) a[j] = T(0.5) + T(0.5) * sig[j];
      break;
  }
}

// d *= act'(z) over n scores, from sig = sigmoids(z): the backward evaluates each sigmoid once
// (SiLU's twice).
template <typename T>
void times_activation_derivative(T* d, const T* z, const T* sig, int n, GateActivation act) {
  switch (act) {
    case GateActivation::sigmoid:
      for (int j = 0; j < n; ++j) d[j] *= sig[j] * (1 - sig[j]);
      break;
    case GateActivation::silu:  // recomputed: from sig the compiler fuses z (1 - s) + 1 into an
      // FMA, which changes the last bits of every SiLU-gate run made before
      for (int j = 0; j < n; ++j) {
        const T s = sigmoid(z[j]);
        d[j] *= s * (1 + z[j] * (1 - s));
      }
      break;
    case GateActivation::identity:
      break;
    case GateActivation::ns_sigmoid:
      for (int j = 0; j < n; ++j) d[j] *= T(0.5) * sig[j] * (1 - sig[j]);
      break;
  }
}

// The score each channel of a row gets, heads * head_dim of them: the activated scores broadcast
// over a head's channels (headwise) and averaged over the heads (head-shared). sig holds
// sigmoids(z) on return.
template <typename T>
void effective_scores(T* score, T* activated, T* sig, const T* z, const GateShape& s) {
  const int n = s.heads * s.head_dim, per_head = s.headwise ? 1 : s.head_dim;
  sigmoids(sig, z, s.scores(), s.activation);
  if (!s.headwise && !s.head_shared) return activate(score, z, sig, n, s.activation);
  activate(activated, z, sig, s.scores(), s.activation);
  if (s.head_shared) {  // the mean over heads, in the first head's slots
    for (int g = 1; g < s.heads; ++g)
      for (int j = 0; j < per_head; ++j) activated[j] += activated[g * per_head + j];
    for (int j = 0; j < per_head; ++j) activated[j] /= s.heads;
  }
  for (int h = 0; h < s.heads; ++h) {
    const T* source = activated + (s.head_shared ? 0 : h * per_head);
    T* target = score + h * s.head_dim;
    if (s.headwise)
      std::fill_n(target, s.head_dim, source[0]);
    else
      std::copy_n(source, s.head_dim, target);
  }
}

// Per-row buffers of heads * head_dim values, grown once per thread.
template <typename T>
struct RowBuffers {
  std::vector<T> score, activated, sig;
  void fit(const GateShape& s) {
    score.resize(size_t(s.heads) * s.head_dim);
    activated.resize(size_t(s.heads) * s.head_dim);
    sig.resize(size_t(s.heads) * s.head_dim);
  }
};

HeadGate head_gate(const GateShape& s) {
  return {.head_dim = s.head_dim,
          .headwise = s.headwise,
          .additive = s.additive,
          .activation = s.activation};
}
}  // namespace

template <typename T>
void gate_head_forward(T* out, const T* y, const T* z, T* sig, const HeadGate& g) {
  const int d = g.head_dim;
  sigmoids(sig, z, g.scores(), g.activation);
  activate(sig, z, sig, g.scores(), g.activation);  // the activated scores, in place
  if (g.headwise) {
    const T score = sig[0];
    if (g.additive)
      for (int c = 0; c < d; ++c) out[c] = y[c] + score;
    else
      for (int c = 0; c < d; ++c) out[c] = y[c] * score;
  } else if (g.additive) {
    for (int c = 0; c < d; ++c) out[c] = y[c] + sig[c];
  } else {
    for (int c = 0; c < d; ++c) out[c] = y[c] * sig[c];
  }
}

template <typename T>
void gate_head_backward(T* d_y, T* d_z, const T* d_out, const T* y, const T* z, T* sig,
                        const HeadGate& g) {
  const int d = g.head_dim;
  if (g.headwise) {
    T score{}, sum = 0;  // of the head's one score
    sigmoids(sig, z, 1, g.activation);
    activate(&score, z, sig, 1, g.activation);
    for (int c = 0; c < d; ++c) {
      d_y[c] = g.additive ? d_out[c] : d_out[c] * score;
      sum += g.additive ? d_out[c] : d_out[c] * y[c];
    }
    d_z[0] = sum;
    return times_activation_derivative(d_z, z, sig, 1, g.activation);
  }
  sigmoids(sig, z, d, g.activation);
  if (g.additive) {
    for (int c = 0; c < d; ++c) d_z[c] = d_y[c] = d_out[c];
  } else {
    T* score = d_y;  // the activated scores, then d_y over them
    activate(score, z, sig, d, g.activation);
    for (int c = 0; c < d; ++c) {
      d_z[c] = d_out[c] * y[c];
      d_y[c] = d_out[c] * score[c];
    }
  }
  times_activation_derivative(d_z, z, sig, d, g.activation);
}

template <typename T>
T gate_activation(GateActivation act, T z) {
  T sig{}, a{};
  sigmoids(&sig, &z, 1, act);
  activate(&a, &z, &sig, 1, act);
  return a;
}

template <typename T>
void gate_channel_scores(T* scores, const T* z, const GateShape& s) {
  const int64_t n = int64_t(s.heads) * s.head_dim;
#pragma omp parallel
  {
    thread_local RowBuffers<T> buffers;
    buffers.fit(s);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s.rows; ++r)
      effective_scores(scores + r * n, buffers.activated.data(), buffers.sig.data(), z + r * s.ld_z,
                       s);
  }
}

template <typename T>
void gate_forward(T* y_out, const T* y_in, const T* z, const GateShape& s) {
  const int n = s.heads * s.head_dim;
  const HeadGate head = head_gate(s);
#pragma omp parallel
  {
    thread_local RowBuffers<T> buffers;
    buffers.fit(s);
    T* score = buffers.score.data();
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* y = y_in + r * s.ld_y;
      T* out = y_out + r * s.ld_y_out;
      if (!s.head_shared) {
        for (int h = 0; h < s.heads; ++h)
          gate_head_forward(out + h * s.head_dim, y + h * s.head_dim,
                            z + r * s.ld_z + h * head.scores(), buffers.sig.data(), head);
        continue;
      }
      effective_scores(score, buffers.activated.data(), buffers.sig.data(), z + r * s.ld_z, s);
      if (s.additive)
        for (int j = 0; j < n; ++j) out[j] = y[j] + score[j];
      else
        for (int j = 0; j < n; ++j) out[j] = y[j] * score[j];
    }
  }
}

template <typename T>
void gate_backward(T* d_y_in, T* d_z, const T* d_y_out, const T* y_in, const T* z,
                   const GateShape& s) {
  const int n = s.heads * s.head_dim, scores = s.scores();
  const int ld_dz = s.ld_z == 0 ? scores : s.ld_z;
  const HeadGate head = head_gate(s);
#pragma omp parallel
  {
    thread_local RowBuffers<T> buffers;
    buffers.fit(s);
    T* score = buffers.score.data();
#pragma omp for schedule(static)
    for (int64_t r = 0; r < s.rows; ++r) {
      const T* zr = z + r * s.ld_z;
      const T* y = y_in + r * s.ld_y;
      const T* dy_out = d_y_out + r * s.ld_y_out;
      T* dy = d_y_in + r * s.ld_y;
      T* dz = d_z + r * ld_dz;
      if (!s.head_shared) {
        for (int h = 0; h < s.heads; ++h) {
          const int y0 = h * s.head_dim, z0 = h * head.scores();
          gate_head_backward(dy + y0, dz + z0, dy_out + y0, y + y0, zr + z0, buffers.sig.data(),
                             head);
        }
        continue;
      }
      effective_scores(score, buffers.activated.data(), buffers.sig.data(), zr, s);
      // dL/d(score of each channel) into `score`'s buffer after using it for dy
      T* d_score = score;
      if (s.additive) {
        for (int j = 0; j < n; ++j) d_score[j] = dy[j] = dy_out[j];
      } else {
        for (int j = 0; j < n; ++j) {
          dy[j] = dy_out[j] * score[j];
          d_score[j] = dy_out[j] * y[j];
        }
      }
      // gathered back to the scores they came from: spread evenly over the heads they were
      // averaged from (and summed over a head's channels when headwise)
      const int per_head = s.headwise ? 1 : s.head_dim;
      T* shared = buffers.activated.data();
      std::fill_n(shared, per_head, T(0));
      for (int h = 0; h < s.heads; ++h)
        for (int c = 0; c < s.head_dim; ++c)
          shared[s.headwise ? 0 : c] += d_score[h * s.head_dim + c];
      for (int g = 0; g < s.heads; ++g)
        for (int j = 0; j < per_head; ++j) dz[g * per_head + j] = shared[j] / s.heads;
      times_activation_derivative(dz, zr, buffers.sig.data(), scores, s.activation);
    }
  }
}

#define GATTN_INSTANTIATE(T)                                                                      \
  template void gate_head_forward<T>(T*, const T*, const T*, T*, const HeadGate&);                \
  template void gate_head_backward<T>(T*, T*, const T*, const T*, const T*, T*, const HeadGate&); \
  template T gate_activation<T>(GateActivation, T);                                               \
  template void gate_forward<T>(T*, const T*, const T*, const GateShape&);                        \
  template void gate_channel_scores<T>(T*, const T*, const GateShape&);                           \
  template void gate_backward<T>(T*, T*, const T*, const T*, const T*, const GateShape&);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
