#include "ops/cross_entropy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/fast_exp.h"
#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {

void check_targets(const int32_t* targets, int64_t rows, int vocab) {
  for (int64_t n = 0; n < rows; ++n)
    if (targets[n] < -1 || targets[n] >= vocab)
      fail("target ", targets[n], " at position ", n, " is outside [0, ", vocab, ") and not -1");
}

template <typename T>
double softmax_cross_entropy_row(T* logit, int vocab, int32_t target, double* exp_sum) {
  T max = logit[0];
#pragma omp simd reduction(max : max)
  for (int v = 0; v < vocab; ++v) max = std::max(max, logit[v]);
  const T target_logit = logit[target];
  for (int v = 0; v < vocab; ++v) logit[v] = fast_exp(logit[v] - max);
  double sum = 0;
  for (int v = 0; v < vocab; ++v) sum += double(logit[v]);
  *exp_sum = sum;
  return double(max) + std::log(sum) - double(target_logit);
}

template <typename T>
LossSum lm_head_cross_entropy(const ExecContext& exec, T* d_x, T* d_w, T* logits_scratch,
                              const T* x, const T* w, const int32_t* targets, int64_t rows, int dim,
                              int vocab, int chunk_rows, T grad_scale, double* row_nats_out) {
  check_targets(targets, rows, vocab);
  LossSum total;
  std::vector<double> row_nats(chunk_rows);
  // Each of these is read by two or more GEMMs (in native bf16, rounded once; storage reused).
  thread_local SharedOperand<T> head, chunk, d_logits;
  head.prepare(exec, w, vocab, dim);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int nc = int(std::min<int64_t>(chunk_rows, rows - r0));
    chunk.prepare(exec, x + r0 * dim, nc, dim);
    if (head.rounded())
      matmul<T>(exec, logits_scratch, chunk, head, nc, vocab, dim, false, true);
    else  // fp32 takes linear_forward's small-batch kernel for a short last chunk
      linear_forward<T>(exec, logits_scratch, chunk.values(), w, nc, dim, vocab);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < nc; ++i) {
      T* logit = logits_scratch + int64_t(i) * vocab;
      const int32_t target = targets[r0 + i];
      row_nats[i] = 0;
      if (target < 0) {
        if (d_x) std::fill_n(logit, vocab, T(0));
        continue;
      }
      double sum;  // the exponentials stay in the row for the gradient
      row_nats[i] = softmax_cross_entropy_row(logit, vocab, target, &sum);
      if (d_x) {  // softmax - one_hot, times grad_scale
        const T scale = T(double(grad_scale) / sum);
        for (int v = 0; v < vocab; ++v) logit[v] *= scale;
        logit[target] -= grad_scale;
      }
    }
    for (int i = 0; i < nc; ++i) {
      if (row_nats_out) row_nats_out[r0 + i] = row_nats[i];
      total.nats += row_nats[i];
      total.tokens += targets[r0 + i] >= 0;
    }
    if (d_x) {  // d_w += d_logits^T chunk; d_x = d_logits head
      d_logits.prepare(exec, logits_scratch, nc, vocab);
      if (d_w) matmul<T>(exec, d_w, d_logits, chunk, vocab, dim, nc, true, false, 1, 1);
      matmul<T>(exec, d_x + r0 * dim, d_logits, head, nc, dim, vocab, false, false);
    }
  }
  return total;
}

template double softmax_cross_entropy_row<float>(float*, int, int32_t, double*);
template LossSum lm_head_cross_entropy<float>(const ExecContext&, float*, float*, float*,
                                              const float*, const float*, const int32_t*, int64_t,
                                              int, int, int, float, double*);
template LossSum lm_head_cross_entropy<double>(const ExecContext&, double*, double*, double*,
                                               const double*, const double*, const int32_t*,
                                               int64_t, int, int, int, double, double*);

}  // namespace gattn
