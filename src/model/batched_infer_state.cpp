#include "model/batched_infer_state.h"

#include <algorithm>

#include "util/error.h"

namespace gattn {

BatchedInferState::BatchedInferState(const Weights& weights, int slots, int context, int max_chunk,
                                     CacheDtype keys_values)
    : w_(weights), context_(context), max_chunk_(max_chunk) {
  const Config& c = w_.config();
  if (slots < 1) fail("inference: at least one sequence slot is needed, got ", slots);
  if (context < 1 || context > c.max_position_embeddings)
    fail("inference context ", context,
         " is outside [1, max_position_embeddings = ", c.max_position_embeddings, "]");
  if (max_chunk < 1) fail("inference chunk must hold at least one token, got ", max_chunk);
  lengths_.assign(slots, 0);
  for (int i = 0; i < w_.blocks(); ++i) {
    memory_.push_back(w_.block(i).make_decode_memory(slots, context, keys_values));
    memory_view_.push_back(memory_.back().get());
  }
  const int rows = slots + max_chunk;
  positions_.resize(rows);
  ids_.resize(rows);
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

int64_t BatchedInferState::planned_decode_memory_bytes(const Weights& w, int slots, int context,
                                                       CacheDtype keys_values) {
  int64_t fixed = 0, per_position = 0;
  for (int i = 0; i < w.blocks(); ++i) {
    const auto one = w.block(i).make_decode_memory(1, 1, keys_values),
               two = w.block(i).make_decode_memory(1, 2, keys_values);
    if (!one) continue;
    per_position += two->bytes() - one->bytes();
    fixed += one->bytes() - (two->bytes() - one->bytes());
  }
  return int64_t(slots) * (fixed + int64_t(context) * per_position);
}

int64_t BatchedInferState::saved_floats(int slot, int from) const {
  check_room(slot, 0);
  GATTN_ASSERT(from >= 0 && from <= lengths_[slot]);
  int64_t floats = 0;
  for (const auto& memory : memory_)
    if (memory) floats += memory->saved_floats(from, lengths_[slot]);
  return floats;
}

// One allocation of the piece's exact size: growing it block by block would copy it and touch
// fresh pages several times over (on the machines measured, first touches of new memory cost up
// to ~6 ms per MiB, which a pass waits for).
void BatchedInferState::save(int slot, int from, std::vector<float>& out) const {
  const int64_t floats = saved_floats(slot, from);
  out.clear();
  out.reserve(size_t(floats));
  for (const auto& memory : memory_)
    if (memory) memory->save(slot, from, lengths_[slot], out);
  GATTN_ASSERT(int64_t(out.size()) == floats);
}

std::vector<float> BatchedInferState::save(int slot, int from) const {
  std::vector<float> out;
  save(slot, from, out);
  return out;
}

void BatchedInferState::load(int slot, int to, int upto, const float* piece, int64_t floats) {
  check_room(slot, to - lengths_[slot]);
  GATTN_ASSERT(lengths_[slot] <= upto && upto <= to && (upto == to || memory_cuttable()));
  int64_t read = 0;
  for (auto& memory : memory_)
    if (memory) read += memory->load(slot, lengths_[slot], to, upto, piece + read);
  GATTN_ASSERT(read == floats, "a memory piece of ", floats, " floats, ", read, " read");
  lengths_[slot] = upto;
}

bool BatchedInferState::memory_cuttable() const {
  return std::all_of(memory_.begin(), memory_.end(),
                     [](const auto& memory) { return !memory || memory->cuttable(); });
}

void BatchedInferState::check_room(int slot, int count) const {
  if (slot < 0 || slot >= slots()) fail("inference: slot ", slot, " is outside [0, ", slots(), ")");
  if (lengths_[slot] + count > context())
    fail("inference: ", lengths_[slot] + count, " positions exceed the context of ", context());
}

void BatchedInferState::lm_head(const float* hidden, int rows, float* logits) {
  const Config& c = w_.config();
  OpSections ops(exec_.profile);
  ops.next("lm head");
  project(exec_, w_, w_.layout().lm_head, logits, hidden, rows, c.hidden_size, c.vocab_size);
}

void BatchedInferState::forward(std::span<const Chunk> chunks, float* logits) {
  const int n = int(chunks.size()), C = w_.config().hidden_size;
  if (n < 1 || n > slots()) fail("inference: a pass takes 1 to ", slots(), " slots, got ", n);
  row_starts_.assign(1, 0);
  pass_slots_.clear();
  int out_rows = 0;
  for (const Chunk& c : chunks) {
    check_room(c.slot, c.count);
    if (c.count < 1 || row_starts_.back() + c.count > max_rows())
      fail("inference: a pass takes 1 to ", max_rows(), " tokens, got ",
           row_starts_.back() + c.count, " (slot ", c.slot, ": ", c.count, ")");
    if (std::find(pass_slots_.begin(), pass_slots_.end(), c.slot) != pass_slots_.end())
      fail("inference: slot ", c.slot, " appears twice in one pass");
    const int row0 = row_starts_.back();
    for (int i = 0; i < c.count; ++i) {
      positions_[row0 + i] = lengths_[c.slot] + i;
      ids_[row0 + i] = c.ids[i];
    }
    row_starts_.push_back(row0 + c.count);
    pass_slots_.push_back(c.slot);
    out_rows += logits_rows(c);
  }
  const PassContext pass{.weights = w_,
                         .exec = exec_,
                         .batch = n,
                         .seq_len = 0,
                         .positions = positions_.data(),
                         .memory = memory_view_.data(),
                         .memory_sequences = pass_slots_.data(),
                         .row_starts = row_starts_.data()};
  forward_blocks(pass, ids_.data(), buffers_);
  for (const Chunk& c : chunks) lengths_[c.slot] += c.count;
  if (!logits || out_rows == 0) return;
  // The rows whose logits are asked for, gathered (all of them, in place, when that is every row).
  const float* hidden = buffers_.final_out;
  if (out_rows != row_starts_.back()) {
    last_hidden_.resize(size_t(out_rows) * C);
    float* to = last_hidden_.data();
    for (int b = 0; b < n; ++b) {
      const int rows = logits_rows(chunks[b]);
      const float* from = buffers_.final_out + int64_t(row_starts_[b + 1] - rows) * C;
      to = std::copy(from, from + int64_t(rows) * C, to);
    }
    hidden = last_hidden_.data();
  }
  lm_head(hidden, out_rows, logits);
}

void BatchedInferState::prefill(int slot, const int32_t* ids, int count, float* logits,
                                bool every_row) {
  if (count < 1 || count > max_chunk_)
    fail("inference: ", count, " tokens in one chunk, expected 1 to ", max_chunk_);
  const Chunk chunk{.slot = slot, .ids = ids, .count = count, .every_row = every_row};
  forward(std::span(&chunk, 1), logits);
}

void BatchedInferState::decode(std::span<const int> slots, std::span<const int32_t> ids,
                               float* logits) {
  const int n = int(slots.size());
  if (n < 1 || n > this->slots() || ids.size() != slots.size())
    fail("inference: a decode step takes 1 to ", this->slots(), " slots and one token each, got ",
         n, " slots and ", ids.size(), " tokens");
  std::vector<Chunk> chunks(n);
  for (int i = 0; i < n; ++i) chunks[i] = {.slot = slots[i], .ids = &ids[i], .count = 1};
  forward(chunks, logits);
}

}  // namespace gattn
