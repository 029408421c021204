// What one forward (and backward) pass over some token rows works with: the rows and their
// positions, the decode memory of a pass over new tokens of known sequences, and the buffers of
// the residual stream and of each block. The drivers here walk the blocks of the model (two per
// layer: model/block.h); the training state (rectangular batches) and the inference state
// (chunks of new tokens against each block's decode memory) both run them.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "model/arena.h"
#include "model/block.h"
#include "model/gradient_ready.h"
#include "model/hooks.h"
#include "model/weights.h"
#include "ops/exec_context.h"
#include "util/op_profile.h"

namespace gattn {

class RouterBalance;

struct TensorRef {  // rows of a matrix with row stride ld (floats)
  float* data = nullptr;
  int ld = 0;
};

struct PassContext {
  const Weights& weights;
  const ExecContext& exec;   // precision, profile, GEMM log
  int batch;                 // sequences
  int seq_len;               // rows per sequence: row r = b * seq_len + t
  const int32_t* positions;  // [rows] each row's position (RoPE, and the decode memory's slot)
  // A decode pass: each block's decode memory ([Weights::blocks()], null for blocks keeping
  // none); sequence b's rows sit at positions[b * seq_len] .. and see its memory up to them.
  // Null: each sequence is whole, from position 0.
  DecodeMemory* const* memory = nullptr;
  // The memory sequence of each of the pass's sequences (null: sequence b uses b).
  const int* memory_sequences = nullptr;
  PassHooks* hooks = nullptr;  // what the blocks show of their tensors (analysis, interventions)
  // A ragged pass (decode passes only, no hooks): sequence b's rows are row_starts[b] ..
  // row_starts[b + 1] - 1 ([batch + 1], row_starts[0] = 0), so one pass carries some sequences'
  // next token and other sequences' prompt chunks (llama.cpp's llama_batch: a position and a
  // sequence per token). Null: rectangular, sequence b's rows are b * seq_len ...
  const int* row_starts = nullptr;
  // Training a mixture of experts: the load-balancing loss its MoE blocks add to (null: none).
  RouterBalance* router_balance = nullptr;

  int rows() const { return row_starts ? row_starts[batch] : batch * seq_len; }
  int row0(int b) const { return row_starts ? row_starts[b] : b * seq_len; }
  int rows_of(int b) const { return row_starts ? row_starts[b + 1] - row_starts[b] : seq_len; }
  int memory_sequence(int b) const { return memory_sequences ? memory_sequences[b] : b; }
};

// out[rows, out_dim] = in[rows, in_dim] W^T for the weight matrix at `offset`, in whatever dtype
// the weights store it (ops/typed_linear.h); a matrix whose rows lie in several storages (a GGUF
// file's q, k and v read in place, perhaps in different block formats) one part at a time.
// ld_out: out's row stride (0: out_dim).
void project(const ExecContext& exec, const Weights& w, int64_t offset, float* out, const float* in,
             int rows, int in_dim, int out_dim, int ld_out = 0);

// The residual stream of a pass and what each block keeps.
struct PassBuffers {
  // Keeping every block's activations (training, analysis): blocks + 1 buffers, the embedding
  // then each block's output. An inference pass: 2, used in turns.
  std::vector<float*> resid;                                   // [rows, hidden] each
  std::vector<std::unique_ptr<BlockActivations>> activations;  // per block
  float *final_rstd = nullptr, *final_out = nullptr;           // the final norm's rstd and output

  float* block_input(int block) const { return resid[block % resid.size()]; }
  float* block_output(int block) const { return resid[(block + 1) % resid.size()]; }
  float* last() const { return block_input(int(activations.size())); }
};
// Every block's activations kept, for a backward pass or analysis.
void plan_pass_buffers(Arena& arena, const Weights& w, int64_t rows, PassBuffers& b);
// One block's working set at a time: every block's activations share memory (inference).
void plan_inference_buffers(Arena& arena, const Weights& w, int64_t rows, PassBuffers& b);

struct BackwardBuffers {
  float* d_hidden = nullptr;  // dL/d(final norm output), written by the lm head's backward
  float* d_resid = nullptr;   // dL/d(residual stream), from the top block down
  std::vector<std::unique_ptr<BlockScratch>> scratch;  // per block, sharing memory
};
void plan_backward_buffers(Arena& arena, const Weights& w, int64_t rows, BackwardBuffers& s);

// Embedding, every block and the final norm over pass.rows() tokens `ids`.
void forward_blocks(const PassContext& pass, const int32_t* ids, PassBuffers& b);
// After forward_blocks over the same pass and s.d_hidden written: the final norm's, every
// block's and the embedding's backward; parameter gradients are added to g.
// `ready` (null: none) is told of each range of `g` the pass has completed.
void backward_blocks(const PassContext& pass, const int32_t* ids, const PassBuffers& b,
                     BackwardBuffers& s, Gradients& g, GradientReady* ready = nullptr);

}  // namespace gattn
