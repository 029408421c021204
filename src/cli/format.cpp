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
  }
  if (config.gate.enabled())
    std::printf("  gate adds %s parameters (+%.2f%% over the same model without a gate)\n",
                with_commas(layout.total() - base).c_str(), 100.0 * (layout.total() - base) / base);
}

}  // namespace gattn
