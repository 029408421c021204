// The Gated DeltaNet block's parameters, memory plan, decode memory and forward pass.
#include "model/blocks/gated_delta_net.h"

#include <algorithm>
#include <cmath>

#include "model/blocks/block_params.h"
#include "ops/rmsnorm.h"
#include "util/error.h"

namespace gattn {

AttentionParams add_gated_delta_net_params(ParamLayout& layout, const AttentionConfig& c,
                                           const std::string& prefix) {
  const DeltaNetConfig& d = c.delta_net;
  const int64_t C = c.hidden, H = d.value_heads;
  const std::string p = prefix + "linear_attn.";
  const char* proj = "delta_net projections";
  AttentionParams o;
  o.input_norm = layout.add(prefix + "input_layernorm.weight", {C}, Init::ones, "norms");
  o.proj = layout.add(p + "in_proj_qkv.weight", {d.conv_channels(), C}, Init::normal, proj);
  layout.add(p + "in_proj_z.weight", {d.value_width(), C}, Init::normal, proj);
  layout.add(p + "in_proj_b.weight", {H, C}, Init::normal, proj);
  layout.add(p + "in_proj_a.weight", {H, C}, Init::normal, proj);
  o.conv = layout.add(p + "conv1d.weight", {d.conv_channels(), 1, d.conv_kernel}, Init::normal,
                      "delta_net conv/gates", {.elementwise = true});
  o.dt_bias = layout.add(p + "dt_bias", {H}, Init::ones, "delta_net conv/gates");
  o.a_log = layout.add(p + "A_log", {H}, Init::log_uniform, "delta_net conv/gates", {.value = 16});
  o.head_norm = layout.add(p + "norm.weight", {d.value_dim}, Init::ones, "norms");
  o.o_proj = layout.add(p + "out_proj.weight", {C, d.value_width()}, Init::normal, proj);
  if (c.output.sandwich_norm)
    o.output_norm = layout.add(prefix + "attn_output_norm.weight", {C}, Init::ones, "norms");
  return o;
}

std::unique_ptr<BlockActivations> GatedDeltaNet::plan_activations(Arena& arena, int64_t N) const {
  auto a = std::make_unique<GatedDeltaNetActivations>();
  const int64_t C = c_.hidden, VH = d_.value_heads;
  arena.plan(&a->norm_rstd, N, "ln1 rstd");
  arena.plan(&a->normed, N * C, "ln1 output");
  arena.plan(&a->proj, N * d_.projection_stride(), "qkv/z/b/a projection");
  arena.plan(&a->g, N * VH, "delta rule log decay g");
  arena.plan(&a->beta, N * VH, "delta rule beta");
  arena.plan(&a->core, N * d_.value_width(), "delta rule output");
  arena.plan(&a->core_inv_rms, N * VH, "gated norm inverse rms");
  arena.plan(&a->o_out, N * C, "out_proj output");
  plan_block_output(arena, c_.output, N, "attn_output_norm", a->output);
  return a;
}

void GatedDeltaNet::plan_transient(Arena& arena, int64_t N, BlockActivations& activations) const {
  auto& a = static_cast<GatedDeltaNetActivations&>(activations);
  const int64_t KH = d_.key_heads;
  arena.plan(&a.conv_pre, N * d_.conv_channels(), "conv output before silu");
  arena.plan(&a.qkv, N * d_.conv_channels(), "q/k/v after conv, silu and l2 norm");
  arena.plan(&a.q_inv_norm, N * KH, "q inverse l2 norm");
  arena.plan(&a.k_inv_norm, N * KH, "k inverse l2 norm");
  arena.plan(&a.gated, N * d_.value_width(), "gated norm output");
}

std::unique_ptr<BlockScratch> GatedDeltaNet::plan_scratch(Arena& arena, int64_t N) const {
  auto s = std::make_unique<GatedDeltaNetScratch>();
  plan_block_output_scratch(arena, c_.output, N, s->output);
  arena.plan(&s->d_proj, N * d_.projection_stride(), "d qkv/z/b/a projection");
  arena.plan(&s->d_qkv, N * d_.conv_channels(), "d q/k/v");
  arena.plan(&s->d_g, N * d_.value_heads, "d g");
  arena.plan(&s->d_beta, N * d_.value_heads, "d beta");
  arena.plan(&s->d_core, N * d_.value_width(), "d delta rule output");
  arena.plan(&s->d_gated, N * d_.value_width(), "d gated norm output");
  arena.plan(&s->d_normed, N * c_.hidden, "d norm output");
  return s;
}

void DeltaNetMemory::reset(int sequence) {
  std::fill_n(conv + sequence * conv_size, conv_size, 0.0f);
  std::fill_n(state + sequence * state_size, state_size, 0.0f);
}

void DeltaNetMemory::save(int sequence, int, int, std::vector<float>& out) const {
  GATTN_ASSERT(sequence >= 0 && sequence < sequences);
  out.insert(out.end(), conv + sequence * conv_size, conv + (sequence + 1) * conv_size);
  out.insert(out.end(), state + sequence * state_size, state + (sequence + 1) * state_size);
}

int64_t DeltaNetMemory::load(int sequence, int, int to, int upto, const float* in) {
  GATTN_ASSERT(sequence >= 0 && sequence < sequences && upto == to);
  std::copy(in, in + conv_size, conv + sequence * conv_size);
  std::copy(in + conv_size, in + conv_size + state_size, state + sequence * state_size);
  return conv_size + state_size;
}

// The recurrent state stays fp32 whatever the keys and values of attention layers are.
std::unique_ptr<DecodeMemory> GatedDeltaNet::make_decode_memory(int sequences, int,
                                                                CacheDtype) const {
  auto m = std::make_unique<DeltaNetMemory>();
  m->sequences = sequences;
  m->conv_size = int64_t(d_.conv_kernel - 1) * d_.conv_channels();
  m->state_size = int64_t(d_.value_heads) * d_.key_dim * d_.value_dim;
  m->storage.plan(&m->conv, sequences * m->conv_size, "delta_net conv state");
  m->storage.plan(&m->state, sequences * m->state_size, "delta_net recurrent state (fp32)");
  m->storage.allocate();
  for (int s = 0; s < sequences; ++s) m->reset(s);
  return m;
}

ShortConvShape delta_net_conv_shape(const DeltaNetConfig& d, int sequences, int tokens) {
  return {.sequences = sequences,
          .tokens = tokens,
          .channels = d.conv_channels(),
          .kernel = d.conv_kernel,
          .in_stride = d.projection_stride(),
          .out_stride = d.conv_channels()};
}

DeltaRuleShape delta_rule_shape(const DeltaNetConfig& d, int sequences, int tokens) {
  return {.sequences = sequences,
          .tokens = tokens,
          .key_heads = d.key_heads,
          .value_heads = d.value_heads,
          .key_dim = d.key_dim,
          .value_dim = d.value_dim,
          .qk_stride = d.conv_channels(),
          .v_stride = d.conv_channels(),
          .gate_stride = d.value_heads,
          .out_stride = d.value_width(),
          .tiled_value_heads = d.tiled};
}

DeltaRuleInputs<float> delta_rule_inputs(const DeltaNetConfig& d, const float* qkv, const float* g,
                                         const float* beta, int64_t row0) {
  const int64_t ch = d.conv_channels(), H = d.value_heads;
  return {qkv + row0 * ch, qkv + row0 * ch + d.key_width(), qkv + row0 * ch + 2 * d.key_width(),
          g + row0 * H, beta + row0 * H};
}

// The convolution over whole sequences from position 0 (training, and the backward pass's
// recomputation) and the l2 norms of q and k.
void GatedDeltaNet::conv_and_norms(const PassContext& pass,
                                   const GatedDeltaNetActivations& a) const {
  short_conv_forward<float>(delta_net_conv_shape(d_, pass.batch, pass.seq_len), a.proj,
                            pass.weights.at(p_.conv), nullptr, a.conv_pre, a.qkv);
  normalize_qk(pass.rows(), a);
}

void GatedDeltaNet::normalize_qk(int64_t N, const GatedDeltaNetActivations& a) const {
  const int64_t ch = d_.conv_channels();
  l2_normalize_forward(a.qkv, N, d_.key_heads, d_.key_dim, ch, 1 / std::sqrt(float(d_.key_dim)),
                       a.q_inv_norm);
  l2_normalize_forward(a.qkv + d_.key_width(), N, d_.key_heads, d_.key_dim, ch, 1.0f, a.k_inv_norm);
}

// The convolution, the l2 norms, the gates and the delta rule: core = o of every row.
void GatedDeltaNet::mix(const PassContext& pass, GatedDeltaNetActivations& a,
                        DeltaNetMemory* memory) const {
  const Weights& w = pass.weights;
  const int B = pass.batch, N = pass.rows(), P = d_.projection_stride();
  const int64_t ch = d_.conv_channels(), vw = d_.value_width();
  OpSections ops(pass.exec.profile);
  ops.next("delta_net conv and l2 norms");
  if (!memory) {
    conv_and_norms(pass, a);
  } else {
    for (int b = 0; b < B; ++b) {
      const int s = pass.memory_sequence(b), T = pass.rows_of(b);
      if (s < 0 || s >= memory->sequences) fail("delta_net state: sequence ", s, " is not kept");
      const int64_t row0 = pass.row0(b);
      if (pass.positions[row0] == 0) memory->reset(s);  // a sequence starts again
      short_conv_forward(delta_net_conv_shape(d_, 1, T), a.proj + row0 * P, w.at(p_.conv),
                         memory->conv + s * memory->conv_size, a.conv_pre + row0 * ch,
                         a.qkv + row0 * ch);
    }
    normalize_qk(N, a);
  }
  ops.next("delta_net gates");
  const float* b_in = a.proj + ch + vw;
  delta_gates_forward(b_in + d_.value_heads, b_in, P, w.at(p_.a_log), w.at(p_.dt_bias), N,
                      d_.value_heads, a.g, a.beta, d_.value_heads);
  ops.next("delta rule");
  if (!memory) {
    const DeltaRuleShape s = delta_rule_shape(d_, B, pass.seq_len);
    std::vector<float> state(size_t(B * s.state_size()), 0.0f);
    delta_rule_chunked(pass.exec, s, delta_rule_inputs(d_, a.qkv, a.g, a.beta, 0), state.data(),
                       a.core, static_cast<float*>(nullptr));
    if (pass.hooks) {
      show(pass, HookSite::delta_net_qkv, a.qkv, int(ch));
      const int64_t size = s.state_size();
      pass.hooks->on_tensor(tensor_event(layer_, HookSite::delta_net_state,
                                         {state.data(), B, int(size), size}, pass.positions,
                                         pass.seq_len));
    }
    return;
  }
  for (int b = 0; b < B; ++b) {
    const int T = pass.rows_of(b);
    const int64_t row0 = pass.row0(b);
    const DeltaRuleShape s = delta_rule_shape(d_, 1, T);
    float* state = memory->state + pass.memory_sequence(b) * memory->state_size;
    const DeltaRuleInputs<float> in = delta_rule_inputs(d_, a.qkv, a.g, a.beta, row0);
    if (T == 1)
      delta_rule_recurrent(pass.exec, s, in, state, a.core + row0 * vw);
    else
      delta_rule_chunked<float>(pass.exec, s, in, state, a.core + row0 * vw, nullptr);
  }
  if (pass.hooks) show(pass, HookSite::delta_net_qkv, a.qkv, int(ch));
}

void GatedDeltaNet::show(const PassContext& pass, HookSite site, float* data, int cols) const {
  pass.hooks->on_tensor(
      tensor_event(layer_, site, {data, pass.rows(), cols, cols}, pass.positions, pass.seq_len));
}

// y = norm.weight * rmsnorm(core) * silu(z). With hooks: silu(z) made first and shown (an
// analysis records it, an intervention may change it), then applied as it is.
void GatedDeltaNet::gated_norm(const PassContext& pass, GatedDeltaNetActivations& a) const {
  const Weights& w = pass.weights;
  const int N = pass.rows(), P = d_.projection_stride(), vw = d_.value_width();
  const float* z = a.proj + d_.conv_channels();
  if (!pass.hooks) {
    gated_rmsnorm_forward(a.core, z, w.at(p_.head_norm), N, d_.value_heads, d_.value_dim, vw, P,
                          c_.output.eps, a.gated, vw, a.core_inv_rms);
    return;
  }
  show(pass, HookSite::delta_net_log_decay, a.g, d_.value_heads);
  show(pass, HookSite::delta_net_beta, a.beta, d_.value_heads);
  a.gate_values.resize(size_t(N) * vw);
  silu_rows(z, N, vw, P, a.gate_values.data(), vw);
  show(pass, HookSite::delta_net_gate, a.gate_values.data(), vw);
  gated_rmsnorm_forward_with_gate(a.core, a.gate_values.data(), w.at(p_.head_norm), N,
                                  d_.value_heads, d_.value_dim, vw, vw, c_.output.eps, a.gated, vw,
                                  a.core_inv_rms);
}

void GatedDeltaNet::forward(const PassContext& pass, BlockActivations& activations,
                            DecodeMemory* memory, const float* in, float* out) const {
  auto& a = static_cast<GatedDeltaNetActivations&>(activations);
  const Weights& w = pass.weights;
  const int N = pass.rows(), C = c_.hidden, P = d_.projection_stride(), vw = d_.value_width();
  OpSections ops(pass.exec.profile);
  ops.next("norms");
  rmsnorm_forward(a.normed, a.norm_rstd, in, w.at(p_.input_norm), {N, 1, C, C, C, 0},
                  c_.output.eps);
  ops.next("delta_net projection");
  project(pass.exec, w, p_.proj, a.proj, a.normed, N, C, d_.projection_rows(), P);
  if (pass.hooks) show(pass, HookSite::mixer_input, a.normed, C);
  ops.next(nullptr);
  mix(pass, a, static_cast<DeltaNetMemory*>(memory));
  ops.next("delta_net gated norm");
  gated_norm(pass, a);
  ops.next("delta_net out_proj");
  project(pass.exec, w, p_.o_proj, a.o_out, a.gated, N, vw, C);
  if (pass.hooks) show(pass, HookSite::mixer_output_input, a.gated, vw);
  ops.next("residual (and sandwich norm, clip)");
  block_output_forward(c_.output, w, p_.output_norm, N, out, in, a.o_out, a.output);
}

}  // namespace gattn
