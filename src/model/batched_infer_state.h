// Several generating sequences at once (a server's requests): each slot holds one sequence's KV
// cache and length. A prompt is prefilled into its slot in chunks; a decode step runs one new
// token for each of several slots in one pass, so every weight matrix is one GEMM over all of
// their rows, while attention reads each slot's own cache up to its own length.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/pass.h"
#include "model/weights.h"

namespace gattn {

class BatchedInferState {
 public:
  // slots: sequences held at once; context: positions per slot (at most
  // max_position_embeddings); max_chunk: the most prompt tokens one prefill() call takes.
  BatchedInferState(const Weights& weights, int slots, int context, int max_chunk);
  BatchedInferState(const BatchedInferState&) = delete;  // holds pointers into its own arenas
  BatchedInferState& operator=(const BatchedInferState&) = delete;

  int slots() const { return cache_.sequences; }
  int context() const { return cache_.capacity; }
  int max_chunk() const { return max_chunk_; }
  int length(int slot) const { return lengths_.at(slot); }  // positions in the slot's cache
  void reset(int slot) { lengths_.at(slot) = 0; }
  // Times each op of the following decode steps into `profile` (null: stop timing).
  void set_profile(OpProfile* profile) { profile_ = profile; }

  // Runs `count` tokens of one slot at positions length(slot) .. and appends them to its cache;
  // writes the logits [vocab] of the last one when `logits` is not null, or of every one
  // [count, vocab] with every_row (scoring a prompt).
  void prefill(int slot, const int32_t* ids, int count, float* logits, bool every_row = false);
  // One decode step: token ids[i] for slot slots[i] (distinct) at position length(slots[i]);
  // writes logits [slots.size(), vocab].
  void decode(std::span<const int> slots, std::span<const int32_t> ids, float* logits);

 private:
  void check_room(int slot, int count) const;

  const Weights& w_;
  int max_chunk_;
  std::vector<int> lengths_;
  KvCache cache_;
  Arena acts_;
  PassBuffers buffers_;
  std::vector<int32_t> positions_;
  OpProfile* profile_ = nullptr;
};

}  // namespace gattn
