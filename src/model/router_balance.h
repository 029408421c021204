// The load-balancing loss of mixture-of-experts training (Switch Transformer's, eqs. 4-6), in the
// form of transformers' load_balancing_loss_func (v5: one softmax of the router's logits; before
// v5 Qwen3-Next's router returned probabilities that the loss softmaxed a second time, which
// gattn does not reproduce). The router rows of every MoE layer of the pass are pooled: over
// their M = tokens x MoE layers rows, f_e = (rows whose top-k includes expert e) / M and
// P_e = (sum of the rows' probabilities p_e) / M, and
//   loss = coef * E * sum_e f_e P_e.
// f carries no gradient, so each row's dloss/dp_e = coef * E * f_e / M: the backward pass adds
// that through the softmax to the router's logits.
//
// Scopes: micro_batch, f and P of each micro-batch's pass (transformers with gradient
// accumulation: each pass's loss weighs 1 / micro-batches); global, f from a forward-only pre-pass
// over every micro-batch of the step (Qwen's global-batch balancing), so the step's gradient is
// exactly that of the loss over the whole batch, at the price of one more forward pass.
#pragma once
#include <cstdint>
#include <vector>

namespace gattn {

enum class RouterLossScope { micro_batch, global };

struct RouterLoss {
  double coef = 0;  // 0: none
  RouterLossScope scope = RouterLossScope::micro_batch;
};

class RouterBalance {
 public:
  // experts: every MoE layer's (one count); pass_weight: each pass's share of the step's loss.
  RouterBalance(int experts, double coef, double pass_weight);

  // A MoE block's forward: its rows' probabilities [rows, experts] and choices [rows, k]. Nothing
  // once frozen.
  void add_rows(const float* probs, const int32_t* choice, int rows, int k);
  // After a pass's forward (unless frozen): f and P of its rows, its loss (added to loss()) and
  // the gradient its backward adds; the rows are then forgotten.
  void end_forward();
  // The rows added so far (a pre-pass over the step) fix f, P, the loss and the gradient of the
  // passes that follow, whose forwards then add nothing.
  void freeze();
  bool frozen() const { return frozen_; }
  // The rows added since the last call as [counts, probability sums, rows] (statistics_size()
  // values), then forgotten: a pre-pass's statistics per micro-batch, which add_statistics adds
  // back in micro-batch order (data-parallel ranks each hold a block of the micro-batches).
  std::vector<double> take_statistics();
  void add_statistics(const double* statistics);
  int64_t statistics_size() const { return 2 * int64_t(experts_) + 1; }
  // The last pass's loss (end_forward), times its pass_weight; 0 before any.
  double last_pass_loss() const { return last_pass_loss_; }
  // d_logits [rows, experts] += the loss's gradient through each row's softmax.
  void add_gradient(float* d_logits, const float* probs, int rows) const;
  double loss() const { return loss_; }  // the passes' losses, each times its pass_weight

 private:
  void settle(double weight);
  void forget_rows();

  int experts_;
  double coef_, pass_weight_;
  std::vector<double> counts_, prob_sums_;
  int64_t rows_ = 0;
  std::vector<float> d_prob_;  // dloss/dp_e of every row
  double loss_ = 0;
  double last_pass_loss_ = 0;
  bool frozen_ = false;
};

}  // namespace gattn
