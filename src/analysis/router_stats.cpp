#include "analysis/router_stats.h"

#include <algorithm>
#include <cmath>

#include "ops/moe_routing.h"
#include "util/error.h"

namespace gattn {

constexpr int kGateBins = 10;

RouterSums::RouterSums(const MoeConfig& m)
    : experts_(m.experts),
      k_(m.top_k),
      shared_(m.shared_intermediate > 0),
      chosen_(size_t(m.experts), 0),
      choice_(size_t(m.top_k)),
      gate_bins_(kGateBins, 0) {}

void RouterSums::add(const LayerView& v, int64_t tokens) {
  if (!v.router_probs || (shared_ && !v.shared_expert_gate))
    fail("analysis: a mixture-of-experts layer showed no router (the pass ran without hooks)");
  for (int64_t r = 0; r < tokens; ++r) {
    const float* p = v.router_probs + r * experts_;
    double h = 0;
    for (int e = 0; e < experts_; ++e)
      if (p[e] > 0) h -= double(p[e]) * std::log(double(p[e]));
    entropy_ += h;
    top_k_experts(choice_.data(), p, experts_, k_);
    for (int32_t e : choice_) {
      ++chosen_[size_t(e)];
      selected_ += p[e];
    }
    if (!shared_) continue;
    const double g = v.shared_expert_gate[r];
    gate_ += g;
    below_ += g < 0.1;
    ++gate_bins_[size_t(std::clamp(int(g * kGateBins), 0, kGateBins - 1))];
  }
  tokens_ += tokens;
}

RouterLayerStats RouterSums::result() const {
  RouterLayerStats s;
  if (tokens_ == 0) return s;
  const double n = double(tokens_), choices = n * k_;
  s.mean_entropy = entropy_ / n;
  s.entropy_ratio = experts_ > 1 ? s.mean_entropy / std::log(double(experts_)) : 0;
  double sum_sq = 0;
  for (int e = 0; e < experts_; ++e) {
    const double load = double(chosen_[size_t(e)]) / choices;
    s.load.push_back(load);
    if (chosen_[size_t(e)] == 0) s.dead_experts.push_back(e);
    s.max_load_ratio = std::max(s.max_load_ratio, load * experts_);
    sum_sq += (load * experts_ - 1) * (load * experts_ - 1);
  }
  s.load_cv = std::sqrt(sum_sq / experts_);
  s.mean_selected_mass = selected_ / n;
  s.has_shared = shared_;
  if (shared_) {
    s.shared_gate_mean = gate_ / n;
    s.shared_gate_below_01 = below_ / n;
    for (int64_t b : gate_bins_) s.shared_gate_histogram.push_back(double(b) / n);
  }
  return s;
}

}  // namespace gattn
