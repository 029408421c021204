#include "analysis/delta_net_stats.h"

#include <cmath>

#include "util/error.h"

namespace gattn {

DeltaNetSums::DeltaNetSums(const DeltaNetConfig& d) : heads_(d.value_heads), dim_(d.value_dim) {
  for (auto* sums : {&gate_, &below_, &gate_at_[0], &gate_at_[1], &decay_, &beta_})
    sums->assign(heads_, 0.0);
}

void DeltaNetSums::add(const LayerView& v, int64_t tokens, int seq_len) {
  if (!v.delta_net_gate || !v.delta_net_log_decay || !v.delta_net_beta)
    fail("analysis: a Gated DeltaNet layer showed no gates (the pass ran without hooks)");
  for (int64_t r = 0; r < tokens; ++r) {
    const int at = r % seq_len == 0 ? 0 : 1;
    ++tokens_at_[at];
    for (int h = 0; h < heads_; ++h) {
      const float* g = v.delta_net_gate + r * v.ld_delta_net_gate + int64_t(h) * dim_;
      double sum = 0, below = 0;
      for (int c = 0; c < dim_; ++c) {
        sum += g[c];
        below += std::abs(g[c]) < 0.1f;
      }
      gate_[h] += sum / dim_;
      below_[h] += below / dim_;
      gate_at_[at][h] += sum / dim_;
      decay_[h] += std::exp(double(v.delta_net_log_decay[r * heads_ + h]));
      beta_[h] += v.delta_net_beta[r * heads_ + h];
    }
  }
  tokens_ += tokens;
}

DeltaNetLayerStats DeltaNetSums::result() const {
  DeltaNetLayerStats s;
  const auto mean = [](double sum, int64_t n) { return n ? sum / double(n) : 0.0; };
  for (int h = 0; h < heads_; ++h) {
    s.mean_gate.push_back(mean(gate_[h], tokens_));
    s.fraction_gate_below_01.push_back(mean(below_[h], tokens_));
    s.mean_gate_first.push_back(mean(gate_at_[0][h], tokens_at_[0]));
    s.mean_gate_rest.push_back(mean(gate_at_[1][h], tokens_at_[1]));
    s.mean_decay.push_back(mean(decay_[h], tokens_));
    s.mean_beta.push_back(mean(beta_[h], tokens_));
    s.layer_mean_gate += s.mean_gate.back() / heads_;
    s.layer_mean_decay += s.mean_decay.back() / heads_;
    s.layer_mean_beta += s.mean_beta.back() / heads_;
  }
  return s;
}

}  // namespace gattn
