// The full (softmax) attention block with its gate: out = in + o_proj(attention(q, k, v)), the
// gate applied at the stage its site names (model/gate_site.h). Its decode memory is every
// sequence's keys and values (GQA-compact: K heads).
#pragma once
#include "model/block.h"
#include "model/blocks/block_output.h"
#include "model/layer_config.h"
#include "model/layout.h"
#include "model/pass.h"

namespace gattn {

struct FullAttentionActivations : BlockActivations {
  float *norm_rstd = nullptr, *normed = nullptr;  // input_layernorm
  float* proj = nullptr;                          // [rows, projection_stride] = q | k | v | gate z
  float *q_rot = nullptr, *q_rstd = nullptr, *k_rot = nullptr, *k_rstd = nullptr;
  float *attn_out = nullptr, *attn_lse = nullptr;
  float *gate_out = nullptr, *gate_rstd = nullptr;  // the gate site's output; head_rmsnorm's rstd
  float* o_out = nullptr;
  BlockOutputActivations output;
  // Set by the forward pass: what attention read as q, k and v, and the gate's input.
  TensorRef q, k, v, gate_in;
};

struct FullAttentionScratch : BlockScratch {
  float *d_proj = nullptr, *d_gate_tokens = nullptr;
  float *d_q = nullptr, *d_k = nullptr, *d_attn = nullptr, *d_gate_out = nullptr;
  float* d_normed = nullptr;  // of input_layernorm's output; before that, of the gated o_proj
  BlockOutputScratch output;
};

// Keys and values of `sequences` sequences of up to `capacity` positions: sequence s owns rows
// s * capacity .. of each, [rows, K * head_dim], in fp32 (keys, values) or as bf16 bits
// (keys16, values16; the others null).
struct KeyValueRows : DecodeMemory {
  int capacity = 0, sequences = 0;
  CacheDtype dtype = CacheDtype::f32;
  float *keys = nullptr, *values = nullptr;
  uint16_t *keys16 = nullptr, *values16 = nullptr;
  Arena storage;
  // Floats a saved piece of `count` keys (or values) takes: bf16 ones go two to a float.
  int64_t piece_floats(int64_t count) const {
    return dtype == CacheDtype::f32 ? count : (count + 1) / 2;
  }
  void reset(int) override {}  // rows past a sequence's length are never read
  int64_t bytes() const override { return storage.bytes(); }
  void save(int sequence, int from, int to, std::vector<float>& out) const override;
  int64_t saved_floats(int from, int to) const override {
    return 2 * piece_floats(int64_t(to - from) * kv_dim);
  }
  int64_t load(int sequence, int from, int to, int upto, const float* in) override;
  bool cuttable() const override { return true; }
  int kv_dim = 0;
};

class FullAttention final : public Block {
 public:
  FullAttention(const AttentionConfig& c, const AttentionParams& p, int layer)
      : c_(c), p_(p), layer_(layer) {}

  std::unique_ptr<BlockActivations> plan_activations(Arena& arena, int64_t rows) const override;
  std::unique_ptr<BlockScratch> plan_scratch(Arena& arena, int64_t rows) const override;
  std::unique_ptr<DecodeMemory> make_decode_memory(int sequences, int capacity,
                                                   CacheDtype keys_values) const override;
  void forward(const PassContext& pass, BlockActivations& a, DecodeMemory* memory, const float* in,
               float* out) const override;
  void backward(const PassContext& pass, const BlockActivations& a, BlockScratch& s, Gradients& g,
                const float* in, float* d) const override;

  const AttentionConfig& config() const { return c_; }
  const AttentionParams& params() const { return p_; }
  int layer() const { return layer_; }
  // The gate's pre-activation scores after a forward pass and their row stride (0: one row
  // shared by every token); null for the parameter-free ops.
  const float* gate_scores(const Weights& w, const FullAttentionActivations& a, int* ld_z) const;

 private:
  AttentionConfig c_;
  AttentionParams p_;
  int layer_;
};

}  // namespace gattn
