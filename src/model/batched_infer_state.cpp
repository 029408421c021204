#include "model/batched_infer_state.h"

#include <algorithm>

#include "util/error.h"

namespace gattn {

BatchedInferState::BatchedInferState(const Weights& weights, int slots, int context, int max_chunk)
    : w_(weights), context_(context), max_chunk_(max_chunk) {
  const Config& c = w_.config();
  if (slots < 1) fail("inference: at least one sequence slot is needed, got ", slots);
  if (context < 1 || context > c.max_position_embeddings)
    fail("inference context ", context,
         " is outside [1, max_position_embeddings = ", c.max_position_embeddings, "]");
  if (max_chunk < 1) fail("inference chunk must hold at least one token, got ", max_chunk);
  lengths_.assign(slots, 0);
  for (int i = 0; i < w_.blocks(); ++i) {
    memory_.push_back(w_.block(i).make_decode_memory(slots, context));
    memory_view_.push_back(memory_.back().get());
  }
  const int rows = std::max(slots, max_chunk);
  positions_.resize(rows);
  plan_inference_buffers(acts_, w_, rows, buffers_);
  acts_.allocate();
}

void BatchedInferState::set_exec(const ExecContext& exec) {
  check_gemm_precision(exec.precision);
  exec_ = exec;
}

void BatchedInferState::reset(int slot) {
  lengths_.at(slot) = 0;
  for (auto& memory : memory_)
    if (memory) memory->reset(slot);
}

int64_t BatchedInferState::decode_memory_bytes() const {
  int64_t bytes = 0;
  for (const auto& memory : memory_)
    if (memory) bytes += memory->bytes();
  return bytes;
}

int64_t BatchedInferState::planned_decode_memory_bytes(const Weights& w, int slots, int context) {
  int64_t fixed = 0, per_position = 0;
  for (int i = 0; i < w.blocks(); ++i) {
    const auto one = w.block(i).make_decode_memory(1, 1), two = w.block(i).make_decode_memory(1, 2);
    if (!one) continue;
    per_position += two->bytes() - one->bytes();
    fixed += one->bytes() - (two->bytes() - one->bytes());
  }
  return int64_t(slots) * (fixed + int64_t(context) * per_position);
}

void BatchedInferState::check_room(int slot, int count) const {
  if (slot < 0 || slot >= slots()) fail("inference: slot ", slot, " is outside [0, ", slots(), ")");
  if (lengths_[slot] + count > context())
    fail("inference: ", lengths_[slot] + count, " positions exceed the context of ", context());
}

PassContext BatchedInferState::context(int batch, int seq_len, const int* slots) const {
  return {.weights = w_,
          .exec = exec_,
          .batch = batch,
          .seq_len = seq_len,
          .positions = positions_.data(),
          .memory = memory_view_.data(),
          .memory_sequences = slots};
}

void BatchedInferState::lm_head(const float* hidden, int rows, float* logits) {
  const Config& c = w_.config();
  OpSections ops(exec_.profile);
  ops.next("lm head");
  project(exec_, w_, w_.layout().lm_head, logits, hidden, rows, c.hidden_size, c.vocab_size);
}

void BatchedInferState::prefill(int slot, const int32_t* ids, int count, float* logits,
                                bool every_row) {
  if (count < 1 || count > max_chunk_)
    fail("inference: ", count, " tokens in one chunk, expected 1 to ", max_chunk_);
  check_room(slot, count);
  for (int i = 0; i < count; ++i) positions_[i] = lengths_[slot] + i;
  forward_blocks(context(1, count, &slot), ids, buffers_);
  lengths_[slot] += count;
  if (!logits) return;
  const int rows = every_row ? count : 1;
  lm_head(buffers_.final_out + int64_t(count - rows) * w_.config().hidden_size, rows, logits);
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
  forward_blocks(context(n, 1, slots.data()), ids.data(), buffers_);
  for (int slot : slots) ++lengths_[slot];
  lm_head(buffers_.final_out, n, logits);
}

}  // namespace gattn
