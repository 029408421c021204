// A layer is a pair of blocks: an attention block (FullAttention; a linear attention next) and an
// MLP block (DenseMlp; MoE later). Each block reads the residual stream and writes it with its
// contribution added; it owns the offsets of its parameters in the Weights, plans what its
// forward pass keeps (for its backward pass and analysis), its backward pass's scratch and its
// per-sequence decode memory. The pass drivers (model/pass.h) only walk the blocks.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/arena.h"

namespace gattn {

struct PassContext;
class Gradients;

// What a block's forward pass keeps, planned in an arena for some number of rows.
struct BlockActivations {
  virtual ~BlockActivations() = default;
};

// The gradients a block's backward pass works in. Every block's scratch shares one region of
// memory (Arena::begin_shared): it holds nothing between blocks.
struct BlockScratch {
  virtual ~BlockScratch() = default;
};

// How attention's decode memory stores keys and values: fp32, or bf16 (rounded to nearest even as
// they are stored; half the bytes a decode step reads at long context, as llama.cpp's f16 cache).
enum class CacheDtype { f32, bf16 };

// What a block keeps of each sequence from one decode pass to the next (attention's keys and
// values; a linear attention's convolution and recurrent state), for a number of sequences of up
// to `capacity` positions each.
class DecodeMemory {
 public:
  virtual ~DecodeMemory() = default;
  virtual void reset(int sequence) = 0;  // the sequence starts again from position 0
  virtual int64_t bytes() const = 0;
  // A piece of a sequence's memory after its first `to` positions, appended to `out`: the rows
  // of positions [from, to) (keys and values) and the per-sequence state (a convolution's and a
  // recurrence's, valid at exactly `to`). A prefix cache keeps such pieces.
  virtual void save(int sequence, int from, int to, std::vector<float>& out) const = 0;
  // The floats save() appends for positions [from, to).
  virtual int64_t saved_floats(int from, int to) const = 0;
  // Puts back positions [from, upto) of what save() wrote for [from, to) (upto <= to; the state
  // only with upto == to); returns the floats of the whole piece.
  virtual int64_t load(int sequence, int from, int to, int upto, const float* in) = 0;
  // Whether a piece may be put back up to a position inside it (keys and values can; a
  // recurrent state holds at its end only).
  virtual bool cuttable() const = 0;
};

class Block {
 public:
  virtual ~Block() = default;

  virtual std::unique_ptr<BlockActivations> plan_activations(Arena& arena, int64_t rows) const = 0;
  // Buffers of `a` its forward pass needs only while it runs, planned in a region every block
  // shares (Arena::begin_shared): they hold nothing once the next block has run, and a backward
  // pass that reads them computes them again from what plan_activations kept.
  virtual void plan_transient(Arena& /*arena*/, int64_t /*rows*/, BlockActivations& /*a*/) const {}
  virtual std::unique_ptr<BlockScratch> plan_scratch(Arena& arena, int64_t rows) const = 0;
  // Null: the block keeps nothing between decode passes.
  virtual std::unique_ptr<DecodeMemory> make_decode_memory(int /*sequences*/, int /*capacity*/,
                                                           CacheDtype /*keys_values*/) const {
    return nullptr;
  }

  // out = in + the block's contribution ([rows, hidden] each). memory: this block's decode
  // memory in a decode pass (pass.memory set), null otherwise.
  virtual void forward(const PassContext& pass, BlockActivations& a, DecodeMemory* memory,
                       const float* in, float* out) const = 0;
  // On entry d holds dL/d(out), on exit dL/d(in); parameter gradients are added to g. A
  // backward pass follows a forward pass over whole sequences (no decode memory).
  virtual void backward(const PassContext& pass, const BlockActivations& a, BlockScratch& s,
                        Gradients& g, const float* in, float* d) const = 0;
};

}  // namespace gattn
