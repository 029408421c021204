#include "train/step.h"

#include <cmath>
#include <optional>

#include "util/error.h"

namespace gattn {

namespace {

// Unsets the state's router balance however the step ends.
struct BalanceScope {
  BalanceScope(TrainState& s, RouterBalance* balance) : state(s) { s.set_router_balance(balance); }
  ~BalanceScope() { state.set_router_balance(nullptr); }
  TrainState& state;
};

}  // namespace

StepResult optimizer_step(Weights& weights, TrainState& state, AdamW& optimizer, const StepBatch& b,
                          double lr, double grad_clip, const RouterLoss& router) {
  if (&state.weights() != &weights) fail("optimizer_step: the state runs other weights");
  const int64_t rows = int64_t(b.micro_batches) * b.batch;
  const int64_t step_targets = count_targets({b.ids, b.targets, int(rows), b.seq_len});
  auto micro_batch = [&](int micro, const int32_t* targets) {
    const int64_t offset = int64_t(micro) * b.batch * b.seq_len;
    return Batch{b.ids + offset, targets ? targets + offset : nullptr, b.batch, b.seq_len};
  };
  const Config& c = weights.config();
  std::optional<RouterBalance> balance;
  if (router.coef > 0 && c.has_moe_layers())
    balance.emplace(c.num_experts, router.coef, 1.0 / b.micro_batches);
  const BalanceScope scope(state, balance ? &*balance : nullptr);
  if (balance && router.scope == RouterLossScope::global && b.micro_batches > 1) {
    for (int micro = 0; micro < b.micro_batches; ++micro)
      state.forward(micro_batch(micro, nullptr));
    balance->freeze();
  }
  state.zero_grads();
  LossSum loss;
  for (int micro = 0; micro < b.micro_batches; ++micro) {
    const LossSum part =
        state.forward_backward(micro_batch(micro, b.targets), 1.0f / float(step_targets));
    loss.nats += part.nats;
    loss.tokens += part.tokens;
  }
  StepResult r;
  r.loss = loss.nats / double(loss.tokens);
  if (balance) r.router_aux_loss = balance->loss();
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
