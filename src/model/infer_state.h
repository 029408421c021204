// What one generating sequence needs: its KV cache (every layer's keys and values for the
// positions seen so far, GQA-compact) and the activations of one chunk of new tokens. Prefill
// runs the prompt in chunks through the same layer code as training; decode runs chunks of one.
#pragma once
#include <cstdint>

#include "model/pass.h"
#include "model/weights.h"

namespace gattn {

class InferState {
 public:
  // context: positions the cache holds (at most max_position_embeddings); max_chunk: the most
  // tokens one forward() call takes.
  InferState(const Weights& weights, int context, int max_chunk);
  InferState(const InferState&) = delete;  // holds pointers into its own arenas
  InferState& operator=(const InferState&) = delete;

  int length() const { return length_; }  // positions in the cache
  int context() const { return cache_.capacity; }
  void reset() { length_ = 0; }
  // Times each op of the following passes into `profile` (null: stop timing).
  void set_profile(OpProfile* profile) { profile_ = profile; }

  // Runs `count` tokens at positions length() .. length() + count - 1, appending their keys and
  // values to the cache; writes their logits [count, vocab] when asked.
  void forward(const int32_t* ids, int count, float* logits);
  // The same, with the logits [vocab] of the last token only (prefill and decode).
  void forward_last(const int32_t* ids, int count, float* logits);
  // The final hidden states (after the last norm) of the last forward()'s rows.
  const float* final_hidden() const { return buffers_.final_out; }

 private:
  void run(const int32_t* ids, int count);
  // logits [count, vocab] of the last run's rows first .. first + count - 1.
  void lm_head(int first, int count, float* logits);

  const Weights& w_;
  int max_chunk_;
  int length_ = 0;
  KvCache cache_;
  Arena acts_;
  PassBuffers buffers_;
  std::vector<int32_t> positions_;
  OpProfile* profile_ = nullptr;
};

}  // namespace gattn
