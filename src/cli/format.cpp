#include "cli/format.h"

#include <cstdio>

#include "io/safetensors.h"
#include "model/flops.h"
#include "model/layout.h"

namespace gattn {

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

// What decoding a mixture of experts needs in bf16 with its experts mapped from the checkpoint
// (docs/INFERENCE.md): in memory, every weight but the experts; mapped, the experts; read per
// token, the active weights; per sequence, the Gated DeltaNet layers' fp32 state and convolution
// columns, and the full-attention layers' bf16 keys and values per token of context.
static void print_moe_memory_plan(const Config& c, const ParamLayout& layout, int64_t active) {
  int64_t experts = 0;
  for (const TensorSpec& t : layout.tensors())
    if (t.name.find(".mlp.experts.") != std::string::npos) experts += t.numel;
  double state = 0, kv_per_token = 0;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    if (c.layer(l).attention == AttentionKind::linear)
      state += 4.0 * (double(c.linear_num_value_heads) * c.linear_key_head_dim *
                          c.linear_value_head_dim +
                      double(c.linear_conv_kernel_dim - 1) *
                          (2.0 * c.linear_num_key_heads * c.linear_key_head_dim +
                           double(c.linear_num_value_heads) * c.linear_value_head_dim));
    else
      kv_per_token += 2.0 * 2 * c.num_key_value_heads * c.head_dim;
  }
  const double gb = 1e-9;
  std::printf("  memory plan, bf16 weights with the experts mapped from the checkpoint:\n");
  std::printf("    %-18s %8.2f GB  (every weight but the experts)\n", "in memory",
              double(layout.total() - experts) * 2 * gb);
  std::printf("    %-18s %8.2f GB  (the experts: paged in as the router chooses them)\n",
              "mapped", double(experts) * 2 * gb);
  std::printf("    %-18s %8.2f GB  (the active weights and one embedding row)\n",
              "read per token", (double(active) + c.hidden_size) * 2 * gb);
  std::printf("    %-18s %8.2f MiB (Gated DeltaNet state and convolution columns, fp32) + %.1f KiB "
              "per token of context (bf16 keys and values)\n",
              "per sequence", state / 1048576.0, kv_per_token / 1024.0);
}

void print_parameter_table(const Config& config, bool per_tensor) {
  const ParamLayout layout(config);
  Config ungated = config;
  ungated.gate = GateConfig{};
  const int64_t base = ParamLayout(ungated).total();
  std::printf("parameters (gate: %s)\n", gate_description(config.gate).c_str());
  if (per_tensor)
    for (const TensorSpec& t : layout.tensors())
      std::printf("  %-52s %-16s %15s\n", t.name.c_str(), shape_string(t.shape).c_str(),
                  with_commas(t.numel).c_str());
  for (const auto& [component, count] : layout.component_counts())
    std::printf("  %-20s %15s  %5.1f%%\n", component.c_str(), with_commas(count).c_str(),
                100.0 * count / layout.total());
  std::printf("  %-20s %15s\n", "total", with_commas(layout.total()).c_str());
  if (config.has_moe_layers()) {  // a token runs k experts of each mixture
    const int64_t active = active_parameters(config);
    std::printf("  %-20s %15s  (k of each layer's experts; without the input embedding)\n",
                "active per token", with_commas(active).c_str());
    if (!config.tie_word_embeddings)
      std::printf("  %-20s %15s\n", "active + embedding",
                  with_commas(active + int64_t(config.vocab_size) * config.hidden_size).c_str());
    print_moe_memory_plan(config, layout, active);
  }
  if (config.gate.enabled())
    std::printf("  gate adds %s parameters (+%.2f%% over the same model without a gate)\n",
                with_commas(layout.total() - base).c_str(), 100.0 * (layout.total() - base) / base);
}

}  // namespace gattn
