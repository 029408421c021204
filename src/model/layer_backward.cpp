// The backward pass of one decoder layer, in the reverse order of layer_forward.cpp. At each
// stage where a gate may sit, the op before the gate writes its gradient into grad_into(), and
// gate_back() turns it into the gradient of the gate's input (both no-ops away from the site).
#include "model/pass.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/gate.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"

namespace gattn {

namespace {

class LayerBackward {
 public:
  LayerBackward(const PassContext& pass, int l, const LayerActivations& a, BackwardScratch& s,
                Gradients& g)
      : pass_(pass),
        w_(pass.weights),
        c_(w_.config()),
        plan_(w_.layer(l)),
        site_(plan_.gate),
        o_(plan_.offsets),
        a_(a),
        s_(s),
        g_(g),
        N_(pass.rows()) {
    z_ = gate_scores_z(w_, l, a, &ld_z_);
    dz_ = site_.source == GateScoreSource::projection ? s.d_proj + c_.q_dim() + 2 * c_.kv_dim()
                                                      : s.d_gate_tokens;
  }

  void run(const float* resid_in) {  // the reverse of LayerForward::run
    switch (plan_.spec.mlp) {
      case MlpKind::dense:
        dense_mlp_block();
        break;
    }
    switch (plan_.spec.attention) {
      case AttentionKind::full:
        full_attention_block(resid_in);
        break;
    }
  }

 private:
  void dense_mlp_block();
  void full_attention_block(const float* resid_in);
  void head_path(bool is_query, TensorRef d_out);
  // The tensor the stage passed on in the forward pass: the gate's output at the site.
  TensorRef after_gate(GateStage here, TensorRef x) const {
    return site_.at(here) ? TensorRef{a_.gate_out, site_.width()} : x;
  }
  // Where the op after the stage writes its input gradient: dx itself, or the gate's scratch.
  TensorRef grad_into(GateStage here, TensorRef dx) const {
    return site_.at(here) ? TensorRef{s_.d_gate_out, site_.width()} : dx;
  }
  TensorRef gate_back(GateStage here, TensorRef dy, TensorRef dx);
  float* block_output_back(const float* raw, const float* normed, int64_t norm_weight,
                           const float* rstd);

  const PassContext& pass_;
  const Weights& w_;
  const Config& c_;
  const LayerPlan& plan_;
  const GateSite& site_;
  const LayerOffsets& o_;
  const LayerActivations& a_;
  BackwardScratch& s_;
  Gradients& g_;
  const int N_;
  const float* z_;
  int ld_z_;
  float* dz_;
};

// dy: the gradient of the gate's output; dx receives that of its input (same stride as the input).
TensorRef LayerBackward::gate_back(GateStage here, TensorRef dy, TensorRef dx) {
  if (!site_.at(here)) return dy;
  const TensorRef x = a_.gate_in;
  switch (site_.op) {
    case GateOp::scores:
      gate_backward(dx.data, dz_, dy.data, x.data, z_, site_.shape(N_, x.ld, ld_z_));
      break;
    case GateOp::silu:
      silu_backward(dx.data, dy.data, x.data, int64_t(N_) * site_.width());
      break;
    case GateOp::head_rmsnorm:
      rmsnorm_backward(
          dx.data, g_.at(o_.sdpa_norm), dy.data, x.data, w_.at(o_.sdpa_norm), a_.gate_rstd,
          {N_, site_.heads, site_.head_dim, x.ld, site_.width(), site_.head_dim}, false);
      break;
  }
  return dx;
}

// The gradient with respect to the raw block output, from s_.d_resid (which it may return).
float* LayerBackward::block_output_back(const float* raw, const float* normed, int64_t norm_weight,
                                        const float* rstd) {
  const int C = c_.hidden_size;
  float* cur = s_.d_resid;
  if (c_.block_output_clip > 0) {
    clip_backward(s_.d_block, cur, c_.sandwich_norm ? normed : raw, int64_t(N_) * C,
                  float(c_.block_output_clip));
    cur = s_.d_block;
  }
  if (c_.sandwich_norm) {
    rmsnorm_backward(s_.d_block_normed, g_.at(norm_weight), cur, raw, w_.at(norm_weight), rstd,
                     {N_, 1, C, C, C, 0}, false);
    cur = s_.d_block_normed;
  }
  return cur;
}

// s_.d_resid holds dL/d(layer output) and becomes dL/d(resid_mid).
void LayerBackward::dense_mlp_block() {
  const int N = N_, C = c_.hidden_size, I = c_.intermediate_size;
  OpSections ops(pass_.profile);
  ops.next("residual (and sandwich norm, clip)");
  const float* d_down =
      block_output_back(a_.down_out, a_.mlp_normed, o_.mlp_output_norm, a_.mlp_norm_rstd);
  ops.next("mlp down projection");
  linear_backward(s_.d_mlp_act, g_.at(o_.mlp_down), d_down, a_.mlp_act, w_.at(o_.mlp_down), N, I,
                  C);
  ops.next("swiglu");
  swiglu_backward(s_.d_gate_up, s_.d_mlp_act, a_.gate_up, N, I);
  ops.next("mlp gate/up projection");
  linear_backward(s_.d_ln, g_.at(o_.mlp_gate_up), s_.d_gate_up, a_.ln2_out, w_.at(o_.mlp_gate_up),
                  N, C, 2 * I);
  ops.next("norms");
  rmsnorm_backward(s_.d_resid, g_.at(o_.post_attn_norm), s_.d_ln, a_.resid_mid,
                   w_.at(o_.post_attn_norm), a_.ln2_rstd, {N, 1, C, C, C, 0}, true);
}

// d_out: the gradient of q (or k) as attention read it.
void LayerBackward::head_path(bool is_query, TensorRef d_out) {
  const int heads = is_query ? c_.num_attention_heads : c_.num_key_value_heads;
  const int d = c_.head_dim, dim = heads * d, P = w_.projection_stride();
  const int64_t norm = is_query ? o_.q_norm : o_.k_norm;
  const int col = is_query ? 0 : c_.q_dim();
  const GateStage projected = is_query ? GateStage::query_projection : GateStage::key_projection;
  const TensorRef cur = gate_back(is_query ? GateStage::query_rotated : GateStage::key_rotated,
                                  d_out, {is_query ? s_.d_q : s_.d_k, dim});
  const TensorRef target{s_.d_proj + col, P};
  const TensorRef dst = grad_into(projected, target);
  const TensorRef src = after_gate(projected, {a_.proj + col, P});
  RopeShape rs{N_, pass_.positions, heads, d, dim, dim};
  if (norm != kAbsent) {
    rope_backward(cur.data, cur.data, w_.rope(), rs);
    rmsnorm_backward(dst.data, g_.at(norm), cur.data, src.data, w_.at(norm),
                     is_query ? a_.q_rstd : a_.k_rstd, {N_, heads, d, src.ld, dim, 0}, false);
  } else {
    rs.ld_in = dst.ld;
    rope_backward(dst.data, cur.data, w_.rope(), rs);
  }
  gate_back(projected, dst, target);
}

// s_.d_resid holds dL/d(resid_mid) and becomes dL/d(layer input).
void LayerBackward::full_attention_block(const float* resid_in) {
  const int N = N_, C = c_.hidden_size, qd = c_.q_dim(), kvd = c_.kv_dim();
  const int P = w_.projection_stride();
  OpSections ops(pass_.profile);
  ops.next("residual (and sandwich norm, clip)");
  const float* attn_raw = after_gate(GateStage::output_projection, {a_.o_out, C}).data;
  float* d_block =
      block_output_back(attn_raw, a_.attn_normed, o_.attn_output_norm, a_.attn_norm_rstd);
  ops.next("gate");
  // d_ln is free here: the MLP block is done with it and the projection's backward rewrites it.
  const TensorRef d_o = gate_back(GateStage::output_projection, {d_block, C}, {s_.d_ln, C});
  ops.next("o_proj");
  const TensorRef d_attn{s_.d_attn, qd};
  const TensorRef d_o_in = grad_into(GateStage::attention_output, d_attn);
  linear_backward(d_o_in.data, g_.at(o_.o_proj), d_o.data,
                  after_gate(GateStage::attention_output, {a_.attn_out, qd}).data, w_.at(o_.o_proj),
                  N, qd, C);
  ops.next("gate");
  const bool gated_here = site_.in_attention();  // as in the forward pass (no interventions)
  if (!gated_here) gate_back(GateStage::attention_output, d_o_in, d_attn);

  ops.next("attention (and a G1 gate it applies)");
  const TensorRef d_q = grad_into(GateStage::query_rotated, {s_.d_q, qd});
  const TensorRef d_k = grad_into(GateStage::key_rotated, {s_.d_k, kvd});
  const TensorRef d_v_target{s_.d_proj + qd + kvd, P};
  const TensorRef d_v = grad_into(GateStage::value_projection, d_v_target);
  const AttentionShape shape =
      self_attention_shape(pass_.batch, pass_.seq_len, c_.num_attention_heads,
                           c_.num_key_value_heads, c_.head_dim, a_.q.ld, a_.k.ld, a_.v.ld, qd);
  const OutputGate<float> gate{.gate = site_.head_gate(),
                               .z = z_,
                               .ld_z = ld_z_,
                               .gated = nullptr,
                               .ld_gated = 0,
                               .d_z = dz_,
                               .ld_dz = ld_z_ == 0 ? site_.scores : ld_z_};
  attention_backward(d_q.data, d_k.data, d_v.data, gated_here ? d_o_in.data : s_.d_attn,
                     a_.attn_out, a_.attn_lse, a_.q.data, a_.k.data, a_.v.data, shape,
                     gated_here ? &gate : nullptr);
  ops.next("gate");
  gate_back(GateStage::value_projection, d_v, d_v_target);

  ops.next("q/k norm and rope (and a q/k gate)");
  head_path(true, d_q);
  head_path(false, d_k);
  ops.next("gate");
  if (site_.source == GateScoreSource::logit)
    column_sum(g_.at(o_.gate_logit), s_.d_gate_tokens, N, site_.scores);

  ops.next("q/k/v/gate projection");
  linear_backward(s_.d_ln, g_.at(o_.attn_proj), s_.d_proj, a_.ln1_out, w_.at(o_.attn_proj), N, C,
                  w_.layout().attn_proj_rows, false, P);
  ops.next("norms");
  rmsnorm_backward(s_.d_resid, g_.at(o_.input_norm), s_.d_ln, resid_in, w_.at(o_.input_norm),
                   a_.ln1_rstd, {N, 1, C, C, C, 0}, true);
}

}  // namespace

void layer_backward(const PassContext& pass, int l, const float* resid_in,
                    const LayerActivations& a, BackwardScratch& s, Gradients& g) {
  LayerBackward(pass, l, a, s, g).run(resid_in);
}

}  // namespace gattn
