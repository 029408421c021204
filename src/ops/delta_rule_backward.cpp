// The chunked gated delta rule's backward pass (ops/delta_rule.h), per value head: a forward
// sweep prepares every chunk (delta_rule_chunk.h) and finds the state at each chunk's start, then
// the chunks in reverse, with dS the gradient of the state after the chunk and dO of its output,
//   dV' = M^T dO + K_out dS                     (K_out = diag(exp(gamma_last - gamma)) K)
//   dS_before = Q_in^T dO + exp(gamma_last) dS - W^T dV'   (Q_in = diag(exp(gamma)) Q)
//   dU = dV',  dW = -dV' S^T,  d(diag(beta) V) = T^T dU,  d(diag(beta exp(gamma)) K) = T^T dW
//   dA = -(T^T dU U^T + T^T dW W^T) below the diagonal      (T = (I + A)^-1)
// and the chain rule through Gamma, the decays and the row scalings onto q, k, v, beta and gamma,
// whose reverse running sum is dg.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/delta_rule.h"
#include "ops/delta_rule_chunk.h"
#include "util/denormals.h"

namespace gattn {

namespace {

using delta_rule_detail::Chunk;
using delta_rule_detail::gemm;

template <typename T>
T row_dot(const T* a, const T* b, int n) {
  T sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// The gradients of one chunk of one value head, in packed buffers.
template <typename T>
struct ChunkGradient {
  explicit ChunkGradient(const DeltaRuleShape& s) : dk(s.key_dim), dv(s.value_dim) {
    const size_t c = kDeltaRuleChunk;
    for (auto* rows_k : {&dqg, &dkr, &dw, &dkb, &dq, &dk_rows}) rows_k->resize(c * dk);
    for (auto* rows_v : {&d_out, &dvp, &dvb, &dv_rows}) rows_v->resize(c * dv);
    for (auto* square : {&dm, &da}) square->resize(c * c);
    for (auto* row : {&dgamma, &dbeta}) row->resize(c);
    ds_before.resize(size_t(dk) * dv);
  }

  // The GEMM-shaped products, from dO (d_out), dS (ds) and the chunk's intermediates.
  void products(const Chunk<T>& c, const T* state, const T* ds) {
    const int n = c.n;
    const ExecContext& x = c.exact;
    gemm<T>(x, dvp.data(), c.m.data(), d_out.data(), n, dv, n, true, false, 1, 0);
    gemm<T>(x, dvp.data(), c.kr.data(), ds, n, dv, dk, false, false, 1, 1);
    gemm<T>(x, dqg.data(), d_out.data(), state, n, dk, dv, false, true, 1, 0);
    gemm<T>(x, dm.data(), d_out.data(), c.vp.data(), n, n, dv, false, true, 1, 0);
    gemm<T>(x, dkr.data(), c.vp.data(), ds, n, dk, dv, false, true, 1, 0);
    gemm<T>(x, dw.data(), dvp.data(), state, n, dk, dv, false, true, -1, 0);
    gemm<T>(x, ds_before.data(), c.qg.data(), d_out.data(), dk, dv, n, true, false, 1, 0);
    const T carried = T(std::exp(c.gamma[n - 1]));
    for (int64_t i = 0; i < int64_t(dk) * dv; ++i) ds_before[i] += carried * ds[i];
    gemm<T>(x, ds_before.data(), c.w.data(), dvp.data(), dk, dv, n, true, false, -1, 1);
    gemm<T>(x, dvb.data(), c.t.data(), dvp.data(), n, dv, n, true, false, 1, 0);
    gemm<T>(x, dkb.data(), c.t.data(), dw.data(), n, dk, n, true, false, 1, 0);
    gemm<T>(x, da.data(), dvb.data(), c.u.data(), n, n, dv, false, true, -1, 0);
    gemm<T>(x, da.data(), dkb.data(), c.w.data(), n, n, dk, false, true, -1, 1);
    dgamma[n - 1] += row_dot(ds, state, dk * dv) * carried;  // S_next's exp(gamma_last) S
  }

  // Through M = (Q K^T) o Gamma and A = (diag(beta) K K^T) o Gamma: dm and da become the
  // gradients of Q K^T and K K^T's uses; gamma's share goes to dgamma.
  void through_masks(const Chunk<T>& c) {
    const int n = c.n;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        const int64_t ij = int64_t(i) * n + j;
        const T decay = j <= i ? T(std::exp(c.gamma[i] - c.gamma[j])) : T(0);
        const T from_m = dm[ij] * c.m[ij], from_a = j < i ? da[ij] * c.a[ij] : T(0);
        dgamma[i] += from_m + from_a;
        dgamma[j] -= from_m + from_a;
        dm[ij] *= decay;
        const T e = j < i ? da[ij] * decay : T(0);
        dbeta[i] += e * c.kk[ij];
        da[ij] = c.beta[i] * e;  // F = diag(beta) E; K K^T's gradient is F + F^T
      }
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < i; ++j) da[int64_t(j) * n + i] = da[int64_t(i) * n + j];
  }

  // Rows scaled by the decays and beta: their shares of dq, dk, dv, dbeta and dgamma.
  void through_scalings(const Chunk<T>& c) {
    const int n = c.n;
    for (int i = 0; i < n; ++i) {
      T* q_row = dq.data() + i * dk;
      T* k_row = dk_rows.data() + i * dk;
      const T from_out = row_dot(dkr.data() + i * dk, c.kr.data() + i * dk, dk);
      dgamma[n - 1] += from_out;
      dgamma[i] -= from_out;
      dgamma[i] += row_dot(dqg.data() + i * dk, c.qg.data() + i * dk, dk);
      dgamma[i] += row_dot(dkb.data() + i * dk, c.kb.data() + i * dk, dk);
      dbeta[i] += row_dot(dvb.data() + i * dv, c.v.data() + i * dv, dv);
      dbeta[i] += c.decay_in[i] * row_dot(dkb.data() + i * dk, c.k.data() + i * dk, dk);
      for (int d = 0; d < dk; ++d) {
        q_row[d] += c.decay_in[i] * dqg[i * dk + d];
        k_row[d] += c.decay_out[i] * dkr[i * dk + d] + c.beta[i] * c.decay_in[i] * dkb[i * dk + d];
      }
      for (int d = 0; d < dv; ++d) dv_rows[i * dv + d] = c.beta[i] * dvb[i * dv + d];
    }
  }

  // One chunk: on entry ds is dL/d(the state after it), on exit dL/d(the state before it).
  void run(const Chunk<T>& c, const T* state, T* ds) {
    const int n = c.n;
    std::fill(dgamma.begin(), dgamma.begin() + n, T(0));
    std::fill(dbeta.begin(), dbeta.begin() + n, T(0));
    products(c, state, ds);
    through_masks(c);
    gemm<T>(c.exact, dq.data(), dm.data(), c.k.data(), n, dk, n, false, false, 1, 0);
    gemm<T>(c.exact, dk_rows.data(), dm.data(), c.q.data(), n, dk, n, true, false, 1, 0);
    gemm<T>(c.exact, dk_rows.data(), da.data(), c.k.data(), n, dk, n, false, false, 1, 1);
    through_scalings(c);
    for (int i = n - 2; i >= 0; --i) dgamma[i] += dgamma[i + 1];  // gamma_i = sum_{j<=i} g_j
    std::copy(ds_before.begin(), ds_before.end(), ds);
  }

  int dk, dv;
  std::vector<T> d_out, dvp, dqg, dm, dkr, dw, dvb, dkb, da, dgamma, dbeta, ds_before;
  std::vector<T> dq, dk_rows, dv_rows;  // the chunk's gradients of q, k, v rows
};

template <typename T>
void scatter_add(T* dst, int64_t stride, const T* rows, int n, int width) {
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < width; ++c) dst[i * stride + c] += rows[int64_t(i) * width + c];
}

}  // namespace

template <typename T>
void delta_rule_chunked_backward(const ExecContext& x, const DeltaRuleShape& s,
                                 const DeltaRuleInputs<T>& in, const T* initial_state,
                                 const T* d_out, const DeltaRuleGradients<T>& d) {
  check_delta_rule_shape(s);
  const int dk = s.key_dim, dv = s.value_dim, r = s.ratio(), chunks = s.chunks();
  const int64_t items = int64_t(s.sequences) * s.key_heads, head_size = int64_t(dk) * dv;
#pragma omp parallel
  {
    const DenormalsFlushed flushed(std::is_same_v<T, float>);  // util/denormals.h
    // One value head's chunks, prepared once by the forward sweep and kept for the reverse one,
    // with the state at each chunk's start.
    std::vector<Chunk<T>> prepared(size_t(chunks), Chunk<T>(s, x));
    std::vector<T> starts(size_t(chunks * head_size)), running(head_size), ds(head_size);
    ChunkGradient<T> grad(s);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int b = int(item / s.key_heads), kh = int(item % s.key_heads);
      const int64_t first = int64_t(b) * s.tokens;
      for (int t = 0; t < s.tokens; ++t) {
        std::fill_n(d.q + (first + t) * s.qk_stride + int64_t(kh) * dk, dk, T(0));
        std::fill_n(d.k + (first + t) * s.qk_stride + int64_t(kh) * dk, dk, T(0));
      }
      for (int j = 0; j < r; ++j) {
        const int h = s.value_head(kh, j);
        const int64_t head = int64_t(b) * s.value_heads + h;
        if (initial_state)
          std::copy_n(initial_state + head * head_size, head_size, running.data());
        else
          std::fill(running.begin(), running.end(), T(0));
        for (int c = 0; c < chunks; ++c) {  // the forward sweep: states and V'
          std::copy_n(running.data(), head_size, starts.data() + c * head_size);
          const int n = std::min(kDeltaRuleChunk, s.tokens - c * kDeltaRuleChunk);
          prepared[c].prepare(in, first + int64_t(c) * kDeltaRuleChunk, n, h);
          prepared[c].corrected_values(running.data());
          prepared[c].advance(running.data());
        }
        T* head_ds = d.state ? d.state + head * head_size : nullptr;
        if (head_ds)
          std::copy_n(head_ds, head_size, ds.data());
        else
          std::fill(ds.begin(), ds.end(), T(0));
        for (int c = chunks - 1; c >= 0; --c) {
          const Chunk<T>& chunk = prepared[c];
          const int64_t row0 = first + int64_t(c) * kDeltaRuleChunk;
          const int n = chunk.n;
          for (int i = 0; i < n; ++i)
            std::copy_n(d_out + (row0 + i) * s.out_stride + int64_t(h) * dv, dv,
                        grad.d_out.data() + int64_t(i) * dv);
          grad.run(chunk, starts.data() + c * head_size, ds.data());
          scatter_add(d.q + row0 * s.qk_stride + int64_t(kh) * dk, s.qk_stride, grad.dq.data(), n,
                      dk);
          scatter_add(d.k + row0 * s.qk_stride + int64_t(kh) * dk, s.qk_stride, grad.dk_rows.data(),
                      n, dk);
          for (int i = 0; i < n; ++i) {
            std::copy_n(grad.dv_rows.data() + int64_t(i) * dv, dv,
                        d.v + (row0 + i) * s.v_stride + int64_t(h) * dv);
            d.g[(row0 + i) * s.gate_stride + h] = grad.dgamma[i];
            d.beta[(row0 + i) * s.gate_stride + h] = grad.dbeta[i];
          }
        }
        if (head_ds) std::copy_n(ds.data(), head_size, head_ds);
      }
    }
  }
}

template void delta_rule_chunked_backward<float>(const ExecContext&, const DeltaRuleShape&,
                                                 const DeltaRuleInputs<float>&, const float*,
                                                 const float*, const DeltaRuleGradients<float>&);
template void delta_rule_chunked_backward<double>(const ExecContext&, const DeltaRuleShape&,
                                                  const DeltaRuleInputs<double>&, const double*,
                                                  const double*, const DeltaRuleGradients<double>&);

}  // namespace gattn
