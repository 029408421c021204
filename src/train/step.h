// One optimizer step: gradients of the mean loss over every target token of the step (its
// micro-batches accumulated), the global norm, clipping, and AdamW. Used by the trainer and the
// benchmark, so both time the same work.
#pragma once
#include <cstdint>

#include "model/router_balance.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "train/adamw.h"
#include "train/communicator.h"

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
  double max_abs_hidden = 0;   // TrainState::max_abs_hidden() of the step's last micro-batch
  // Seconds spent waiting for the gradients' reduction over the ranks after the backward pass
  // (all of it when not overlapped with the pass).
  double reduction_wait_s = 0;
};

// Gradients in `state`, the update in `weights` (which `state` reads).
// A model with MoE layers and router.coef > 0 adds the load-balancing loss of router.scope.
// The micro-batches' gradients combine as train/gradient_tree.h says. With more than one rank,
// every rank is given the whole step's batch (the target count is the step's) and computes its
// block of micro-batches (rank r of N: [r M/N, (r+1) M/N), M/N and N powers of two); `comm`
// adds the blocks' gradients and every rank makes the same update; with `overlap_reduction`
// they are added while the last micro-batch's backward pass goes on (train/backward_reduction.h),
// with the same bits.
StepResult optimizer_step(Weights& weights, TrainState& state, AdamW& optimizer,
                          const StepBatch& batch, double lr, double grad_clip,
                          const RouterLoss& router = {}, Communicator& comm = local_communicator(),
                          bool overlap_reduction = false);

}  // namespace gattn
