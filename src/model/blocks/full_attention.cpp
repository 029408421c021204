// The full-attention block's parameters, memory plan and forward pass (docs/MODEL.md, Forward).
// The gate is applied at the stage its site names: each stage passes its tensor through
// gate_at(), which returns it unchanged everywhere but at the site.
#include "model/blocks/full_attention.h"

#include <algorithm>
#include <cstring>

#include "model/blocks/block_params.h"
#include "ops/attention.h"
#include "ops/bf16_gemm.h"
#include "ops/elementwise.h"
#include "ops/gate.h"
#include "ops/mlp.h"
#include "ops/rmsnorm.h"
#include "util/error.h"

namespace gattn {

AttentionParams add_full_attention_params(ParamLayout& layout, const AttentionConfig& c,
                                          const std::string& p) {
  const int64_t C = c.hidden, q = c.q_dim(), kv = c.kv_dim(), d = c.head_dim;
  const GateConfig& g = c.gate_config;
  const std::string gate = g.enabled() ? p + "self_attn." + gate_tensor_prefix(g.position) : "";
  const char* qkvo = "attention q/k/v/o";
  AttentionParams o;
  o.input_norm = layout.add(p + "input_layernorm.weight", {C}, Init::ones, "norms");
  o.proj = layout.add(p + "self_attn.q_proj.weight", {q, C}, Init::normal, qkvo);
  layout.add(p + "self_attn.k_proj.weight", {kv, C}, Init::normal, qkvo);
  layout.add(p + "self_attn.v_proj.weight", {kv, C}, Init::normal, qkvo);
  if (g.has_weight())
    layout.add(gate + ".weight", {c.gate.scores, C}, g.identity_init ? Init::zeros : Init::normal,
               "gate", {.frozen = g.frozen});
  if (g.has_logit())
    o.gate_logit =
        layout.add(gate + ".logit", {c.gate.scores}, g.initial_logit ? Init::constant : Init::zeros,
                   "gate", {.value = float(g.initial_logit.value_or(0)), .frozen = g.frozen});
  if (c.qk_norm) {
    o.q_norm = layout.add(p + "self_attn.q_norm.weight", {d}, Init::ones, "qk_norm");
    o.k_norm = layout.add(p + "self_attn.k_norm.weight", {d}, Init::ones, "qk_norm");
  }
  if (g.kind == GateKind::head_rmsnorm && g.enabled())
    o.sdpa_norm = layout.add(p + "self_attn.sdpa_norm.weight", {q}, Init::ones, "gate");
  o.o_proj = layout.add(p + "self_attn.o_proj.weight", {C, q}, Init::normal, qkvo);
  if (c.output.sandwich_norm)
    o.output_norm = layout.add(p + "attn_output_norm.weight", {C}, Init::ones, "norms");
  return o;
}

std::unique_ptr<BlockActivations> FullAttention::plan_activations(Arena& arena, int64_t N) const {
  auto a = std::make_unique<FullAttentionActivations>();
  const GateSite& gate = c_.gate;
  const int64_t C = c_.hidden, qd = c_.q_dim(), kvd = c_.kv_dim(), H = c_.heads, K = c_.kv_heads;
  auto keep = [&](float** slot, int64_t floats, const char* name, bool needed = true) {
    if (needed) arena.plan(slot, floats, name);
  };
  keep(&a->norm_rstd, N, "ln1 rstd");
  keep(&a->normed, N * C, "ln1 output");
  keep(&a->proj, N * c_.projection_stride(), "q/k/v/gate projection");
  keep(&a->q_rot, N * qd, "q normed and rotated");
  keep(&a->q_rstd, N * H, "q_norm rstd", c_.qk_norm);
  keep(&a->k_rot, N * kvd, "k normed and rotated");
  keep(&a->k_rstd, N * K, "k_norm rstd", c_.qk_norm);
  keep(&a->attn_out, N * qd, "attention output");
  keep(&a->attn_lse, N * H, "attention log-sum-exp");
  keep(&a->gate_out, N * gate.width(), "gate output", gate.stage != GateStage::none);
  keep(&a->gate_rstd, N * gate.heads, "gate head rmsnorm rstd", gate.op == GateOp::head_rmsnorm);
  keep(&a->o_out, N * C, "o_proj output");
  plan_block_output(arena, c_.output, N, "attn_output_norm", a->output);
  return a;
}

std::unique_ptr<BlockScratch> FullAttention::plan_scratch(Arena& arena, int64_t N) const {
  auto s = std::make_unique<FullAttentionScratch>();
  const GateSite& gate = c_.gate;
  const int64_t C = c_.hidden, qd = c_.q_dim(), kvd = c_.kv_dim();
  plan_block_output_scratch(arena, c_.output, N, s->output);
  arena.plan(&s->d_proj, N * c_.projection_stride(), "d projection");
  if (gate.source == GateScoreSource::logit)
    arena.plan(&s->d_gate_tokens, N * gate.scores, "d gate scores per token");
  arena.plan(&s->d_q, N * qd, "d q");
  arena.plan(&s->d_k, N * kvd, "d k");
  arena.plan(&s->d_attn, N * qd, "d attention output");
  if (gate.stage != GateStage::none) arena.plan(&s->d_gate_out, N * gate.width(), "d gate output");
  arena.plan(&s->d_normed, N * C, "d norm output");
  return s;
}

// Keys of positions [from, to), then their values: their bytes as stored (bf16 ones packed two
// to a float, a piece's pad half zero).
void KeyValueRows::save(int sequence, int from, int to, std::vector<float>& out) const {
  GATTN_ASSERT(sequence >= 0 && sequence < sequences && 0 <= from && from <= to && to <= capacity);
  const int64_t first = (int64_t(sequence) * capacity + from) * kv_dim,
                n = int64_t(to - from) * kv_dim;
  const size_t element = dtype == CacheDtype::f32 ? sizeof(float) : sizeof(uint16_t);
  const char* keys_at = dtype == CacheDtype::f32 ? reinterpret_cast<const char*>(keys + first)
                                                 : reinterpret_cast<const char*>(keys16 + first);
  const char* values_at = dtype == CacheDtype::f32
                              ? reinterpret_cast<const char*>(values + first)
                              : reinterpret_cast<const char*>(values16 + first);
  for (const char* from_bytes : {keys_at, values_at}) {
    const size_t at = out.size();
    out.resize(at + size_t(piece_floats(n)), 0.0f);
    std::memcpy(out.data() + at, from_bytes, size_t(n) * element);
  }
}

int64_t KeyValueRows::load(int sequence, int from, int to, int upto, const float* in) {
  GATTN_ASSERT(sequence >= 0 && sequence < sequences && 0 <= from && from <= upto && upto <= to &&
               to <= capacity);
  const int64_t first = (int64_t(sequence) * capacity + from) * kv_dim,
                n = int64_t(to - from) * kv_dim;
  const int64_t used = int64_t(upto - from) * kv_dim, half = piece_floats(n);
  if (dtype == CacheDtype::f32) {
    std::copy(in, in + used, keys + first);
    std::copy(in + half, in + half + used, values + first);
  } else {
    std::memcpy(keys16 + first, in, size_t(used) * sizeof(uint16_t));
    std::memcpy(values16 + first, in + half, size_t(used) * sizeof(uint16_t));
  }
  return 2 * half;
}

std::unique_ptr<DecodeMemory> FullAttention::make_decode_memory(int sequences, int capacity,
                                                                CacheDtype keys_values) const {
  auto m = std::make_unique<KeyValueRows>();
  m->capacity = capacity;
  m->sequences = sequences;
  m->kv_dim = c_.kv_dim();
  m->dtype = keys_values;
  const int64_t count = int64_t(sequences) * capacity * c_.kv_dim();
  if (keys_values == CacheDtype::f32) {
    m->storage.plan(&m->keys, count, "kv cache keys");
    m->storage.plan(&m->values, count, "kv cache values");
    m->storage.allocate();
  } else {  // bf16 bits in float-planned storage, two to a float
    float *keys = nullptr, *values = nullptr;
    m->storage.plan(&keys, (count + 1) / 2, "kv cache keys (bf16)");
    m->storage.plan(&values, (count + 1) / 2, "kv cache values (bf16)");
    m->storage.allocate();
    m->keys16 = reinterpret_cast<uint16_t*>(keys);
    m->values16 = reinterpret_cast<uint16_t*>(values);
  }
  return m;
}

const float* FullAttention::gate_scores(const Weights& w, const FullAttentionActivations& a,
                                        int* ld_z) const {
  *ld_z = 0;
  switch (c_.gate.source) {
    case GateScoreSource::projection:
      *ld_z = c_.projection_stride();
      return a.proj + c_.q_dim() + 2 * c_.kv_dim();
    case GateScoreSource::logit:
      return w.at(p_.gate_logit);
    case GateScoreSource::none:
      break;
  }
  return nullptr;
}

namespace {

// One forward pass of the block.
class AttentionForward {
 public:
  AttentionForward(const PassContext& pass, const FullAttention& block, FullAttentionActivations& a,
                   KeyValueRows* memory)
      : pass_(pass),
        w_(pass.weights),
        c_(block.config()),
        o_(block.params()),
        site_(c_.gate),
        a_(a),
        memory_(memory),
        l_(block.layer()),
        N_(pass.rows()),
        P_(c_.projection_stride()) {
    z_ = block.gate_scores(w_, a, &ld_z_);
  }
  void run(const float* in, float* out);

 private:
  TensorRef gate_at(GateStage here, TensorRef x);
  // Shows a tensor to the pass's hooks (which may change it).
  void show(HookSite site, TensorRef x, int cols) const;
  void show_gate(TensorRef in, TensorRef out) const;
  TensorRef head_path(bool is_query);
  void attention_over_memory(TensorRef q, TensorRef k, TensorRef v);

  const PassContext& pass_;
  const Weights& w_;
  const AttentionConfig& c_;
  const AttentionParams& o_;
  const GateSite& site_;
  FullAttentionActivations& a_;
  KeyValueRows* memory_;
  const int l_, N_, P_;
  const float* z_;
  int ld_z_;
};

void AttentionForward::show(HookSite site, TensorRef x, int cols) const {
  if (!pass_.hooks) return;
  pass_.hooks->on_tensor(
      tensor_event(l_, site, {x.data, N_, cols, x.ld}, pass_.positions, pass_.seq_len));
}

void AttentionForward::show_gate(TensorRef in, TensorRef out) const {
  if (!pass_.hooks) return;
  pass_.hooks->on_tensor({.layer = l_,
                          .site = HookSite::gate_output,
                          .tensor = {out.data, N_, site_.width(), out.ld},
                          .positions = pass_.positions,
                          .seq_len = pass_.seq_len,
                          .gate = &site_,
                          .gate_input = {in.data, N_, site_.width(), in.ld},
                          .gate_scores = {const_cast<float*>(z_), N_, site_.scores, ld_z_}});
}

TensorRef AttentionForward::gate_at(GateStage here, TensorRef x) {
  if (!site_.at(here)) return x;
  a_.gate_in = x;
  switch (site_.op) {
    case GateOp::scores:
      gate_forward(a_.gate_out, x.data, z_, site_.shape(N_, x.ld, ld_z_));
      break;
    case GateOp::silu:
      GATTN_ASSERT(x.ld == site_.width(), "gate: silu needs a packed input");
      silu_forward(a_.gate_out, x.data, int64_t(N_) * site_.width());
      break;
    case GateOp::head_rmsnorm:
      rmsnorm_forward(a_.gate_out, a_.gate_rstd, x.data, w_.at(o_.sdpa_norm),
                      {N_, site_.heads, site_.head_dim, x.ld, site_.width(), site_.head_dim},
                      c_.output.eps);
      break;
  }
  const TensorRef out{a_.gate_out, site_.width()};
  show_gate(x, out);
  return out;
}

// q or k as attention reads it: projection -> [gate] -> [QK-norm] -> RoPE -> [gate].
TensorRef AttentionForward::head_path(bool is_query) {
  const int heads = is_query ? c_.heads : c_.kv_heads;
  const int d = c_.head_dim, dim = heads * d;
  const int64_t norm = is_query ? o_.q_norm : o_.k_norm;
  float* rot = is_query ? a_.q_rot : a_.k_rot;
  float* rstd = is_query ? a_.q_rstd : a_.k_rstd;
  TensorRef x{a_.proj + (is_query ? 0 : c_.q_dim()), P_};
  x = gate_at(is_query ? GateStage::query_projection : GateStage::key_projection, x);
  RopeShape rs{N_, pass_.positions, heads, d, x.ld, dim};
  if (norm != kAbsent) {
    rmsnorm_forward(rot, rstd, x.data, w_.at(norm), {N_, heads, d, x.ld, dim, 0}, c_.output.eps);
    rs.ld_in = dim;
    rope_forward(rot, rot, w_.rope(), rs);
  } else {
    rope_forward(rot, x.data, w_.rope(), rs);
  }
  return gate_at(is_query ? GateStage::query_rotated : GateStage::key_rotated, {rot, dim});
}

// Each sequence of the pass appends its keys and values to its memory sequence at its rows'
// positions, then attends to every remembered position up to them.
void AttentionForward::attention_over_memory(TensorRef q, TensorRef k, TensorRef v) {
  const int H = c_.heads, kvd = c_.kv_dim();
  KeyValueRows& memory = *memory_;
  for (int b = 0; b < pass_.batch; ++b) {
    const int s = pass_.memory_sequence(b), T = pass_.rows_of(b);
    if (s < 0 || s >= memory.sequences) fail("kv cache: sequence ", s, " is not in the cache");
    const int64_t row0 = pass_.row0(b), base = int64_t(s) * memory.capacity;
    const int pos0 = pass_.positions[row0];
    if (pos0 < 0 || pos0 + T > memory.capacity)
      fail("kv cache: positions ", pos0, "..", pos0 + T - 1, " exceed its capacity ",
           memory.capacity);
    for (int t = 0; t < T; ++t) {
      const int64_t row = row0 + t, slot = base + pass_.positions[row];
      if (memory.dtype == CacheDtype::f32) {
        std::memcpy(memory.keys + slot * kvd, k.data + row * k.ld, sizeof(float) * kvd);
        std::memcpy(memory.values + slot * kvd, v.data + row * v.ld, sizeof(float) * kvd);
      } else {
        to_bf16(k.data + row * k.ld, 1, kvd, kvd, memory.keys16 + slot * kvd);
        to_bf16(v.data + row * v.ld, 1, kvd, kvd, memory.values16 + slot * kvd);
      }
    }
    const AttentionShape shape{.batch = 1,
                               .q_len = T,
                               .kv_len = pos0 + T,
                               .q_offset = pos0,
                               .kv_stride = memory.capacity,
                               .q_heads = H,
                               .kv_heads = c_.kv_heads,
                               .head_dim = c_.head_dim,
                               .ld_q = q.ld,
                               .ld_k = kvd,
                               .ld_v = kvd,
                               .ld_out = c_.q_dim()};
    float* out = a_.attn_out + row0 * shape.ld_out;
    float* lse = a_.attn_lse + row0 * H;
    if (memory.dtype == CacheDtype::f32)
      attention_forward(pass_.exec, out, lse, q.data + row0 * q.ld, memory.keys + base * kvd,
                        memory.values + base * kvd, shape);
    else
      attention_forward(pass_.exec, out, lse, q.data + row0 * q.ld, memory.keys16 + base * kvd,
                        memory.values16 + base * kvd, shape);
  }
}

void AttentionForward::run(const float* in, float* out) {
  const int N = N_, C = c_.hidden, qd = c_.q_dim(), kvd = c_.kv_dim();
  OpSections ops(pass_.exec.profile);
  ops.next("norms");
  rmsnorm_forward(a_.normed, a_.norm_rstd, in, w_.at(o_.input_norm), {N, 1, C, C, C, 0},
                  c_.output.eps);
  ops.next("q/k/v/gate projection");
  project(pass_.exec, w_, o_.proj, a_.proj, a_.normed, N, C, c_.projection_rows(), P_);
  show(HookSite::mixer_input, {a_.normed, C}, C);
  ops.next("q/k norm and rope (and a q/k gate)");
  a_.q = head_path(true);
  a_.k = head_path(false);
  show(HookSite::attention_q, a_.q, qd);
  show(HookSite::attention_k, a_.k, kvd);
  ops.next("gate");
  a_.v = gate_at(GateStage::value_projection, {a_.proj + qd + kvd, P_});
  show(HookSite::attention_v, a_.v, kvd);
  ops.next("attention (and a G1 gate it applies)");
  bool gated_here = false;  // the G1 gate applied by attention itself
  if (memory_) {
    attention_over_memory(a_.q, a_.k, a_.v);
  } else {
    const AttentionShape shape =
        self_attention_shape(pass_.batch, pass_.seq_len, c_.heads, c_.kv_heads, c_.head_dim,
                             a_.q.ld, a_.k.ld, a_.v.ld, qd);
    // Hooks that change the gate's output see it from gate_at (the gate as an op of its own).
    gated_here = site_.in_attention() && !(pass_.hooks && pass_.hooks->changes_tensors());
    const OutputGate<float> gate{.gate = site_.head_gate(),
                                 .z = z_,
                                 .ld_z = ld_z_,
                                 .gated = a_.gate_out,
                                 .ld_gated = site_.width(),
                                 .d_z = nullptr,
                                 .ld_dz = 0};
    attention_forward(pass_.exec, a_.attn_out, a_.attn_lse, a_.q.data, a_.k.data, a_.v.data, shape,
                      gated_here ? &gate : nullptr);
    if (gated_here) {
      a_.gate_in = {a_.attn_out, qd};
      show_gate(a_.gate_in, {a_.gate_out, site_.width()});
    }
  }
  show(HookSite::attention_lse, {a_.attn_lse, c_.heads}, c_.heads);
  ops.next("gate");
  const TensorRef o_in = gated_here ? TensorRef{a_.gate_out, site_.width()}
                                    : gate_at(GateStage::attention_output, {a_.attn_out, qd});
  ops.next("o_proj");
  project(pass_.exec, w_, o_.o_proj, a_.o_out, o_in.data, N, qd, C);
  show(HookSite::mixer_output_input, o_in, qd);
  ops.next("gate");
  const TensorRef raw = gate_at(GateStage::output_projection, {a_.o_out, C});
  ops.next("residual (and sandwich norm, clip)");
  block_output_forward(c_.output, w_, o_.output_norm, N, out, in, raw.data, a_.output);
}

}  // namespace

void FullAttention::forward(const PassContext& pass, BlockActivations& a, DecodeMemory* memory,
                            const float* in, float* out) const {
  AttentionForward(pass, *this, static_cast<FullAttentionActivations&>(a),
                   static_cast<KeyValueRows*>(memory))
      .run(in, out);
}

}  // namespace gattn
