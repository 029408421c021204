// What one forward (and backward) pass over some token rows works with: the rows and their
// positions, where attention finds its keys, and the buffers each layer keeps. Shared by the
// training state (rectangular batches) and the inference state (chunks against a KV cache).
#pragma once
#include <cstdint>
#include <vector>

#include "model/arena.h"
#include "model/intervention.h"
#include "model/weights.h"
#include "util/op_profile.h"

namespace gattn {

struct TensorRef {  // rows of a matrix with row stride ld (floats)
  float* data = nullptr;
  int ld = 0;
};

// The activations a layer keeps from its forward pass, for the backward pass and analysis.
struct LayerActivations {
  float *ln1_rstd, *ln1_out, *proj;  // proj: [rows, projection_stride] = q | k | v | gate z
  float *q_rot, *q_rstd = nullptr, *k_rot, *k_rstd = nullptr;
  float *attn_out, *attn_lse;
  float *gate_out = nullptr, *gate_rstd = nullptr;  // the gate site's output; head_rmsnorm's rstd
  float *o_out, *attn_norm_rstd = nullptr, *attn_normed = nullptr;
  float *resid_mid, *ln2_rstd, *ln2_out, *gate_up, *mlp_act, *down_out;
  float *mlp_norm_rstd = nullptr, *mlp_normed = nullptr;
  // Set by the forward pass: what attention read as q, k and v, and the gate's input.
  TensorRef q, k, v, gate_in;
};

// Gradients of one layer at a time (the backward pass reuses them for every layer).
struct BackwardScratch {
  float *d_resid, *d_block, *d_block_normed, *d_proj, *d_gate_tokens = nullptr;
  float *d_q, *d_k, *d_attn, *d_gate_out = nullptr;
  float *d_ln, *d_gate_up, *d_mlp_act;
};

// Keys and values of every layer for the positions some sequences have seen, GQA-compact (K
// heads): a chunk's forward pass appends its own and attends to all of them.
struct KvCache {
  int capacity = 0;                  // positions per sequence
  int sequences = 1;                 // sequences held: sequence s owns rows s * capacity ..
  std::vector<float*> keys, values;  // per layer [sequences * capacity, K * head_dim]
  Arena storage;
};
// Plans (and allocates) a cache of `sequences` x `capacity` positions for every layer.
void allocate_kv_cache(KvCache& cache, const Config& c, int sequences, int capacity);

struct PassContext {
  const Weights& weights;
  int batch;                 // sequences
  int seq_len;               // rows per sequence: row r = b * seq_len + t
  const int32_t* positions;  // [rows] each row's position (RoPE, and the cache slot)
  KvCache* cache = nullptr;  // null: each sequence attends to its own rows from position 0
  // With a cache: the cache sequence of each of the pass's sequences (null: sequence b uses b).
  // Sequence b's rows sit at positions[b * seq_len] .. and attend to its cache up to them.
  const int* cache_sequences = nullptr;
  const Interventions* interventions = nullptr;  // forward passes of analysis only
  OpProfile* profile = nullptr;

  int rows() const { return batch * seq_len; }
};

// out[rows, out_dim] = in[rows, in_dim] W^T for the weight matrix at `offset`: from the bf16 copy
// for a decode step when the weights keep one (Weights::round_to_bf16_for_inference), else
// linear_forward on the fp32 values. ld_out: out's row stride (0: out_dim).
void project(const Weights& w, int64_t offset, float* out, const float* in, int rows, int in_dim,
             int out_dim, int ld_out = 0);

// Plans the buffers of layer l for `rows` tokens, and the backward pass's scratch.
void plan_layer_activations(Arena& arena, const Weights& w, int l, int64_t rows,
                            LayerActivations& a);
void plan_backward_scratch(Arena& arena, const Weights& w, int64_t rows, BackwardScratch& s);

// The residual stream of a pass and what every layer keeps.
struct PassBuffers {
  std::vector<float*>
      resid;  // [L + 1] each [rows, hidden]: the embedding, then each layer's output
  std::vector<LayerActivations> layers;
  float *final_rstd = nullptr, *final_out = nullptr;  // the final norm's rstd and output
};
void plan_pass_buffers(Arena& arena, const Weights& w, int64_t rows, PassBuffers& b);

// Embedding, every layer and the final norm over pass.rows() tokens `ids`.
void forward_layers(const PassContext& pass, const int32_t* ids, PassBuffers& b);

// resid_out = layer l applied to resid_in ([rows, hidden] each).
void layer_forward(const PassContext& pass, int l, const float* resid_in, LayerActivations& a,
                   float* resid_out);
// On entry s.d_resid holds dL/d(layer output), on exit dL/d(layer input); parameter gradients
// are added to g.
void layer_backward(const PassContext& pass, int l, const float* resid_in,
                    const LayerActivations& a, BackwardScratch& s, Gradients& g);

// The gate's pre-activation scores of layer l after its forward pass, and their row stride
// (0: one row shared by every token); null for the parameter-free ops.
const float* gate_scores_z(const Weights& w, int l, const LayerActivations& a, int* ld_z);

}  // namespace gattn
