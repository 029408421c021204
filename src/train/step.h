// One optimizer step: gradients of the mean loss over every target token of the step (its
// micro-batches accumulated), the global norm, clipping, and AdamW. Used by the trainer and the
// benchmark, so both time the same work.
#pragma once
#include <cstdint>

#include "model/router_balance.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "train/adamw.h"

namespace gattn {

struct StepBatch {
  const int32_t* ids;      // [micro_batches * batch, seq_len]
  const int32_t* targets;  // same shape, -1 = no target
  int micro_batches;
  int batch;
  int seq_len;
};

struct StepResult {
  double loss = 0;       // mean nats per target token
  double grad_norm = 0;  // before clipping
  bool updated = false;  // false when the loss or the gradient was not finite (no update made)
  double router_aux_loss = 0;  // the load-balancing loss (model/router_balance.h), not in `loss`
};

// Gradients in `state`, the update in `weights` (which `state` reads).
// A model with MoE layers and router.coef > 0 adds the load-balancing loss of router.scope.
StepResult optimizer_step(Weights& weights, TrainState& state, AdamW& optimizer,
                          const StepBatch& batch, double lr, double grad_clip,
                          const RouterLoss& router = {});

}  // namespace gattn
