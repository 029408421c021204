#include "train/step.h"

#include <cmath>

#include "util/error.h"

namespace gattn {

StepResult optimizer_step(Weights& weights, TrainState& state, AdamW& optimizer, const StepBatch& b,
                          double lr, double grad_clip) {
  if (&state.weights() != &weights) fail("optimizer_step: the state runs other weights");
  const int64_t rows = int64_t(b.micro_batches) * b.batch;
  const int64_t step_targets = count_targets({b.ids, b.targets, int(rows), b.seq_len});
  state.zero_grads();
  LossSum loss;
  for (int micro = 0; micro < b.micro_batches; ++micro) {
    const int64_t offset = int64_t(micro) * b.batch * b.seq_len;
    const LossSum part = state.forward_backward(
        {b.ids + offset, b.targets + offset, b.batch, b.seq_len}, 1.0f / float(step_targets));
    loss.nats += part.nats;
    loss.tokens += part.tokens;
  }
  StepResult r;
  r.loss = loss.nats / double(loss.tokens);
  zero_frozen_gradients(weights.layout(), state.grads());
  r.grad_norm = global_norm(state.grads());
  r.updated = std::isfinite(r.loss) && std::isfinite(r.grad_norm);
  if (r.updated) {
    if (grad_clip > 0) clip_gradients(state.grads(), r.grad_norm, grad_clip);
    optimizer.step(weights, state.grads(), lr);
  }
  return r;
}

}  // namespace gattn
