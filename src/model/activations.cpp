// The memory plan of a pass: which buffers each layer keeps, sized for a number of token rows.
#include <algorithm>

#include "model/pass.h"

namespace gattn {

void plan_layer_activations(Arena& arena, const Weights& w, int l, int64_t N, LayerActivations& a) {
  const Config& c = w.config();
  const GateSite& gate = w.layer(l).gate;
  const int64_t C = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim(), H = c.num_attention_heads,
                K = c.num_key_value_heads, I = c.intermediate_size, P = w.projection_stride();
  auto keep = [&](float** slot, int64_t floats, const char* name, bool needed = true) {
    if (needed) arena.plan(slot, floats, name);
  };
  keep(&a.ln1_rstd, N, "ln1 rstd");
  keep(&a.ln1_out, N * C, "ln1 output");
  keep(&a.proj, N * P, "q/k/v/gate projection");
  keep(&a.q_rot, N * qd, "q normed and rotated");
  keep(&a.q_rstd, N * H, "q_norm rstd", c.use_qk_norm);
  keep(&a.k_rot, N * kvd, "k normed and rotated");
  keep(&a.k_rstd, N * K, "k_norm rstd", c.use_qk_norm);
  keep(&a.attn_out, N * qd, "attention output");
  keep(&a.attn_lse, N * H, "attention log-sum-exp");
  keep(&a.gate_out, N * gate.width(), "gate output", gate.stage != GateStage::none);
  keep(&a.gate_rstd, N * gate.heads, "gate head rmsnorm rstd", gate.op == GateOp::head_rmsnorm);
  keep(&a.o_out, N * C, "o_proj output");
  keep(&a.attn_norm_rstd, N, "attn_output_norm rstd", c.sandwich_norm);
  keep(&a.attn_normed, N * C, "attn_output_norm output", c.sandwich_norm);
  keep(&a.resid_mid, N * C, "residual mid-layer");
  keep(&a.ln2_rstd, N, "ln2 rstd");
  keep(&a.ln2_out, N * C, "ln2 output");
  keep(&a.gate_up, N * 2 * I, "mlp gate/up projection");
  keep(&a.mlp_act, N * I, "mlp activation");
  keep(&a.down_out, N * C, "mlp output");
  keep(&a.mlp_norm_rstd, N, "mlp_output_norm rstd", c.sandwich_norm);
  keep(&a.mlp_normed, N * C, "mlp_output_norm output", c.sandwich_norm);
}

void plan_pass_buffers(Arena& arena, const Weights& w, int64_t N, PassBuffers& b) {
  const Config& c = w.config();
  b.resid.assign(c.num_hidden_layers + 1, nullptr);
  for (float*& resid : b.resid) arena.plan(&resid, N * c.hidden_size, "residual");
  b.layers.assign(c.num_hidden_layers, LayerActivations{});
  for (int l = 0; l < c.num_hidden_layers; ++l) plan_layer_activations(arena, w, l, N, b.layers[l]);
  arena.plan(&b.final_rstd, N, "final norm rstd");
  arena.plan(&b.final_out, N * c.hidden_size, "final norm output");
}

void allocate_kv_cache(KvCache& cache, const Config& c, int sequences, int capacity) {
  cache.capacity = capacity;
  cache.sequences = sequences;
  cache.keys.assign(c.num_hidden_layers, nullptr);
  cache.values.assign(c.num_hidden_layers, nullptr);
  const int64_t floats = int64_t(sequences) * capacity * c.kv_dim();
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    cache.storage.plan(&cache.keys[l], floats, "kv cache keys");
    cache.storage.plan(&cache.values[l], floats, "kv cache values");
  }
  cache.storage.allocate();
}

void plan_backward_scratch(Arena& arena, const Weights& w, int64_t N, BackwardScratch& s) {
  const Config& c = w.config();
  const int64_t C = c.hidden_size, qd = c.q_dim(), kvd = c.kv_dim(), I = c.intermediate_size;
  int64_t gate_width = 0, logit_scores = 0;  // the widest over the layers
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const GateSite& gate = w.layer(l).gate;
    if (gate.stage != GateStage::none) gate_width = std::max<int64_t>(gate_width, gate.width());
    if (gate.source == GateScoreSource::logit)
      logit_scores = std::max<int64_t>(logit_scores, gate.scores);
  }
  s = BackwardScratch{};
  arena.plan(&s.d_resid, N * C, "d residual");
  arena.plan(&s.d_block, N * C, "d block output");
  arena.plan(&s.d_block_normed, N * C, "d block output normed");
  arena.plan(&s.d_proj, N * w.projection_stride(), "d projection");
  if (logit_scores > 0) arena.plan(&s.d_gate_tokens, N * logit_scores, "d gate scores per token");
  arena.plan(&s.d_q, N * qd, "d q");
  arena.plan(&s.d_k, N * kvd, "d k");
  arena.plan(&s.d_attn, N * qd, "d attention output");
  if (gate_width > 0) arena.plan(&s.d_gate_out, N * gate_width, "d gate output");
  arena.plan(&s.d_ln, N * C, "d norm output");
  arena.plan(&s.d_gate_up, N * 2 * I, "d mlp gate/up");
  arena.plan(&s.d_mlp_act, N * I, "d mlp activation");
}

}  // namespace gattn
