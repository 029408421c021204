#include "model/train_state.h"

#include <algorithm>
#include <cmath>

#include "ops/embedding.h"
#include "ops/matmul.h"
#include "ops/quantize_blocks.h"
#include "ops/rmsnorm.h"
#include "util/error.h"

namespace gattn {

void TrainState::set_exec(const ExecContext& exec) {
  check_gemm_precision(exec.precision);
  exec_ = exec;
}

int64_t count_targets(const Batch& batch) {
  int64_t n = 0;
  for (int64_t i = 0; i < int64_t(batch.batch) * batch.seq_len; ++i) n += batch.targets[i] >= 0;
  return n;
}

Gradients& TrainState::grads() {
  if (!grads_) grads_ = std::make_unique<Gradients>(w_.layout());
  return *grads_;
}

void TrainState::plan(int batch, int seq_len, bool backward) {
  const Config& c = w_.config();
  if (batch < 1 || seq_len < 1) fail("batch shape must be positive, got ", batch, " x ", seq_len);
  if (seq_len > c.max_position_embeddings)
    fail("sequence length ", seq_len, " exceeds max_position_embeddings (",
         c.max_position_embeddings, ")");
  const int64_t N = int64_t(batch) * seq_len;
  if (batch != batch_ || seq_len != seq_len_) {
    positions_.resize(N);
    for (int64_t r = 0; r < N; ++r) positions_[r] = int32_t(r % seq_len);
  }
  batch_ = batch;
  seq_len_ = seq_len;
  // Buffers are addressed by row, so a plan for more rows serves fewer without reallocating.
  if (N <= capacity_rows_ && (planned_backward_ || !backward)) return;
  planned_backward_ = backward;
  capacity_rows_ = N;
  acts_.clear();
  scratch_.clear();
  plan_pass_buffers(acts_, w_, N, buffers_);
  acts_.allocate();

  // Logits of 2^22 values a chunk (1,024 rows at vocab 4,096), but at least 256 rows: thinner
  // chunks make the head's GEMMs slow at a large vocabulary (151,936: 155 MB of logits).
  chunk_rows_ =
      int(std::min<int64_t>(N, std::max<int64_t>(256, (int64_t(1) << 22) / c.vocab_size)));
  scratch_.plan(&logits_chunk_, int64_t(chunk_rows_) * c.vocab_size, "logits chunk");
  if (backward) plan_backward_buffers(scratch_, w_, N, s_);
  scratch_.allocate();
}

float TrainState::max_abs_hidden() const {
  const Config& c = w_.config();
  float max = 0;
  const int64_t count = int64_t(batch_rows()) * c.hidden_size;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const float* output = buffers_.block_output(2 * l + 1);
    for (int64_t i = 0; i < count; ++i) max = std::max(max, std::abs(output[i]));
  }
  return max;
}

void TrainState::require_f32_weights(const char* what) const {
  if (w_.storage() != WeightDtype::f32)
    fail(what, " needs the model's weights in f32; these are stored as ",
         weight_dtype_name(w_.storage()), " (an inference model: load it with f32 weights)");
}

LossSum TrainState::typed_head_loss(const int32_t* targets, double* token_nats) {
  const Config& c = w_.config();
  const int V = c.vocab_size, rows = batch_rows();
  check_targets(targets, rows, V);
  // W8A8: the head's input rounded once for the whole pass (one scale, as every projection's),
  // not per chunk.
  const float* hidden = buffers_.final_out;
  ExecContext exec = exec_;
  AlignedFloats rounded;
  if (exec.int8_projection_inputs) {
    rounded.resize(size_t(rows) * c.hidden_size);
    round_to_int8_steps(hidden, int64_t(rows) * c.hidden_size, rounded.data());
    hidden = rounded.data();
    exec.int8_projection_inputs = false;
  }
  LossSum sum;
  for (int r0 = 0; r0 < rows; r0 += chunk_rows_) {
    const int nc = std::min(chunk_rows_, rows - r0);
    project(exec, w_, w_.layout().lm_head, logits_chunk_, hidden + int64_t(r0) * c.hidden_size, nc,
            c.hidden_size, V);
    for (int i = 0; i < nc; ++i) {
      const int32_t target = targets[r0 + i];
      double nats = 0, exp_sum;
      if (target >= 0) {
        nats = softmax_cross_entropy_row(logits_chunk_ + int64_t(i) * V, V, target, &exp_sum);
        sum.nats += nats;
        ++sum.tokens;
      }
      if (token_nats) token_nats[r0 + i] = nats;
    }
  }
  return sum;
}

LossSum TrainState::forward(const Batch& batch, float* logits, double* token_nats) {
  plan(batch.batch, batch.seq_len, false);
  forward_blocks(context(), batch.ids, buffers_);
  const Config& c = w_.config();
  if (logits)
    project(exec_, w_, w_.layout().lm_head, logits, buffers_.final_out, batch_rows(), c.hidden_size,
            c.vocab_size);
  if (!batch.targets) return {};
  if (w_.storage() != WeightDtype::f32 || exec_.int8_projection_inputs)
    return typed_head_loss(batch.targets, token_nats);
  const float* head = w_.at(w_.layout().lm_head);
  return lm_head_cross_entropy<float>(exec_, nullptr, nullptr, logits_chunk_, buffers_.final_out,
                                      head, batch.targets, batch_rows(), c.hidden_size,
                                      c.vocab_size, chunk_rows_, 0.0f, token_nats);
}

LossSum TrainState::forward_backward(const Batch& batch, float grad_scale) {
  GATTN_ASSERT(batch.targets, "forward_backward needs targets");
  require_f32_weights("training");
  GATTN_ASSERT(!exec_.int8_projection_inputs, "int8 projection inputs are for forward passes");
  GATTN_ASSERT(!hooks_ || !hooks_->changes_tensors(),
               "hooks that change tensors are for forward passes only");
  Gradients& g = grads();
  plan(batch.batch, batch.seq_len, true);
  const PassContext pass = context();
  forward_blocks(pass, batch.ids, buffers_);
  const Config& c = w_.config();
  const ParamLayout& layout = w_.layout();
  OpSections ops(exec_.profile);
  ops.next("lm head and cross-entropy (forward and backward)");
  const LossSum loss = lm_head_cross_entropy<float>(
      exec_, s_.d_hidden, g.at(layout.lm_head), logits_chunk_, buffers_.final_out,
      w_.at(layout.lm_head), batch.targets, batch_rows(), c.hidden_size, c.vocab_size, chunk_rows_,
      grad_scale);
  ops.next(nullptr);
  if (ready_) {
    if (layout.lm_head != layout.embed)
      ready_->complete(layout.lm_head, layout.lm_head + int64_t(c.vocab_size) * c.hidden_size);
    ready_->embedding_complete_but_ids();
  }
  if (balance_) balance_->end_forward();
  backward_blocks(pass, batch.ids, buffers_, s_, g, ready_);
  return loss;
}

}  // namespace gattn
