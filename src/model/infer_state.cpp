#include "model/infer_state.h"

#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {

InferState::InferState(const Weights& weights, int context, int max_chunk)
    : w_(weights), max_chunk_(max_chunk), positions_(max_chunk) {
  const Config& c = w_.config();
  if (context < 1 || context > c.max_position_embeddings)
    fail("inference context ", context,
         " is outside [1, max_position_embeddings = ", c.max_position_embeddings, "]");
  if (max_chunk < 1) fail("inference chunk must hold at least one token, got ", max_chunk);
  allocate_kv_cache(cache_, c, 1, context);
  plan_pass_buffers(acts_, w_, max_chunk, buffers_);
  acts_.allocate();
}

void InferState::run(const int32_t* ids, int count) {
  if (count < 1 || count > max_chunk_)
    fail("inference: ", count, " tokens in one chunk, expected 1 to ", max_chunk_);
  if (length_ + count > cache_.capacity)
    fail("inference: ", length_ + count, " positions exceed the context of ", cache_.capacity);
  for (int i = 0; i < count; ++i) positions_[i] = length_ + i;
  const PassContext pass{.weights = w_,
                         .batch = 1,
                         .seq_len = count,
                         .positions = positions_.data(),
                         .cache = &cache_,
                         .profile = profile_};
  forward_layers(pass, ids, buffers_);
  length_ += count;
}

void InferState::lm_head(int first, int count, float* logits) {
  const Config& c = w_.config();
  OpSections ops(profile_);
  ops.next("lm head");
  project(w_, w_.layout().lm_head, logits, buffers_.final_out + int64_t(first) * c.hidden_size,
          count, c.hidden_size, c.vocab_size);
}

void InferState::forward(const int32_t* ids, int count, float* logits) {
  run(ids, count);
  if (logits) lm_head(0, count, logits);
}

void InferState::forward_last(const int32_t* ids, int count, float* logits) {
  run(ids, count);
  lm_head(count - 1, 1, logits);
}

}  // namespace gattn
