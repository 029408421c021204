// One chunk of one value head of the chunked gated delta rule (ops/delta_rule.h), shared by its
// forward and backward passes. With n <= kDeltaRuleChunk rows, gamma the running sum of g inside
// the chunk, Gamma_ij = exp(gamma_i - gamma_j) for i >= j (0 above the diagonal):
//   A = strictly lower part of (diag(beta) K K^T) o Gamma,   T = (I + A)^-1
//   U = T diag(beta) V,   W = T diag(beta exp(gamma)) K,   M = (Q K^T) o Gamma
// and, given the state S at the chunk's start,
//   V' = U - W S,   O = diag(exp(gamma)) Q S + M V',
//   S_next = exp(gamma_last) S + (diag(exp(gamma_last - gamma)) K)^T V'.
#pragma once
#include <vector>

#include "ops/delta_rule.h"

namespace gattn::delta_rule_detail {

template <typename T>
class Chunk {
 public:
  Chunk(const DeltaRuleShape& s, const ExecContext& x);

  // Gathers rows [row0, row0 + n) of value head h (and its key head) and computes the
  // intermediates that do not depend on the state: gamma, its decays, A, T, M, U, W.
  void prepare(const DeltaRuleInputs<T>& in, int64_t row0, int n, int h);
  // V' from the state S [key_dim, value_dim]; then out (rows of out_stride) and S <- S_next.
  void corrected_values(const T* state);
  void output(const T* state, T* out, int64_t out_stride);
  void advance(T* state) const;

  DeltaRuleShape shape;
  int n = 0, dk = 0, dv = 0;
  ExecContext exact;           // the caller's context, fp32 GEMMs
  std::vector<T> q, k, v;      // n x dk, n x dk, n x dv, packed
  // n: gamma in double whatever T: the decays exp(gamma_i - gamma_j) of a fast-decaying head
  // subtract running sums of up to 64 log decays, which in float lose their low digits.
  std::vector<double> gamma;
  std::vector<T> beta;
  std::vector<T> decay_in;     // exp(gamma_i)
  std::vector<T> decay_out;    // exp(gamma_last - gamma_i)
  std::vector<T> a, t, kk, m;  // n x n: A, (I + A)^-1, K K^T, M
  std::vector<T> u, w, vp;     // n x dv, n x dk, n x dv: U, W, V'
  std::vector<T> qg, kr,
      kb;             // n x dk: diag(exp(gamma)) Q, diag(decay_out) K, diag(beta exp(gamma)) K
  std::vector<T> vb;  // n x dv: diag(beta) V

 private:
  void gather(const DeltaRuleInputs<T>& in, int64_t row0, int h);
  void decays();
  void solve_unit_lower();
  void state_free_products();
};

// c = a b (+ c), packed row-major operands with the given transposes, in x's context's fp32.
template <typename T>
void gemm(const ExecContext& x, T* c, const T* a, const T* b, int m, int n, int k, bool ta, bool tb,
          T alpha, T beta);

}  // namespace gattn::delta_rule_detail
