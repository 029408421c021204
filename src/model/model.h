// The decoder: parameters, gradients and activations in arenas, and the hand-written forward and
// backward pass of the whole network (docs/MODEL.md).
#pragma once
#include <cstdint>
#include <vector>

#include "model/arena.h"
#include "model/config.h"
#include "model/layout.h"
#include "ops/cross_entropy.h"
#include "ops/rope.h"
#include "util/op_profile.h"

namespace gattn {

struct Batch {
  const int32_t* ids;      // [batch, seq_len]
  const int32_t* targets;  // [batch, seq_len], -1 = no target; may be null for forward()
  int batch;
  int seq_len;
};

class Model {
 public:
  explicit Model(const Config& config);  // parameters zero: init() or load them

  const Config& config() const { return config_; }
  const ParamLayout& layout() const { return layout_; }
  std::vector<float>& params() { return params_; }
  const std::vector<float>& params() const { return params_; }
  std::vector<float>& grads() { return grads_; }
  void init(uint64_t seed);

  // Forward only. Returns the summed loss over targets (when given); writes logits
  // [batch * seq_len, vocab] and each position's loss (0 where no target) when asked.
  LossSum forward(const Batch& batch, float* logits = nullptr, double* token_nats = nullptr);
  // Forward and backward: adds the gradient of grad_scale * (summed loss) to grads().
  // For the mean loss of one batch, grad_scale = 1 / (number of targets).
  LossSum forward_backward(const Batch& batch, float grad_scale);
  void zero_grads();
  // Attach a profile to receive the wall time of each op (null: none).
  void set_profile(OpProfile* profile) { profile_ = profile; }
  // max |hidden state| over every layer's output in the last forward pass (massive activations).
  float max_abs_hidden() const;

  // What the analysis reads of layer l after a forward pass; rows r = b * seq_len + t of the last
  // batch. Pointers stay valid until the next pass.
  struct LayerView {
    const float *q, *k;  // as attention used them (after QK-norm, RoPE and any q/k gate)
    int ld_q, ld_k;
    const float* attn_lse;  // [rows, H] log-sum-exp of each query's scaled scores
    // The gated tensor before and after the gate (null without a gate); heads of head_dim.
    const float *gate_in, *gate_out;
    int ld_gate_in, ld_gate_out;
    const float* gate_z;  // pre-activation scores (null for the parameter-free kinds)
    int ld_gate_z;        // 0: one shared row (input-independent)
    const float* output;  // the layer's output hidden state [rows, hidden]
  };
  LayerView layer_view(int l) const;
  int batch_rows() const { return rows_; }
  int batch_seq_len() const { return planned_seq_; }

  // The activation arena of the last (batch, seq_len): what the backward pass keeps, and the
  // scratch it works in.
  const Arena& activations() const { return acts_; }
  const Arena& scratch() const { return scratch_; }

 private:
  struct LayerActs {
    float *ln1_rstd, *ln1_out, *proj;
    float *q_gated = nullptr, *q_rot, *q_rstd = nullptr, *q_final = nullptr;
    float *k_gated = nullptr, *k_rot, *k_rstd = nullptr, *k_final = nullptr;
    float *v_gated = nullptr, *attn_out, *attn_lse, *attn_gated = nullptr, *sdpa_rstd = nullptr;
    float *o_out, *dense_gated = nullptr, *attn_norm_rstd = nullptr, *attn_normed = nullptr;
    float *resid_mid, *ln2_rstd, *ln2_out, *gate_up, *mlp_act, *down_out;
    float *mlp_norm_rstd = nullptr, *mlp_normed = nullptr;
  };
  struct Scratch {  // gradients of one layer at a time
    float *d_resid, *d_block, *d_block_normed, *d_dense, *d_proj, *d_gate_tokens = nullptr;
    float *d_q, *d_q_rot, *d_q_pre, *d_k, *d_k_rot, *d_k_pre, *d_v;
    float *d_attn_gated, *d_attn_out, *d_ln, *d_gate_up, *d_mlp_act;
  };
  struct HeadPath;

  void plan(int batch, int seq_len, bool backward);
  void forward_layers(const Batch& batch);
  void forward_layer(int l);
  void backward_layer(int l);
  HeadPath head_path(int l, bool is_query);
  void block_output_forward(float* resid_out, const float* resid_in, const float* raw,
                            int64_t norm_weight, float* rstd, float* normed);
  const float* block_output_backward(const float* raw, const float* normed, int64_t norm_weight,
                                     const float* rstd);
  const float* gate_z(int l, const LayerActs& a) const;
  float* gate_dz();
  void finish_gate_grad(int l);

  float* p(int64_t offset) { return params_.data() + offset; }
  float* g(int64_t offset) { return grads_.data() + offset; }

  Config config_;
  ParamLayout layout_;
  RopeTable<float> rope_;
  std::vector<float> params_, grads_;
  int proj_ld_;  // row stride of the fused q/k/v/gate projection (padded)
  OpProfile* profile_ = nullptr;

  int planned_batch_ = 0, planned_seq_ = 0, rows_ = 0;
  int64_t capacity_rows_ = 0;
  bool planned_backward_ = false;
  Arena acts_, scratch_;
  std::vector<float*> resid_;  // [L + 1] each [rows, hidden]
  float *final_rstd_ = nullptr, *final_out_ = nullptr, *logits_chunk_ = nullptr;
  int chunk_rows_ = 0;
  std::vector<LayerActs> layer_acts_;
  Scratch s_{};
};

int64_t count_targets(const Batch& batch);

}  // namespace gattn
