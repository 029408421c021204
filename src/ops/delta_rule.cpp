#include "ops/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/delta_rule_chunk.h"
#include "util/denormals.h"
#include "util/error.h"

namespace gattn {

using delta_rule_detail::Chunk;

void check_delta_rule_shape(const DeltaRuleShape& s) {
  GATTN_ASSERT(s.sequences > 0 && s.tokens >= 0 && s.key_heads > 0 && s.value_heads > 0 &&
               s.key_dim > 0 && s.value_dim > 0);
  GATTN_ASSERT(s.value_heads % s.key_heads == 0, "value heads ", s.value_heads,
               " are not a multiple of key heads ", s.key_heads);
  GATTN_ASSERT(s.qk_stride >= int64_t(s.key_heads) * s.key_dim &&
               s.v_stride >= int64_t(s.value_heads) * s.value_dim &&
               s.gate_stride >= s.value_heads &&
               s.out_stride >= int64_t(s.value_heads) * s.value_dim);
}

namespace {

// One token of one value head: S <- exp(g) S; S += k (beta (v - S^T k))^T; out = S^T q. The
// products are summed in double (acc, 2 * dv): the state is rounded to T once per token, where the
// chunked form rounds it once per chunk, and this keeps decode as close to it as prefill is.
template <typename T>
void recurrent_step(const T* q, const T* k, const T* v, T g, T beta, int dk, int dv, T* state,
                    T* out, double* acc) {
  const T decay = std::exp(g);
  double* delta = acc;
  double* sum = acc + dv;
  std::fill(delta, delta + dv, 0.0);
  for (int i = 0; i < dk; ++i) {
    T* row = state + int64_t(i) * dv;
    for (int c = 0; c < dv; ++c) {
      row[c] *= decay;
      delta[c] += double(row[c]) * k[i];
    }
  }
  for (int c = 0; c < dv; ++c) delta[c] = beta * (v[c] - delta[c]);
  std::fill(sum, sum + dv, 0.0);
  for (int i = 0; i < dk; ++i) {
    T* row = state + int64_t(i) * dv;
    for (int c = 0; c < dv; ++c) {
      const double updated = row[c] + k[i] * delta[c];
      row[c] = T(updated);
      sum[c] += updated * q[i];
    }
  }
  for (int c = 0; c < dv; ++c) out[c] = T(sum[c]);
}

}  // namespace

template <typename T>
void delta_rule_recurrent(const ExecContext& /*x*/, const DeltaRuleShape& s,
                          const DeltaRuleInputs<T>& in, T* state, T* out) {
  check_delta_rule_shape(s);
  const int64_t items = int64_t(s.sequences) * s.value_heads;
  const int dk = s.key_dim, dv = s.value_dim;
#pragma omp parallel
  {
    const DenormalsFlushed flushed(std::is_same_v<T, float>);  // util/denormals.h
    std::vector<double> acc(2 * size_t(dv));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int b = int(item / s.value_heads), h = int(item % s.value_heads), kh = s.key_head(h);
      T* head_state = state + item * int64_t(dk) * dv;
      for (int t = 0; t < s.tokens; ++t) {
        const int64_t row = int64_t(b) * s.tokens + t;
        recurrent_step(in.q + row * s.qk_stride + int64_t(kh) * dk,
                       in.k + row * s.qk_stride + int64_t(kh) * dk,
                       in.v + row * s.v_stride + int64_t(h) * dv, in.g[row * s.gate_stride + h],
                       in.beta[row * s.gate_stride + h], dk, dv, head_state,
                       out + row * s.out_stride + int64_t(h) * dv, acc.data());
      }
    }
  }
}

template <typename T>
void delta_rule_chunked(const ExecContext& x, const DeltaRuleShape& s, const DeltaRuleInputs<T>& in,
                        T* state, T* out, T* chunk_states) {
  check_delta_rule_shape(s);
  const int64_t items = int64_t(s.sequences) * s.value_heads,
                head_size = int64_t(s.key_dim) * s.value_dim;
  const int chunks = s.chunks();
#pragma omp parallel
  {
    const DenormalsFlushed flushed(std::is_same_v<T, float>);  // util/denormals.h
    Chunk<T> chunk(s, x);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int b = int(item / s.value_heads), h = int(item % s.value_heads);
      T* head_state = state + item * head_size;
      for (int c = 0; c < chunks; ++c) {
        if (chunk_states)
          std::copy_n(head_state, head_size,
                      chunk_states + ((int64_t(b) * chunks + c) * s.value_heads + h) * head_size);
        const int64_t row0 = int64_t(b) * s.tokens + int64_t(c) * kDeltaRuleChunk;
        chunk.prepare(in, row0, std::min(kDeltaRuleChunk, s.tokens - c * kDeltaRuleChunk), h);
        chunk.corrected_values(head_state);
        if (out)
          chunk.output(head_state, out + row0 * s.out_stride + int64_t(h) * s.value_dim,
                       s.out_stride);
        chunk.advance(head_state);
      }
    }
  }
}

#define GATTN_INSTANTIATE(T)                                                       \
  template void delta_rule_recurrent<T>(const ExecContext&, const DeltaRuleShape&, \
                                        const DeltaRuleInputs<T>&, T*, T*);        \
  template void delta_rule_chunked<T>(const ExecContext&, const DeltaRuleShape&,   \
                                      const DeltaRuleInputs<T>&, T*, T*, T*);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
