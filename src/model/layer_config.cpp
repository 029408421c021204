#include "model/layer_config.h"

namespace gattn {

std::vector<LayerConfig> layer_configs(const Config& c) {
  const BlockOutputConfig output{.hidden = c.hidden_size,
                                 .eps = float(c.rms_norm_eps),
                                 .sandwich_norm = c.sandwich_norm,
                                 .clip = float(c.block_output_clip)};
  const GateSite gate = gate_site(c);
  std::vector<LayerConfig> layers;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    const LayerSpec spec = c.layer(l);
    const bool full = spec.attention == AttentionKind::full;  // the gate is full attention's
    layers.push_back({.attention = {.kind = spec.attention,
                                    .hidden = c.hidden_size,
                                    .heads = c.num_attention_heads,
                                    .kv_heads = c.num_key_value_heads,
                                    .head_dim = c.head_dim,
                                    .qk_norm = c.use_qk_norm,
                                    .gate_config = full ? c.gate : GateConfig{},
                                    .gate = full ? gate : GateSite{},
                                    .output = output,
                                    .delta_net = {.key_heads = c.linear_num_key_heads,
                                                  .value_heads = c.linear_num_value_heads,
                                                  .key_dim = c.linear_key_head_dim,
                                                  .value_dim = c.linear_value_head_dim,
                                                  .conv_kernel = c.linear_conv_kernel_dim,
                                                  .tiled = c.linear_value_heads_tiled}},
                      .mlp = {.kind = spec.mlp,
                              .hidden = c.hidden_size,
                              .intermediate = c.intermediate_size,
                              .output = output,
                              .moe = {.experts = c.num_experts,
                                      .top_k = c.num_experts_per_tok,
                                      .expert_intermediate = c.moe_intermediate_size,
                                      .shared_intermediate = c.shared_expert_intermediate_size,
                                      .norm_topk = c.norm_topk_prob}}});
  }
  return layers;
}

}  // namespace gattn
