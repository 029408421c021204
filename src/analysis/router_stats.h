// What a mixture-of-experts layer's router does on held-out sequences: the entropy of its softmax
// (how decided it is), each expert's share of the top-k choices (the load histogram; an expert
// no token chose is dead), the probability mass of the chosen experts, and the shared expert's
// sigmoid gate (a gate on an MLP's output, as G1 is on attention's: is it sparse?).
#pragma once
#include <cstdint>
#include <vector>

#include "analysis/layer_views.h"
#include "model/layer_config.h"

namespace gattn {

struct RouterLayerStats {
  double mean_entropy = 0;             // nats, per token
  double entropy_ratio = 0;            // mean_entropy / ln(experts): 1 is uniform
  std::vector<double> load = {};       // [experts] share of the top-k choices (sums to 1)
  std::vector<int> dead_experts = {};  // experts no token chose
  double max_load_ratio = 0;           // max load / (1 / experts): 1 is balanced
  double load_cv = 0;                  // coefficient of variation of the load over experts
  double mean_selected_mass = 0;       // sum of the k chosen probabilities, per token
  // The shared expert's gate (without a shared expert: has_shared false, the rest 0).
  bool has_shared = false;
  double shared_gate_mean = 0, shared_gate_below_01 = 0;
  std::vector<double> shared_gate_histogram = {};  // 10 bins over [0, 1]: shares of tokens
};

class RouterSums {
 public:
  explicit RouterSums(const MoeConfig& m);
  void add(const LayerView& v, int64_t tokens);
  RouterLayerStats result() const;

 private:
  int experts_, k_;
  bool shared_;
  std::vector<int64_t> chosen_;
  std::vector<int32_t> choice_;  // one token's
  double entropy_ = 0, selected_ = 0, gate_ = 0, below_ = 0;
  std::vector<int64_t> gate_bins_;
  int64_t tokens_ = 0;
};

}  // namespace gattn
