// The LM head fused with softmax cross-entropy: logits are made a chunk of rows at a time and
// never stored for the whole batch; the gradient is formed in the same pass.
#pragma once
#include <cstdint>

#include "ops/exec_context.h"

namespace gattn {

struct LossSum {
  double nats = 0;     // summed over counted targets
  int64_t tokens = 0;  // targets >= 0
};

// Fails, naming the first, where a target lies outside [0, vocab) and is not -1.
void check_targets(const int32_t* targets, int64_t rows, int vocab);

// One row's loss logsumexp(logit) - logit[target], target in [0, vocab). Leaves exp(logit - max)
// in `logit` (the softmax's numerators) and their sum in *exp_sum, added in order (the same bits
// at every vector width and thread count).
template <typename T>
double softmax_cross_entropy_row(T* logit, int vocab, int32_t target, double* exp_sum);

// Sum over rows with target >= 0 of logsumexp(x w^T) - (x w^T)[target]; target -1 is ignored.
// logits_scratch holds [chunk_rows, vocab]. With d_x non-null it also writes
// d_x = grad_scale * dL/dx and adds grad_scale * dL/dw to d_w. row_nats, when given, receives
// each row's loss (0 for ignored rows).
template <typename T>
LossSum lm_head_cross_entropy(const ExecContext& exec, T* d_x, T* d_w, T* logits_scratch,
                              const T* x, const T* w, const int32_t* targets, int64_t rows, int dim,
                              int vocab, int chunk_rows, T grad_scale, double* row_nats = nullptr);

}  // namespace gattn
