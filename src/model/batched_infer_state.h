// Several generating sequences at once (a server's requests): each slot is one sequence of every
// block's decode memory (attention's keys and values) and a length. A prompt is prefilled into
// its slot in chunks; a decode step runs one new token for each of several slots in one pass, so
// every weight matrix is one GEMM over all of their rows, while attention reads each slot's own
// memory up to its own length. The pass plans one block's working set at a time (every block's
// activations share memory): nothing of a block is kept once the next one runs.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/pass.h"
#include "model/weights.h"

namespace gattn {

class BatchedInferState {
 public:
  // slots: sequences held at once; context: positions per slot (at most
  // max_position_embeddings); max_chunk: the most prompt tokens one prefill() call takes;
  // keys_values: how attention layers store them (model/block.h).
  BatchedInferState(const Weights& weights, int slots, int context, int max_chunk,
                    CacheDtype keys_values = CacheDtype::f32);
  BatchedInferState(const BatchedInferState&) = delete;  // holds pointers into its own arenas
  BatchedInferState& operator=(const BatchedInferState&) = delete;

  int slots() const { return int(lengths_.size()); }
  int context() const { return context_; }
  int max_chunk() const { return max_chunk_; }
  int length(int slot) const { return lengths_.at(slot); }  // positions in the slot's memory
  void reset(int slot);
  // How the following passes compute and where they report (precision, profile, GEMM log).
  void set_exec(const ExecContext& exec);

  // New tokens of one slot, at positions length(slot) .. length(slot) + count - 1.
  struct Chunk {
    int slot = 0;
    const int32_t* ids = nullptr;
    int count = 0;
    bool every_row = false;  // logits of every token (scoring a prompt), not only of the last
    bool logits = true;      // false: none (a prompt's chunk before its last; every_row wins)
  };
  // The logits rows forward() writes for a chunk.
  static int logits_rows(const Chunk& c) { return c.every_row ? c.count : c.logits ? 1 : 0; }
  // The most tokens one forward() takes: a token of every slot plus one prompt chunk.
  int max_rows() const { return slots() + max_chunk_; }
  // One pass over the chunks of distinct slots (a ragged batch: decoding slots' next tokens and
  // prompt chunks together, at most max_rows() tokens), each appended to its slot's memory;
  // writes, chunk by chunk, the logits of its last token, of all its tokens with every_row, or
  // none for a chunk without logits ([rows, vocab]). Each chunk's logits equal those of running it
  // alone to rounding (every weight matrix is one GEMM over all rows).
  void forward(std::span<const Chunk> chunks, float* logits);
  // Runs `count` tokens of one slot at positions length(slot) .. and appends them to its memory;
  // writes the logits [vocab] of the last one when `logits` is not null, or of every one
  // [count, vocab] with every_row (scoring a prompt).
  void prefill(int slot, const int32_t* ids, int count, float* logits, bool every_row = false);
  // One decode step: token ids[i] for slot slots[i] (distinct) at position length(slots[i]);
  // writes logits [slots.size(), vocab].
  void decode(std::span<const int> slots, std::span<const int32_t> ids, float* logits);
  // A piece of the slot's memory: positions [from, length(slot)) of every block's rows and the
  // recurrent states at length(slot) (model/block.h DecodeMemory::save).
  std::vector<float> save(int slot, int from) const;
  // The same into `out` (emptied first; no allocation when it has room for the piece).
  void save(int slot, int from, std::vector<float>& out) const;
  // The floats save() writes for positions [from, length(slot)).
  int64_t saved_floats(int slot, int from) const;
  // Appends positions [length(slot), upto) of a piece save() wrote for [length(slot), to) to the
  // slot (its length becomes `upto`; upto < to only when memory_cuttable()); pieces of a chain go
  // back root first. `floats`: the piece's size, checked.
  void load(int slot, int to, int upto, const float* piece, int64_t floats);
  // Whether every block's memory can be put back up to a position inside a piece.
  bool memory_cuttable() const;
  // The final hidden states (after the last norm) of the last pass's rows.
  const float* final_hidden() const { return buffers_.final_out; }

  // The memory plan: the pass's working set, and the decode memory of every block.
  const Arena& activations() const { return acts_; }
  int64_t decode_memory_bytes() const;
  // What decode_memory_bytes() will be for `slots` x `context`, before allocating it (measured
  // on one sequence of capacity 1 and 2: a per-sequence part and a per-position part).
  static int64_t planned_decode_memory_bytes(const Weights& weights, int slots, int context,
                                             CacheDtype keys_values = CacheDtype::f32);

 private:
  void check_room(int slot, int count) const;
  void lm_head(const float* hidden, int rows, float* logits);

  const Weights& w_;
  int context_, max_chunk_;
  std::vector<int> lengths_;
  std::vector<std::unique_ptr<DecodeMemory>> memory_;  // per block (null: keeps none)
  std::vector<DecodeMemory*> memory_view_;             // what a pass reads
  Arena acts_;
  PassBuffers buffers_;
  std::vector<int32_t> positions_, ids_;
  std::vector<int> row_starts_, pass_slots_;
  std::vector<float> last_hidden_;  // the rows whose logits a forward() writes
  ExecContext exec_;
};

}  // namespace gattn
