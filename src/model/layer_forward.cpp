// The forward pass of one decoder layer (docs/MODEL.md, Forward). The gate is applied at the
// stage its site names: each stage passes its tensor through gate_at(), which returns it
// unchanged everywhere but at the site.
#include <algorithm>
#include <cstring>

#include "model/pass.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/gate.h"
#include "ops/matmul.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"
#include "ops/small_batch_linear.h"
#include "util/error.h"

namespace gattn {

void project(const Weights& w, int64_t offset, float* out, const float* in, int rows, int in_dim,
             int out_dim, int ld_out) {
  if (const uint16_t* bf16 = w.bf16_data(); bf16 && rows <= kSmallBatchRows)
    small_batch_linear(out, in, bf16 + offset, rows, in_dim, out_dim, false, ld_out);
  else
    linear_forward(out, in, w.at(offset), rows, in_dim, out_dim, false, ld_out);
}

const float* gate_scores_z(const Weights& w, int l, const LayerActivations& a, int* ld_z) {
  const Config& c = w.config();
  const LayerPlan& plan = w.layer(l);
  *ld_z = 0;
  switch (plan.gate.source) {
    case GateScoreSource::projection:
      *ld_z = w.projection_stride();
      return a.proj + c.q_dim() + 2 * c.kv_dim();
    case GateScoreSource::logit:
      return w.at(plan.offsets.gate_logit);
    case GateScoreSource::none:
      break;
  }
  return nullptr;
}

namespace {

// The gate's output with its scores replaced by one forced score (an intervention).
void forced_gate(float* out, TensorRef x, int rows, const GateSite& site, float score) {
  const int width = site.width();
  const bool add = site.op == GateOp::scores && site.additive;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < width; ++j) {
      const float y = x.data[r * x.ld + j];
      out[r * width + j] = add ? y + score : y * score;
    }
}

class LayerForward {
 public:
  LayerForward(const PassContext& pass, int l, LayerActivations& a)
      : pass_(pass),
        w_(pass.weights),
        c_(w_.config()),
        plan_(w_.layer(l)),
        o_(plan_.offsets),
        a_(a),
        l_(l),
        N_(pass.rows()),
        eps_(float(c_.rms_norm_eps)) {
    z_ = gate_scores_z(w_, l, a, &ld_z_);
  }

  // The layer's kinds (LayerSpec) pick its blocks; a new kind is a new block function here and
  // in layer_backward.cpp.
  void run(const float* resid_in, float* resid_out) {
    switch (plan_.spec.attention) {
      case AttentionKind::full:
        full_attention_block(resid_in);
        break;
    }
    switch (plan_.spec.mlp) {
      case MlpKind::dense:
        dense_mlp_block(resid_out);
        break;
    }
  }

 private:
  void full_attention_block(const float* resid_in);  // writes a_.resid_mid
  void dense_mlp_block(float* resid_out);
  TensorRef gate_at(GateStage here, TensorRef x);
  void zero_values(TensorRef v);
  TensorRef head_path(bool is_query);
  void cached_attention(TensorRef q, TensorRef k, TensorRef v);
  void block_output(float* resid_out, const float* resid_in, const float* raw, int64_t norm_weight,
                    float* rstd, float* normed);

  const PassContext& pass_;
  const Weights& w_;
  const Config& c_;
  const LayerPlan& plan_;
  const LayerOffsets& o_;
  LayerActivations& a_;
  const int l_, N_;
  const float eps_;
  const float* z_;
  int ld_z_;
};

TensorRef LayerForward::gate_at(GateStage here, TensorRef x) {
  const GateSite& site = plan_.gate;
  if (!site.at(here)) return x;
  a_.gate_in = x;
  const GateOverride forced =
      pass_.interventions ? pass_.interventions->gate_at(l_) : GateOverride{};
  if (forced.everywhere()) {
    forced_gate(a_.gate_out, x, N_, site, forced_gate_score(forced, site, l_));
    return {a_.gate_out, site.width()};
  }
  switch (site.op) {
    case GateOp::scores:
      gate_forward(a_.gate_out, x.data, z_, site.shape(N_, x.ld, ld_z_));
      break;
    case GateOp::silu:
      GATTN_ASSERT(x.ld == site.width(), "gate: silu needs a packed input");
      silu_forward(a_.gate_out, x.data, int64_t(N_) * site.width());
      break;
    case GateOp::head_rmsnorm:
      rmsnorm_forward(a_.gate_out, a_.gate_rstd, x.data, w_.at(o_.sdpa_norm),
                      {N_, site.heads, site.head_dim, x.ld, site.width(), site.head_dim}, eps_);
      break;
  }
  if (forced.active()) {  // at one position only
    const float score = forced_gate_score(forced, site, l_);
    for (int64_t r = 0; r < N_; ++r)
      if (pass_.positions[r] == forced.position)
        forced_gate(a_.gate_out + r * site.width(), {x.data + r * x.ld, x.ld}, 1, site, score);
  }
  return {a_.gate_out, site.width()};
}

// An intervention: the value vectors attention reads, zeroed at every position or one.
void LayerForward::zero_values(TensorRef v) {
  const ValueOverride zero =
      pass_.interventions ? pass_.interventions->value_at(l_) : ValueOverride{};
  if (!zero.active()) return;
  for (int64_t r = 0; r < N_; ++r)
    if (zero.position == kEveryPosition || pass_.positions[r] == zero.position)
      std::fill_n(v.data + r * v.ld, c_.kv_dim(), 0.0f);
}

// q or k as attention reads it: projection -> [gate] -> [QK-norm] -> RoPE -> [gate].
TensorRef LayerForward::head_path(bool is_query) {
  const int heads = is_query ? c_.num_attention_heads : c_.num_key_value_heads;
  const int d = c_.head_dim, dim = heads * d;
  const int64_t norm = is_query ? o_.q_norm : o_.k_norm;
  float* rot = is_query ? a_.q_rot : a_.k_rot;
  float* rstd = is_query ? a_.q_rstd : a_.k_rstd;
  TensorRef x{a_.proj + (is_query ? 0 : c_.q_dim()), w_.projection_stride()};
  x = gate_at(is_query ? GateStage::query_projection : GateStage::key_projection, x);
  RopeShape rs{N_, pass_.positions, heads, d, x.ld, dim};
  if (norm != kAbsent) {
    rmsnorm_forward(rot, rstd, x.data, w_.at(norm), {N_, heads, d, x.ld, dim, 0}, eps_);
    rs.ld_in = dim;
    rope_forward(rot, rot, w_.rope(), rs);
  } else {
    rope_forward(rot, x.data, w_.rope(), rs);
  }
  return gate_at(is_query ? GateStage::query_rotated : GateStage::key_rotated, {rot, dim});
}

// Each sequence of the pass appends its keys and values to its cache sequence at its rows'
// positions, then attends to every cached position up to them.
void LayerForward::cached_attention(TensorRef q, TensorRef k, TensorRef v) {
  const int H = c_.num_attention_heads, K = c_.num_key_value_heads, d = c_.head_dim;
  const int kvd = c_.kv_dim(), T = pass_.seq_len;
  KvCache& cache = *pass_.cache;
  for (int b = 0; b < pass_.batch; ++b) {
    const int s = pass_.cache_sequences ? pass_.cache_sequences[b] : b;
    if (s < 0 || s >= cache.sequences) fail("kv cache: sequence ", s, " is not in the cache");
    const int64_t row0 = int64_t(b) * T, base = int64_t(s) * cache.capacity;
    const int pos0 = pass_.positions[row0];
    if (pos0 < 0 || pos0 + T > cache.capacity)
      fail("kv cache: positions ", pos0, "..", pos0 + T - 1, " exceed its capacity ",
           cache.capacity);
    for (int t = 0; t < T; ++t) {
      const int64_t row = row0 + t, slot = base + pass_.positions[row];
      std::memcpy(cache.keys[l_] + slot * kvd, k.data + row * k.ld, sizeof(float) * kvd);
      std::memcpy(cache.values[l_] + slot * kvd, v.data + row * v.ld, sizeof(float) * kvd);
    }
    const AttentionShape shape{.batch = 1,
                               .q_len = T,
                               .kv_len = pos0 + T,
                               .q_offset = pos0,
                               .kv_stride = cache.capacity,
                               .q_heads = H,
                               .kv_heads = K,
                               .head_dim = d,
                               .ld_q = q.ld,
                               .ld_k = kvd,
                               .ld_v = kvd,
                               .ld_out = c_.q_dim()};
    attention_forward(a_.attn_out + row0 * shape.ld_out, a_.attn_lse + row0 * H,
                      q.data + row0 * q.ld, cache.keys[l_] + base * kvd,
                      cache.values[l_] + base * kvd, shape);
  }
}

void LayerForward::block_output(float* resid_out, const float* resid_in, const float* raw,
                                int64_t norm_weight, float* rstd, float* normed) {
  const int C = c_.hidden_size;
  const float* out = raw;
  if (c_.sandwich_norm) {
    rmsnorm_forward(normed, rstd, raw, w_.at(norm_weight), {N_, 1, C, C, C, 0}, eps_);
    out = normed;
  }
  residual_add(resid_out, resid_in, out, int64_t(N_) * C, float(c_.block_output_clip));
}

void LayerForward::full_attention_block(const float* resid_in) {
  const int N = N_, C = c_.hidden_size, qd = c_.q_dim(), kvd = c_.kv_dim();
  const int P = w_.projection_stride();
  OpSections ops(pass_.profile);
  ops.next("norms");
  rmsnorm_forward(a_.ln1_out, a_.ln1_rstd, resid_in, w_.at(o_.input_norm), {N, 1, C, C, C, 0},
                  eps_);
  ops.next("q/k/v/gate projection");
  project(w_, o_.attn_proj, a_.proj, a_.ln1_out, N, C, w_.layout().attn_proj_rows, P);
  ops.next("q/k norm and rope (and a q/k gate)");
  a_.q = head_path(true);
  a_.k = head_path(false);
  ops.next("gate");
  a_.v = gate_at(GateStage::value_projection, {a_.proj + qd + kvd, P});
  zero_values(a_.v);
  ops.next("attention (and a G1 gate it applies)");
  bool gated_here = false;  // the G1 gate applied by attention itself
  if (pass_.cache) {
    cached_attention(a_.q, a_.k, a_.v);
  } else {
    const AttentionShape shape =
        self_attention_shape(pass_.batch, pass_.seq_len, c_.num_attention_heads,
                             c_.num_key_value_heads, c_.head_dim, a_.q.ld, a_.k.ld, a_.v.ld, qd);
    // A pass with interventions may force the gate's scores: it gates on its own (gate_at).
    gated_here = plan_.gate.in_attention() && !pass_.interventions;
    const OutputGate<float> gate{.gate = plan_.gate.head_gate(),
                                 .z = z_,
                                 .ld_z = ld_z_,
                                 .gated = a_.gate_out,
                                 .ld_gated = plan_.gate.width(),
                                 .d_z = nullptr,
                                 .ld_dz = 0};
    attention_forward(a_.attn_out, a_.attn_lse, a_.q.data, a_.k.data, a_.v.data, shape,
                      gated_here ? &gate : nullptr);
    if (gated_here) a_.gate_in = {a_.attn_out, qd};
  }
  ops.next("gate");
  const TensorRef o_in = gated_here ? TensorRef{a_.gate_out, plan_.gate.width()}
                                    : gate_at(GateStage::attention_output, {a_.attn_out, qd});
  ops.next("o_proj");
  project(w_, o_.o_proj, a_.o_out, o_in.data, N, qd, C);
  ops.next("gate");
  const TensorRef attn_raw = gate_at(GateStage::output_projection, {a_.o_out, C});
  ops.next("residual (and sandwich norm, clip)");
  block_output(a_.resid_mid, resid_in, attn_raw.data, o_.attn_output_norm, a_.attn_norm_rstd,
               a_.attn_normed);
}

void LayerForward::dense_mlp_block(float* resid_out) {
  const int N = N_, C = c_.hidden_size, I = c_.intermediate_size;
  OpSections ops(pass_.profile);
  ops.next("norms");
  rmsnorm_forward(a_.ln2_out, a_.ln2_rstd, a_.resid_mid, w_.at(o_.post_attn_norm),
                  {N, 1, C, C, C, 0}, eps_);
  ops.next("mlp gate/up projection");
  project(w_, o_.mlp_gate_up, a_.gate_up, a_.ln2_out, N, C, 2 * I);
  ops.next("swiglu");
  swiglu_forward(a_.mlp_act, a_.gate_up, N, I);
  ops.next("mlp down projection");
  project(w_, o_.mlp_down, a_.down_out, a_.mlp_act, N, I, C);
  ops.next("residual (and sandwich norm, clip)");
  block_output(resid_out, a_.resid_mid, a_.down_out, o_.mlp_output_norm, a_.mlp_norm_rstd,
               a_.mlp_normed);
}

}  // namespace

void layer_forward(const PassContext& pass, int l, const float* resid_in, LayerActivations& a,
                   float* resid_out) {
  LayerForward(pass, l, a).run(resid_in, resid_out);
}

void forward_layers(const PassContext& pass, const int32_t* ids, PassBuffers& b) {
  const Weights& w = pass.weights;
  const Config& c = w.config();
  const int C = c.hidden_size, L = c.num_hidden_layers;
  OpSections ops(pass.profile);
  ops.next("embedding");
  embedding_forward(b.resid[0], ids, w.at(w.layout().embed), pass.rows(), C, c.vocab_size);
  ops.next(nullptr);
  for (int l = 0; l < L; ++l) layer_forward(pass, l, b.resid[l], b.layers[l], b.resid[l + 1]);
  ops.next("norms");
  rmsnorm_forward(b.final_out, b.final_rstd, b.resid[L], w.at(w.layout().final_norm),
                  {pass.rows(), 1, C, C, C, 0}, float(c.rms_norm_eps));
}

}  // namespace gattn
