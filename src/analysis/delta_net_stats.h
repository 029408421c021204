// What a Gated DeltaNet layer's gates do on held-out sequences, per value head: its output gate
// silu(z) (the paper's G1 site in a linear-attention layer: the mean, and the share near zero, as
// for a sigmoid gate's scores), its state decay exp(g) and its write strength beta.
#pragma once
#include <cstdint>
#include <vector>

#include "analysis/layer_views.h"
#include "model/layer_config.h"

namespace gattn {

struct DeltaNetLayerStats {
  // Per value head, over tokens (and, for the gate, over its channels).
  std::vector<double> mean_gate = {}, fraction_gate_below_01 = {};  // |silu(z)| < 0.1
  std::vector<double> mean_gate_first = {}, mean_gate_rest = {};    // at position 0 / after
  std::vector<double> mean_decay = {}, mean_beta = {};
  double layer_mean_gate = 0, layer_mean_decay = 0, layer_mean_beta = 0;  // means over heads
};

class DeltaNetSums {
 public:
  explicit DeltaNetSums(const DeltaNetConfig& d);
  // One batch's views of `tokens` rows, windows of seq_len (position = row % seq_len).
  void add(const LayerView& v, int64_t tokens, int seq_len);
  DeltaNetLayerStats result() const;

 private:
  int heads_, dim_;
  std::vector<double> gate_, below_, gate_at_[2], decay_, beta_;  // sums per head
  int64_t tokens_ = 0, tokens_at_[2] = {0, 0};
};

}  // namespace gattn
