// One generating sequence: a BatchedInferState of one slot. Prefill runs the prompt in chunks
// through the same blocks as training; decode runs chunks of one.
#pragma once
#include <cstdint>

#include "model/batched_infer_state.h"

namespace gattn {

class InferState {
 public:
  // context: positions the decode memory holds (at most max_position_embeddings); max_chunk: the
  // most tokens one forward() call takes.
  InferState(const Weights& weights, int context, int max_chunk,
             CacheDtype keys_values = CacheDtype::f32)
      : state_(weights, 1, context, max_chunk, keys_values) {}

  int length() const { return state_.length(0); }  // positions in the decode memory
  int context() const { return state_.context(); }
  void reset() { state_.reset(0); }
  // How the following passes compute and where they report (precision, profile, GEMM log).
  void set_exec(const ExecContext& exec) { state_.set_exec(exec); }

  // Runs `count` tokens at positions length() .. length() + count - 1, appending them to the
  // decode memory; writes their logits [count, vocab] when asked.
  void forward(const int32_t* ids, int count, float* logits) {
    state_.prefill(0, ids, count, logits, true);
  }
  // The same, with the logits [vocab] of the last token only (prefill and decode).
  void forward_last(const int32_t* ids, int count, float* logits) {
    state_.prefill(0, ids, count, logits, false);
  }
  // The final hidden states (after the last norm) of the last forward()'s rows.
  const float* final_hidden() const { return state_.final_hidden(); }
  const BatchedInferState& batched() const { return state_; }

 private:
  BatchedInferState state_;
};

}  // namespace gattn
