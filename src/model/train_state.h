// What one user of a model needs to run rectangular batches of whole sequences through it:
// activations, the backward pass's scratch and the gradients, planned for a batch shape. Training
// runs forward_backward(); evaluation and analysis run forward() with hooks (model/hooks.h).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/pass.h"
#include "model/router_balance.h"
#include "model/weights.h"
#include "ops/cross_entropy.h"

namespace gattn {

struct Batch {
  const int32_t* ids;      // [batch, seq_len]
  const int32_t* targets;  // [batch, seq_len], -1 = no target; may be null for forward()
  int batch;
  int seq_len;
};

class TrainState {
 public:
  explicit TrainState(const Weights& weights) : w_(weights) {}
  TrainState(const TrainState&) = delete;  // holds pointers into its own arenas
  TrainState& operator=(const TrainState&) = delete;

  const Weights& weights() const { return w_; }

  // Forward only. Returns the summed loss over targets (when given); writes logits
  // [batch * seq_len, vocab] and each position's loss (0 where no target) when asked.
  LossSum forward(const Batch& batch, float* logits = nullptr, double* token_nats = nullptr);
  // Forward and backward: adds the gradient of grad_scale * (summed loss) to grads().
  // For the mean loss of one batch, grad_scale = 1 / (number of targets).
  LossSum forward_backward(const Batch& batch, float grad_scale);
  Gradients& grads();  // allocated (zero) on first use
  void zero_grads() { grads().zero(); }
  // The hooks of the following passes (null: none): what analysis reads, interventions.
  // forward_backward() refuses hooks that change tensors.
  void set_hooks(PassHooks* hooks) { hooks_ = hooks; }
  // The load-balancing loss of the following passes' MoE blocks (null: none; see
  // model/router_balance.h): forward() adds rows to it, forward_backward() ends each pass's
  // forward before its backward.
  void set_router_balance(RouterBalance* balance) { balance_ = balance; }
  // Told of each range of grads() the following forward_backward() passes complete (null: none).
  void set_gradient_ready(GradientReady* ready) { ready_ = ready; }
  // How the following passes compute and where they report (precision, profile, GEMM log);
  // an Error for a precision this CPU cannot run.
  void set_exec(const ExecContext& exec);
  const ExecContext& exec() const { return exec_; }
  // max |hidden state| over every layer's output in the last forward pass (massive activations).
  float max_abs_hidden() const;

  int batch_rows() const { return batch_ * seq_len_; }
  int batch_seq_len() const { return seq_len_; }

  // The memory plan of the last batch shape: what the backward pass keeps, and the scratch it
  // works in.
  const Arena& activations() const { return acts_; }
  const Arena& scratch() const { return scratch_; }

 private:
  void plan(int batch, int seq_len, bool backward);
  void require_f32_weights(const char* what) const;  // an Error naming `what` otherwise
  // forward()'s loss for weights not stored as f32 (bf16, a GGUF file's blocks), or with the
  // projections' inputs rounded (ExecContext::int8_projection_inputs): each chunk's logits
  // through project(), then log-softmax.
  LossSum typed_head_loss(const int32_t* targets, double* token_nats);
  PassContext context() const {
    return {.weights = w_,
            .exec = exec_,
            .batch = batch_,
            .seq_len = seq_len_,
            .positions = positions_.data(),
            .hooks = hooks_,
            .router_balance = balance_};
  }

  const Weights& w_;
  std::unique_ptr<Gradients> grads_;
  ExecContext exec_;
  PassHooks* hooks_ = nullptr;
  RouterBalance* balance_ = nullptr;
  GradientReady* ready_ = nullptr;

  int batch_ = 0, seq_len_ = 0;
  int64_t capacity_rows_ = 0;
  bool planned_backward_ = false;
  std::vector<int32_t> positions_;  // [rows]: t of row b * seq_len + t
  Arena acts_, scratch_;
  PassBuffers buffers_;
  float* logits_chunk_ = nullptr;
  int chunk_rows_ = 0;
  BackwardBuffers s_;
};

int64_t count_targets(const Batch& batch);

}  // namespace gattn
