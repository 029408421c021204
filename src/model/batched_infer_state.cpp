#include "model/batched_infer_state.h"

#include <algorithm>

#include "ops/matmul.h"
#include "util/error.h"

namespace gattn {

BatchedInferState::BatchedInferState(const Weights& weights, int slots, int context, int max_chunk)
    : w_(weights), max_chunk_(max_chunk) {
  const Config& c = w_.config();
  if (slots < 1) fail("inference: at least one sequence slot is needed, got ", slots);
  if (context < 1 || context > c.max_position_embeddings)
    fail("inference context ", context,
         " is outside [1, max_position_embeddings = ", c.max_position_embeddings, "]");
  if (max_chunk < 1) fail("inference chunk must hold at least one token, got ", max_chunk);
  lengths_.assign(slots, 0);
  allocate_kv_cache(cache_, c, slots, context);
  const int rows = std::max(slots, max_chunk);
  positions_.resize(rows);
  plan_pass_buffers(acts_, w_, rows, buffers_);
  acts_.allocate();
}

void BatchedInferState::check_room(int slot, int count) const {
  if (slot < 0 || slot >= slots()) fail("inference: slot ", slot, " is outside [0, ", slots(), ")");
  if (lengths_[slot] + count > context())
    fail("inference: ", lengths_[slot] + count, " positions exceed the context of ", context());
}

void BatchedInferState::prefill(int slot, const int32_t* ids, int count, float* logits,
                                bool every_row) {
  if (count < 1 || count > max_chunk_)
    fail("inference: ", count, " tokens in one chunk, expected 1 to ", max_chunk_);
  check_room(slot, count);
  for (int i = 0; i < count; ++i) positions_[i] = lengths_[slot] + i;
  const PassContext pass{.weights = w_,
                         .batch = 1,
                         .seq_len = count,
                         .positions = positions_.data(),
                         .cache = &cache_,
                         .cache_sequences = &slot};
  forward_layers(pass, ids, buffers_);
  lengths_[slot] += count;
  if (!logits) return;
  const Config& c = w_.config();
  const int rows = every_row ? count : 1;
  project(w_, w_.layout().lm_head, logits,
          buffers_.final_out + int64_t(count - rows) * c.hidden_size, rows, c.hidden_size,
          c.vocab_size);
}

void BatchedInferState::decode(std::span<const int> slots, std::span<const int32_t> ids,
                               float* logits) {
  const int n = int(slots.size());
  if (n < 1 || n > this->slots() || ids.size() != slots.size())
    fail("inference: a decode step takes 1 to ", this->slots(), " slots and one token each, got ",
         n, " slots and ", ids.size(), " tokens");
  for (int i = 0; i < n; ++i) {
    check_room(slots[i], 1);
    if (std::count(slots.begin(), slots.end(), slots[i]) != 1)
      fail("inference: slot ", slots[i], " appears twice in one decode step");
    positions_[i] = lengths_[slots[i]];
  }
  const PassContext pass{.weights = w_,
                         .batch = n,
                         .seq_len = 1,
                         .positions = positions_.data(),
                         .cache = &cache_,
                         .cache_sequences = slots.data(),
                         .profile = profile_};
  forward_layers(pass, ids.data(), buffers_);
  for (int slot : slots) ++lengths_[slot];
  const Config& c = w_.config();
  OpSections ops(profile_);
  ops.next("lm head");
  project(w_, w_.layout().lm_head, logits, buffers_.final_out, n, c.hidden_size, c.vocab_size);
}

}  // namespace gattn
