// The backward pass of the full-attention block, in the reverse order of its forward pass. At
// each stage where a gate may sit, the op before the gate writes its gradient into grad_into(),
// and gate_back() turns it into the gradient of the gate's input (both no-ops away from the site).
#include "model/blocks/full_attention.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/gate.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"

namespace gattn {

namespace {

class AttentionBackward {
 public:
  AttentionBackward(const PassContext& pass, const FullAttention& block,
                    const FullAttentionActivations& a, FullAttentionScratch& s, Gradients& g)
      : pass_(pass),
        w_(pass.weights),
        c_(block.config()),
        site_(c_.gate),
        o_(block.params()),
        a_(a),
        s_(s),
        g_(g),
        N_(pass.rows()),
        P_(c_.projection_stride()) {
    z_ = block.gate_scores(w_, a, &ld_z_);
    dz_ = site_.source == GateScoreSource::projection ? s.d_proj + c_.q_dim() + 2 * c_.kv_dim()
                                                      : s.d_gate_tokens;
  }

  void run(const float* in, float* d);

 private:
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

  const PassContext& pass_;
  const Weights& w_;
  const AttentionConfig& c_;
  const GateSite& site_;
  const AttentionParams& o_;
  const FullAttentionActivations& a_;
  FullAttentionScratch& s_;
  Gradients& g_;
  const int N_, P_;
  const float* z_;
  int ld_z_;
  float* dz_;
};

// dy: the gradient of the gate's output; dx receives that of its input (same stride as the input).
TensorRef AttentionBackward::gate_back(GateStage here, TensorRef dy, TensorRef dx) {
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

// d_out: the gradient of q (or k) as attention read it.
void AttentionBackward::head_path(bool is_query, TensorRef d_out) {
  const int heads = is_query ? c_.heads : c_.kv_heads;
  const int d = c_.head_dim, dim = heads * d;
  const int64_t norm = is_query ? o_.q_norm : o_.k_norm;
  const int col = is_query ? 0 : c_.q_dim();
  const GateStage projected = is_query ? GateStage::query_projection : GateStage::key_projection;
  const TensorRef cur = gate_back(is_query ? GateStage::query_rotated : GateStage::key_rotated,
                                  d_out, {is_query ? s_.d_q : s_.d_k, dim});
  const TensorRef target{s_.d_proj + col, P_};
  const TensorRef dst = grad_into(projected, target);
  const TensorRef src = after_gate(projected, {a_.proj + col, P_});
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

// d holds dL/d(block output) and becomes dL/d(block input).
void AttentionBackward::run(const float* in, float* d) {
  const int N = N_, C = c_.hidden, qd = c_.q_dim(), kvd = c_.kv_dim();
  OpSections ops(pass_.exec.profile);
  ops.next("residual (and sandwich norm, clip)");
  const float* raw = after_gate(GateStage::output_projection, {a_.o_out, C}).data;
  float* d_block =
      block_output_backward(c_.output, w_, o_.output_norm, N, d, raw, a_.output, s_.output, g_);
  ops.next("gate");
  // d_normed is free here: the projection's backward rewrites it.
  const TensorRef d_o = gate_back(GateStage::output_projection, {d_block, C}, {s_.d_normed, C});
  ops.next("o_proj");
  const TensorRef d_attn{s_.d_attn, qd};
  const TensorRef d_o_in = grad_into(GateStage::attention_output, d_attn);
  linear_backward(pass_.exec, d_o_in.data, g_.at(o_.o_proj), d_o.data,
                  after_gate(GateStage::attention_output, {a_.attn_out, qd}).data, w_.at(o_.o_proj),
                  N, qd, C);
  ops.next("gate");
  const bool gated_here = site_.in_attention();  // as in the forward pass (no interventions)
  if (!gated_here) gate_back(GateStage::attention_output, d_o_in, d_attn);

  ops.next("attention (and a G1 gate it applies)");
  const TensorRef d_q = grad_into(GateStage::query_rotated, {s_.d_q, qd});
  const TensorRef d_k = grad_into(GateStage::key_rotated, {s_.d_k, kvd});
  const TensorRef d_v_target{s_.d_proj + qd + kvd, P_};
  const TensorRef d_v = grad_into(GateStage::value_projection, d_v_target);
  const AttentionShape shape =
      self_attention_shape(pass_.batch, pass_.seq_len, c_.heads, c_.kv_heads, c_.head_dim, a_.q.ld,
                           a_.k.ld, a_.v.ld, qd);
  const OutputGate<float> gate{.gate = site_.head_gate(),
                               .z = z_,
                               .ld_z = ld_z_,
                               .gated = nullptr,
                               .ld_gated = 0,
                               .d_z = dz_,
                               .ld_dz = ld_z_ == 0 ? site_.scores : ld_z_};
  attention_backward(pass_.exec, d_q.data, d_k.data, d_v.data, gated_here ? d_o_in.data : s_.d_attn,
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
  linear_backward(pass_.exec, s_.d_normed, g_.at(o_.proj), s_.d_proj, a_.normed, w_.at(o_.proj), N,
                  C, c_.projection_rows(), false, P_);
  ops.next("norms");
  rmsnorm_backward(d, g_.at(o_.input_norm), s_.d_normed, in, w_.at(o_.input_norm), a_.norm_rstd,
                   {N, 1, C, C, C, 0}, true);
}

}  // namespace

void FullAttention::backward(const PassContext& pass, const BlockActivations& a, BlockScratch& s,
                             Gradients& g, const float* in, float* d) const {
  AttentionBackward(pass, *this, static_cast<const FullAttentionActivations&>(a),
                    static_cast<FullAttentionScratch&>(s), g)
      .run(in, d);
}

}  // namespace gattn
