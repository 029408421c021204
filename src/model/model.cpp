#include "model/model.h"

#include <algorithm>
#include <cmath>

#include "model/init.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/gate.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"
#include "util/error.h"
#include "util/op_profile.h"

namespace gattn {

// The q or k path: projection -> [gate] -> [QK-norm] -> RoPE -> [gate] -> attention.
struct Model::HeadPath {
  int heads, dim, col;  // col: first column of this tensor in the fused projection
  bool gate_before, gate_after;
  const float* norm_w;  // null without QK-norm
  float* d_norm_w;
  float *gated, *rot, *rstd, *final_;  // activations
  float *d_rot, *d_pre;                // scratch
};

int64_t count_targets(const Batch& batch) {
  int64_t n = 0;
  for (int64_t i = 0; i < int64_t(batch.batch) * batch.seq_len; ++i) n += batch.targets[i] >= 0;
  return n;
}

Model::Model(const Config& config)
    : config_(config),
      layout_(config),
      rope_(make_rope_table<float>(config.rotary_dim(), config.rope_theta,
                                   config.max_position_embeddings, config.rope_scaling)),
      params_(layout_.total(), 0.0f),
      // rows of the fused projection start on 64-byte boundaries: GEMM packing is faster
      proj_ld_((layout_.attn_proj_rows + 15) / 16 * 16) {}

void Model::init(uint64_t seed) {
  init_params(params_.data(), layout_, seed, config_.initializer_range);
}

void Model::zero_grads() { grads_.assign(layout_.total(), 0.0f); }

void Model::plan(int batch, int seq_len, bool backward) {
  if (batch < 1 || seq_len < 1) fail("batch shape must be positive, got ", batch, " x ", seq_len);
  if (seq_len > config_.max_position_embeddings)
    fail("sequence length ", seq_len, " exceeds max_position_embeddings (",
         config_.max_position_embeddings, ")");
  planned_batch_ = batch;
  planned_seq_ = seq_len;
  // Buffers are addressed by row, so a plan for more rows serves fewer without reallocating.
  if (int64_t(batch) * seq_len <= capacity_rows_ && (planned_backward_ || !backward)) {
    rows_ = batch * seq_len;
    return;
  }
  planned_backward_ = backward;
  acts_.clear();
  scratch_.clear();

  const Config& c = config_;
  const GateConfig& gate = c.gate;
  const int64_t N = int64_t(batch) * seq_len, C = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim(),
                H = c.num_attention_heads, K = c.num_key_value_heads, I = c.intermediate_size,
                P = proj_ld_;
  rows_ = int(N);
  capacity_rows_ = N;
  const bool gate_q = gate.position == GatePosition::query,
             gate_k = gate.position == GatePosition::key;

  resid_.assign(c.num_hidden_layers + 1, nullptr);
  for (int l = 0; l <= c.num_hidden_layers; ++l) acts_.plan(&resid_[l], N * C, "residual");
  layer_acts_.assign(c.num_hidden_layers, LayerActs{});
  for (LayerActs& a : layer_acts_) {
    auto keep = [&](float** slot, int64_t floats, const char* name, bool needed = true) {
      if (needed) acts_.plan(slot, floats, name);
    };
    keep(&a.ln1_rstd, N, "ln1_rstd");
    keep(&a.ln1_out, N * C, "ln1_out");
    keep(&a.proj, N * P, "q/k/v/gate projection");
    keep(&a.q_gated, N * qd, "q gated", gate_q && !gate.after_qk_norm);
    keep(&a.q_rot, N * qd, "q rotated");
    keep(&a.q_rstd, N * H, "q_norm rstd", c.use_qk_norm);
    keep(&a.q_final, N * qd, "q gated", gate_q && gate.after_qk_norm);
    keep(&a.k_gated, N * kvd, "k gated", gate_k && !gate.after_qk_norm);
    keep(&a.k_rot, N * kvd, "k rotated");
    keep(&a.k_rstd, N * K, "k_norm rstd", c.use_qk_norm);
    keep(&a.k_final, N * kvd, "k gated", gate_k && gate.after_qk_norm);
    keep(&a.v_gated, N * kvd, "v gated", gate.position == GatePosition::value);
    keep(&a.attn_out, N * qd, "attention output");
    keep(&a.attn_lse, N * H, "attention log-sum-exp");
    keep(&a.attn_gated, N * qd, "attention output gated", gate.position == GatePosition::sdpa);
    keep(&a.sdpa_rstd, N * H, "head rmsnorm rstd",
         gate.kind == GateKind::head_rmsnorm && gate.enabled());
    keep(&a.o_out, N * C, "o_proj output");
    keep(&a.dense_gated, N * C, "o_proj output gated", gate.position == GatePosition::dense);
    keep(&a.attn_norm_rstd, N, "attn_output_norm rstd", c.sandwich_norm);
    keep(&a.attn_normed, N * C, "attn_output_norm output", c.sandwich_norm);
    keep(&a.resid_mid, N * C, "residual mid-layer");
    keep(&a.ln2_rstd, N, "ln2_rstd");
    keep(&a.ln2_out, N * C, "ln2_out");
    keep(&a.gate_up, N * 2 * I, "mlp gate/up projection");
    keep(&a.mlp_act, N * I, "mlp activation");
    keep(&a.down_out, N * C, "mlp output");
    keep(&a.mlp_norm_rstd, N, "mlp_output_norm rstd", c.sandwich_norm);
    keep(&a.mlp_normed, N * C, "mlp_output_norm output", c.sandwich_norm);
  }
  acts_.plan(&final_rstd_, N, "final norm rstd");
  acts_.plan(&final_out_, N * C, "final norm output");
  acts_.allocate();

  chunk_rows_ = int(std::min<int64_t>(N, std::max<int64_t>(64, (int64_t(1) << 22) / c.vocab_size)));
  scratch_.plan(&logits_chunk_, int64_t(chunk_rows_) * c.vocab_size, "logits chunk");
  if (backward) {
    s_ = Scratch{};
    scratch_.plan(&s_.d_resid, N * C, "d residual");
    scratch_.plan(&s_.d_block, N * C, "d block output");
    scratch_.plan(&s_.d_block_normed, N * C, "d block output normed");
    scratch_.plan(&s_.d_dense, N * C, "d o_proj output");
    scratch_.plan(&s_.d_proj, N * P, "d projection");
    if (gate.has_logit()) scratch_.plan(&s_.d_gate_tokens, N * c.gate_scores(), "d gate per token");
    scratch_.plan(&s_.d_q, N * qd, "d q");
    scratch_.plan(&s_.d_q_rot, N * qd, "d q rotated");
    scratch_.plan(&s_.d_q_pre, N * qd, "d q gated");
    scratch_.plan(&s_.d_k, N * kvd, "d k");
    scratch_.plan(&s_.d_k_rot, N * kvd, "d k rotated");
    scratch_.plan(&s_.d_k_pre, N * kvd, "d k gated");
    scratch_.plan(&s_.d_v, N * kvd, "d v");
    scratch_.plan(&s_.d_attn_gated, N * qd, "d attention gated");
    scratch_.plan(&s_.d_attn_out, N * qd, "d attention output");
    scratch_.plan(&s_.d_ln, N * C, "d norm output");
    scratch_.plan(&s_.d_gate_up, N * 2 * I, "d mlp gate/up");
    scratch_.plan(&s_.d_mlp_act, N * I, "d mlp activation");
  }
  scratch_.allocate();
}

const float* Model::gate_z(int l, const LayerActs& a) const {
  const GateConfig& gate = config_.gate;
  if (gate.has_weight()) return a.proj + config_.q_dim() + 2 * config_.kv_dim();
  if (gate.has_logit()) return params_.data() + layout_.layers[l].gate_logit;
  return nullptr;
}

float* Model::gate_dz() {
  if (config_.gate.has_weight()) return s_.d_proj + config_.q_dim() + 2 * config_.kv_dim();
  return s_.d_gate_tokens;
}

void Model::finish_gate_grad(int l) {
  if (config_.gate.has_logit())
    column_sum(g(layout_.layers[l].gate_logit), s_.d_gate_tokens, rows_, config_.gate_scores());
}

Model::HeadPath Model::head_path(int l, bool is_query) {
  const Config& c = config_;
  LayerActs& a = layer_acts_[l];
  const LayerOffsets& o = layout_.layers[l];
  const bool gated = c.gate.position == (is_query ? GatePosition::query : GatePosition::key);
  const int64_t norm = is_query ? o.q_norm : o.k_norm;
  const bool grads = planned_backward_ && !grads_.empty();
  HeadPath hp{};
  hp.heads = is_query ? c.num_attention_heads : c.num_key_value_heads;
  hp.dim = hp.heads * c.head_dim;
  hp.col = is_query ? 0 : c.q_dim();
  hp.gate_before = gated && !c.gate.after_qk_norm;
  hp.gate_after = gated && c.gate.after_qk_norm;
  hp.norm_w = norm == kAbsent ? nullptr : p(norm);
  hp.d_norm_w = norm == kAbsent || !grads ? nullptr : g(norm);
  hp.gated = is_query ? a.q_gated : a.k_gated;
  hp.rot = is_query ? a.q_rot : a.k_rot;
  hp.rstd = is_query ? a.q_rstd : a.k_rstd;
  hp.final_ = is_query ? a.q_final : a.k_final;
  hp.d_rot = is_query ? s_.d_q_rot : s_.d_k_rot;
  hp.d_pre = is_query ? s_.d_q_pre : s_.d_k_pre;
  return hp;
}

void Model::block_output_forward(float* resid_out, const float* resid_in, const float* raw,
                                 int64_t norm_weight, float* rstd, float* normed) {
  const int C = config_.hidden_size;
  const float* out = raw;
  if (config_.sandwich_norm) {
    rmsnorm_forward(normed, rstd, raw, p(norm_weight), {rows_, 1, C, C, C, 0},
                    float(config_.rms_norm_eps));
    out = normed;
  }
  residual_add(resid_out, resid_in, out, int64_t(rows_) * C, float(config_.block_output_clip));
}

// The gradient with respect to the raw block output, from s_.d_resid (which it may return).
const float* Model::block_output_backward(const float* raw, const float* normed,
                                          int64_t norm_weight, const float* rstd) {
  const int C = config_.hidden_size;
  const float* cur = s_.d_resid;
  if (config_.block_output_clip > 0) {
    clip_backward(s_.d_block, cur, config_.sandwich_norm ? normed : raw, int64_t(rows_) * C,
                  float(config_.block_output_clip));
    cur = s_.d_block;
  }
  if (config_.sandwich_norm) {
    rmsnorm_backward(s_.d_block_normed, g(norm_weight), cur, raw, p(norm_weight), rstd,
                     {rows_, 1, C, C, C, 0}, false);
    cur = s_.d_block_normed;
  }
  return cur;
}

void Model::forward_layer(int l) {
  const Config& c = config_;
  const GateConfig& gate = c.gate;
  LayerActs& a = layer_acts_[l];
  const LayerOffsets& o = layout_.layers[l];
  const int N = rows_, C = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim(), d = c.head_dim;
  const int P = proj_ld_, I = c.intermediate_size;  // P: row stride of the fused projection
  const float eps = float(c.rms_norm_eps);
  const float* z = gate_z(l, a);
  const int ld_z = gate.has_weight() ? P : 0;

  OpSections ops(profile_);
  ops.next("norms");
  rmsnorm_forward(a.ln1_out, a.ln1_rstd, resid_[l], p(o.input_norm), {N, 1, C, C, C, 0}, eps);
  ops.next("q/k/v/gate projection");
  linear_forward(a.proj, a.ln1_out, p(o.attn_proj), N, C, layout_.attn_proj_rows, false, P);

  ops.next("q/k norm and rope (and a q/k gate)");
  const float* q = nullptr;
  const float* k = nullptr;
  for (bool is_query : {true, false}) {
    const HeadPath hp = head_path(l, is_query);
    const float* src = a.proj + hp.col;
    int ld = P;
    if (hp.gate_before) {
      gate_forward(hp.gated, src, z, c.gate_shape(N, P, hp.dim, ld_z));
      src = hp.gated;
      ld = hp.dim;
    }
    RopeShape rs{N, planned_seq_, 0, hp.heads, d, ld, hp.dim};
    if (hp.norm_w) {
      rmsnorm_forward(hp.rot, hp.rstd, src, hp.norm_w, {N, hp.heads, d, ld, hp.dim, 0}, eps);
      rs.ld_in = hp.dim;
      rope_forward(hp.rot, hp.rot, rope_, rs);
    } else {
      rope_forward(hp.rot, src, rope_, rs);
    }
    const float* final_ = hp.rot;
    if (hp.gate_after) {
      gate_forward(hp.final_, hp.rot, z, c.gate_shape(N, hp.dim, hp.dim, ld_z));
      final_ = hp.final_;
    }
    (is_query ? q : k) = final_;
  }
  ops.next("gate");
  const float* v = a.proj + qd + kvd;
  int ld_v = P;
  if (gate.position == GatePosition::value) {
    gate_forward(a.v_gated, v, z, c.gate_shape(N, P, kvd, ld_z));
    v = a.v_gated;
    ld_v = kvd;
  }
  const AttentionShape as{planned_batch_,
                          planned_seq_,
                          c.num_attention_heads,
                          c.num_key_value_heads,
                          d,
                          qd,
                          kvd,
                          ld_v,
                          qd};
  ops.next("attention");
  attention_forward(a.attn_out, a.attn_lse, q, k, v, as);

  ops.next("gate");
  const float* o_in = a.attn_out;
  if (gate.position == GatePosition::sdpa) {
    if (gate.has_scores())
      gate_forward(a.attn_gated, a.attn_out, z, c.gate_shape(N, qd, qd, ld_z));
    else if (gate.kind == GateKind::silu_only)
      silu_forward(a.attn_gated, a.attn_out, int64_t(N) * qd);
    else
      rmsnorm_forward(a.attn_gated, a.sdpa_rstd, a.attn_out, p(o.sdpa_norm),
                      {N, c.num_attention_heads, d, qd, qd, d}, eps);
    o_in = a.attn_gated;
  }
  ops.next("o_proj");
  linear_forward(a.o_out, o_in, p(o.o_proj), N, qd, C);
  const float* attn_raw = a.o_out;
  ops.next("gate");
  if (gate.position == GatePosition::dense) {
    gate_forward(a.dense_gated, a.o_out, z, c.gate_shape(N, C, C, ld_z));
    attn_raw = a.dense_gated;
  }
  ops.next("residual (and sandwich norm, clip)");
  block_output_forward(a.resid_mid, resid_[l], attn_raw, o.attn_output_norm, a.attn_norm_rstd,
                       a.attn_normed);

  ops.next("norms");
  rmsnorm_forward(a.ln2_out, a.ln2_rstd, a.resid_mid, p(o.post_attn_norm), {N, 1, C, C, C, 0}, eps);
  ops.next("mlp gate/up projection");
  linear_forward(a.gate_up, a.ln2_out, p(o.mlp_gate_up), N, C, 2 * I);
  ops.next("swiglu");
  swiglu_forward(a.mlp_act, a.gate_up, N, I);
  ops.next("mlp down projection");
  linear_forward(a.down_out, a.mlp_act, p(o.mlp_down), N, I, C);
  ops.next("residual (and sandwich norm, clip)");
  block_output_forward(resid_[l + 1], a.resid_mid, a.down_out, o.mlp_output_norm, a.mlp_norm_rstd,
                       a.mlp_normed);
}

void Model::backward_layer(int l) {
  const Config& c = config_;
  const GateConfig& gate = c.gate;
  LayerActs& a = layer_acts_[l];
  const LayerOffsets& o = layout_.layers[l];
  const int N = rows_, C = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim(), d = c.head_dim;
  const int P = proj_ld_, I = c.intermediate_size;  // P: row stride of the fused projection
  const float* z = gate_z(l, a);
  float* dz = gate_dz();
  const int ld_z = gate.has_weight() ? P : 0;

  // MLP block: s_.d_resid holds dL/d(layer output).
  OpSections ops(profile_);
  ops.next("residual (and sandwich norm, clip)");
  const float* d_down =
      block_output_backward(a.down_out, a.mlp_normed, o.mlp_output_norm, a.mlp_norm_rstd);
  ops.next("mlp down projection");
  linear_backward(s_.d_mlp_act, g(o.mlp_down), d_down, a.mlp_act, p(o.mlp_down), N, I, C);
  ops.next("swiglu");
  swiglu_backward(s_.d_gate_up, s_.d_mlp_act, a.gate_up, N, I);
  ops.next("mlp gate/up projection");
  linear_backward(s_.d_ln, g(o.mlp_gate_up), s_.d_gate_up, a.ln2_out, p(o.mlp_gate_up), N, C,
                  2 * I);
  ops.next("norms");
  rmsnorm_backward(s_.d_resid, g(o.post_attn_norm), s_.d_ln, a.resid_mid, p(o.post_attn_norm),
                   a.ln2_rstd, {N, 1, C, C, C, 0}, true);

  // Attention block: s_.d_resid now holds dL/d(resid_mid).
  ops.next("residual (and sandwich norm, clip)");
  const float* attn_raw = gate.position == GatePosition::dense ? a.dense_gated : a.o_out;
  const float* d_o =
      block_output_backward(attn_raw, a.attn_normed, o.attn_output_norm, a.attn_norm_rstd);
  ops.next("gate");
  if (gate.position == GatePosition::dense) {
    gate_backward(s_.d_dense, dz, d_o, a.o_out, z, c.gate_shape(N, C, C, ld_z));
    d_o = s_.d_dense;
  }
  ops.next("o_proj");
  const float* o_in = gate.position == GatePosition::sdpa ? a.attn_gated : a.attn_out;
  linear_backward(s_.d_attn_gated, g(o.o_proj), d_o, o_in, p(o.o_proj), N, qd, C);
  ops.next("gate");
  const float* d_attn = s_.d_attn_gated;
  if (gate.position == GatePosition::sdpa) {
    if (gate.has_scores())
      gate_backward(s_.d_attn_out, dz, s_.d_attn_gated, a.attn_out, z,
                    c.gate_shape(N, qd, qd, ld_z));
    else if (gate.kind == GateKind::silu_only)
      silu_backward(s_.d_attn_out, s_.d_attn_gated, a.attn_out, int64_t(N) * qd);
    else
      rmsnorm_backward(s_.d_attn_out, g(o.sdpa_norm), s_.d_attn_gated, a.attn_out, p(o.sdpa_norm),
                       a.sdpa_rstd, {N, c.num_attention_heads, d, qd, qd, d}, false);
    d_attn = s_.d_attn_out;
  }

  ops.next("attention");
  const bool gate_v = gate.position == GatePosition::value;
  const float* q = a.q_final ? a.q_final : a.q_rot;
  const float* k = a.k_final ? a.k_final : a.k_rot;
  const float* v = gate_v ? a.v_gated : a.proj + qd + kvd;
  float* d_v = gate_v ? s_.d_v : s_.d_proj + qd + kvd;
  const AttentionShape as{planned_batch_,
                          planned_seq_,
                          c.num_attention_heads,
                          c.num_key_value_heads,
                          d,
                          qd,
                          kvd,
                          gate_v ? kvd : P,
                          qd};
  attention_backward(s_.d_q, s_.d_k, d_v, d_attn, a.attn_out, a.attn_lse, q, k, v, as);
  ops.next("gate");
  if (gate_v)
    gate_backward(s_.d_proj + qd + kvd, dz, s_.d_v, a.proj + qd + kvd, z,
                  c.gate_shape(N, P, kvd, ld_z));

  ops.next("q/k norm and rope (and a q/k gate)");
  for (bool is_query : {true, false}) {
    const HeadPath hp = head_path(l, is_query);
    float* cur = is_query ? s_.d_q : s_.d_k;
    if (hp.gate_after) {
      gate_backward(hp.d_rot, dz, cur, hp.rot, z, c.gate_shape(N, hp.dim, hp.dim, ld_z));
      cur = hp.d_rot;
    }
    const float* src = hp.gate_before ? hp.gated : a.proj + hp.col;
    const int ld = hp.gate_before ? hp.dim : P;
    float* dst = hp.gate_before ? hp.d_pre : s_.d_proj + hp.col;  // d(src), same stride
    RopeShape rs{N, planned_seq_, 0, hp.heads, d, hp.dim, hp.dim};
    if (hp.norm_w) {
      rope_backward(cur, cur, rope_, rs);
      rmsnorm_backward(dst, hp.d_norm_w, cur, src, hp.norm_w, hp.rstd,
                       {N, hp.heads, d, ld, hp.dim, 0}, false);
    } else {
      rs.ld_in = ld;
      rope_backward(dst, cur, rope_, rs);
    }
    if (hp.gate_before)
      gate_backward(s_.d_proj + hp.col, dz, hp.d_pre, a.proj + hp.col, z,
                    c.gate_shape(N, P, hp.dim, ld_z));
  }
  ops.next("gate");
  finish_gate_grad(l);

  ops.next("q/k/v/gate projection");
  linear_backward(s_.d_ln, g(o.attn_proj), s_.d_proj, a.ln1_out, p(o.attn_proj), N, C,
                  layout_.attn_proj_rows, false, P);
  ops.next("norms");
  rmsnorm_backward(s_.d_resid, g(o.input_norm), s_.d_ln, resid_[l], p(o.input_norm), a.ln1_rstd,
                   {N, 1, C, C, C, 0}, true);
}

void Model::forward_layers(const Batch& batch) {
  const Config& c = config_;
  const int C = c.hidden_size;
  OpSections ops(profile_);
  ops.next("embedding");
  embedding_forward(resid_[0], batch.ids, p(layout_.embed), rows_, C, c.vocab_size);
  ops.next(nullptr);
  for (int l = 0; l < c.num_hidden_layers; ++l) forward_layer(l);
  ops.next("norms");
  rmsnorm_forward(final_out_, final_rstd_, resid_[c.num_hidden_layers], p(layout_.final_norm),
                  {rows_, 1, C, C, C, 0}, float(c.rms_norm_eps));
}

Model::LayerView Model::layer_view(int l) const {
  const Config& c = config_;
  const GateConfig& gate = c.gate;
  const LayerActs& a = layer_acts_.at(l);
  const int qd = c.q_dim(), kvd = c.kv_dim(), P = proj_ld_;
  LayerView v{};
  v.q = a.q_final ? a.q_final : a.q_rot;
  v.k = a.k_final ? a.k_final : a.k_rot;
  v.ld_q = qd;
  v.ld_k = kvd;
  v.attn_lse = a.attn_lse;
  v.output = resid_[l + 1];
  v.gate_z = gate_z(l, a);
  v.ld_gate_z = gate.has_weight() ? P : 0;
  const bool after = gate.after_qk_norm;
  switch (gate.position) {
    case GatePosition::sdpa:
      v = {v.q,          v.k, v.ld_q, v.ld_k,   v.attn_lse,  a.attn_out,
           a.attn_gated, qd,  qd,     v.gate_z, v.ld_gate_z, v.output};
      break;
    case GatePosition::value:
      v = {v.q,       v.k, v.ld_q, v.ld_k,   v.attn_lse,  a.proj + qd + kvd,
           a.v_gated, P,   kvd,    v.gate_z, v.ld_gate_z, v.output};
      break;
    case GatePosition::query:
      v = {v.q,
           v.k,
           v.ld_q,
           v.ld_k,
           v.attn_lse,
           after ? a.q_rot : a.proj,
           after ? a.q_final : a.q_gated,
           after ? qd : P,
           qd,
           v.gate_z,
           v.ld_gate_z,
           v.output};
      break;
    case GatePosition::key:
      v = {v.q,
           v.k,
           v.ld_q,
           v.ld_k,
           v.attn_lse,
           after ? a.k_rot : a.proj + qd,
           after ? a.k_final : a.k_gated,
           after ? kvd : P,
           kvd,
           v.gate_z,
           v.ld_gate_z,
           v.output};
      break;
    case GatePosition::dense:
      v = {v.q,           v.k,           v.ld_q,        v.ld_k,   v.attn_lse,  a.o_out,
           a.dense_gated, c.hidden_size, c.hidden_size, v.gate_z, v.ld_gate_z, v.output};
      break;
    case GatePosition::none:
      break;
  }
  return v;
}

float Model::max_abs_hidden() const {
  float max = 0;
  const int64_t count = int64_t(rows_) * config_.hidden_size;
  for (int l = 1; l <= config_.num_hidden_layers; ++l)
    for (int64_t i = 0; i < count; ++i) max = std::max(max, std::abs(resid_[l][i]));
  return max;
}

LossSum Model::forward(const Batch& batch, float* logits, double* token_nats) {
  plan(batch.batch, batch.seq_len, false);
  forward_layers(batch);
  const Config& c = config_;
  if (logits)
    linear_forward(logits, final_out_, p(layout_.lm_head), rows_, c.hidden_size, c.vocab_size);
  if (!batch.targets) return {};
  return lm_head_cross_entropy<float>(nullptr, nullptr, logits_chunk_, final_out_,
                                      p(layout_.lm_head), batch.targets, rows_, c.hidden_size,
                                      c.vocab_size, chunk_rows_, 0.0f, token_nats);
}

LossSum Model::forward_backward(const Batch& batch, float grad_scale) {
  if (!batch.targets) fail("forward_backward needs targets");
  if (grads_.empty()) zero_grads();
  plan(batch.batch, batch.seq_len, true);
  forward_layers(batch);
  const Config& c = config_;
  const int C = c.hidden_size;
  OpSections ops(profile_);
  ops.next("lm head and cross-entropy (forward and backward)");
  const LossSum loss = lm_head_cross_entropy<float>(
      s_.d_ln, g(layout_.lm_head), logits_chunk_, final_out_, p(layout_.lm_head), batch.targets,
      rows_, C, c.vocab_size, chunk_rows_, grad_scale);
  ops.next("norms");
  rmsnorm_backward(s_.d_resid, g(layout_.final_norm), s_.d_ln, resid_[c.num_hidden_layers],
                   p(layout_.final_norm), final_rstd_, {rows_, 1, C, C, C, 0}, false);
  ops.next(nullptr);
  for (int l = c.num_hidden_layers - 1; l >= 0; --l) backward_layer(l);
  ops.next("embedding");
  embedding_backward(g(layout_.embed), s_.d_resid, batch.ids, rows_, C);
  return loss;
}

}  // namespace gattn
