#include "ops/delta_rule_chunk.h"

#include <algorithm>
#include <cmath>

#include "ops/matmul.h"

namespace gattn::delta_rule_detail {

template <typename T>
void gemm(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k, bool ta, bool tb,
          T alpha, T beta) {
  tile_matmul<T>(x, c, a, b, m, n, k, ta, tb, alpha, beta, ta ? m : k, tb ? k : n, n);
}

template <typename T>
Chunk<T>::Chunk(const DeltaRuleShape& s, const ExecContext& x)
    : shape(s), dk(s.key_dim), dv(s.value_dim) {
  exact = x;
  exact.precision = GemmPrecision::fp32;
  const size_t c = kDeltaRuleChunk;
  for (auto* rows_k : {&q, &k, &w, &qg, &kr, &kb}) rows_k->resize(c * dk);
  for (auto* rows_v : {&v, &u, &vp, &vb}) rows_v->resize(c * dv);
  for (auto* square : {&a, &t, &kk, &m}) square->resize(c * c);
  gamma.resize(c);
  for (auto* row : {&beta, &decay_in, &decay_out}) row->resize(c);
}

template <typename T>
void Chunk<T>::gather(const DeltaRuleInputs<T>& in, int64_t row0, int h) {
  const int kh = shape.key_head(h);
  for (int i = 0; i < n; ++i) {
    const int64_t r = row0 + i;
    std::copy_n(in.q + r * shape.qk_stride + int64_t(kh) * dk, dk, q.data() + i * dk);
    std::copy_n(in.k + r * shape.qk_stride + int64_t(kh) * dk, dk, k.data() + i * dk);
    std::copy_n(in.v + r * shape.v_stride + int64_t(h) * dv, dv, v.data() + i * dv);
    gamma[i] = double(in.g[r * shape.gate_stride + h]) + (i ? gamma[i - 1] : 0.0);
    beta[i] = in.beta[r * shape.gate_stride + h];
  }
}

template <typename T>
void Chunk<T>::decays() {
  const double last = gamma[n - 1];
  for (int i = 0; i < n; ++i) {
    decay_in[i] = T(std::exp(gamma[i]));
    decay_out[i] = T(std::exp(last - gamma[i]));
  }
}

// t = (I + a)^-1 for the strictly lower a, row by row: t_i = e_i - sum_{j<i} a_ij t_j.
template <typename T>
void Chunk<T>::solve_unit_lower() {
  std::fill(t.begin(), t.begin() + int64_t(n) * n, T(0));
  for (int i = 0; i < n; ++i) {
    T* row = t.data() + int64_t(i) * n;
    row[i] = 1;
    for (int j = 0; j < i; ++j) {
      const T aij = a[int64_t(i) * n + j];
      const T* tj = t.data() + int64_t(j) * n;
      for (int c = 0; c <= j; ++c) row[c] -= aij * tj[c];
    }
  }
}

template <typename T>
void Chunk<T>::state_free_products() {
  gemm<T>(exact, kk.data(), k.data(), k.data(), n, n, dk, false, true, 1, 0);
  gemm<T>(exact, m.data(), q.data(), k.data(), n, n, dk, false, true, 1, 0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int64_t ij = int64_t(i) * n + j;
      const T decay = j <= i ? T(std::exp(gamma[i] - gamma[j])) : T(0);
      a[ij] = j < i ? beta[i] * kk[ij] * decay : T(0);
      m[ij] *= decay;
    }
  solve_unit_lower();
  for (int i = 0; i < n; ++i) {
    for (int c = 0; c < dv; ++c) vb[i * dv + c] = beta[i] * v[i * dv + c];
    for (int c = 0; c < dk; ++c) {
      kb[i * dk + c] = beta[i] * decay_in[i] * k[i * dk + c];
      qg[i * dk + c] = decay_in[i] * q[i * dk + c];
      kr[i * dk + c] = decay_out[i] * k[i * dk + c];
    }
  }
  gemm<T>(exact, u.data(), t.data(), vb.data(), n, dv, n, false, false, 1, 0);
  gemm<T>(exact, w.data(), t.data(), kb.data(), n, dk, n, false, false, 1, 0);
}

template <typename T>
void Chunk<T>::prepare(const DeltaRuleInputs<T>& in, int64_t row0, int rows, int h) {
  n = rows;
  gather(in, row0, h);
  decays();
  state_free_products();
}

template <typename T>
void Chunk<T>::corrected_values(const T* state) {
  std::copy_n(u.data(), int64_t(n) * dv, vp.data());
  gemm<T>(exact, vp.data(), w.data(), state, n, dv, dk, false, false, -1, 1);
}

template <typename T>
void Chunk<T>::output(const T* state, T* out, int64_t out_stride) {
  tile_matmul<T>(exact, out, qg.data(), state, n, dv, dk, false, false, 1, 0, dk, dv,
                 int(out_stride));
  tile_matmul<T>(exact, out, m.data(), vp.data(), n, dv, n, false, false, 1, 1, n, dv,
                 int(out_stride));
}

template <typename T>
void Chunk<T>::advance(T* state) const {
  const T carried = T(std::exp(gamma[n - 1]));
  for (int64_t i = 0; i < int64_t(dk) * dv; ++i) state[i] *= carried;
  gemm<T>(exact, state, kr.data(), vp.data(), dk, dv, n, true, false, 1, 1);
}

template class Chunk<float>;
template class Chunk<double>;
template void gemm<float>(const ExecContext&, float*, const float*, const float*, int, int, int,
                          bool, bool, float, float);
template void gemm<double>(const ExecContext&, double*, const double*, const double*, int, int, int,
                           bool, bool, double, double);

}  // namespace gattn::delta_rule_detail
