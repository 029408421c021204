#include "model/router_balance.h"

#include <algorithm>

#include "util/error.h"

namespace gattn {

RouterBalance::RouterBalance(int experts, double coef, double pass_weight)
    : experts_(experts),
      coef_(coef),
      pass_weight_(pass_weight),
      counts_(size_t(experts)),
      prob_sums_(size_t(experts)),
      d_prob_(size_t(experts)) {}

void RouterBalance::add_rows(const float* probs, const int32_t* choice, int rows, int k) {
  if (frozen_) return;
  for (int64_t t = 0; t < rows; ++t) {
    for (int e = 0; e < experts_; ++e) prob_sums_[size_t(e)] += probs[t * experts_ + e];
    for (int j = 0; j < k; ++j) counts_[size_t(choice[t * k + j])] += 1;
  }
  rows_ += rows;
}

void RouterBalance::forget_rows() {
  std::fill(counts_.begin(), counts_.end(), 0.0);
  std::fill(prob_sums_.begin(), prob_sums_.end(), 0.0);
  rows_ = 0;
}

void RouterBalance::settle(double weight) {
  std::fill(d_prob_.begin(), d_prob_.end(), 0.0f);
  if (rows_ == 0) return;
  const double M = double(rows_), scale = weight * coef_ * experts_;
  double sum = 0;
  for (int e = 0; e < experts_; ++e) {
    const double f = counts_[size_t(e)] / M;
    sum += f * prob_sums_[size_t(e)] / M;
    d_prob_[size_t(e)] = float(scale * f / M);
  }
  last_pass_loss_ = scale * sum;
  loss_ += last_pass_loss_;
}

void RouterBalance::end_forward() {
  if (frozen_) return;
  settle(pass_weight_);
  forget_rows();
}

std::vector<double> RouterBalance::take_statistics() {
  std::vector<double> statistics(counts_);
  statistics.insert(statistics.end(), prob_sums_.begin(), prob_sums_.end());
  statistics.push_back(double(rows_));
  forget_rows();
  return statistics;
}

void RouterBalance::add_statistics(const double* statistics) {
  for (int e = 0; e < experts_; ++e) {
    counts_[size_t(e)] += statistics[e];
    prob_sums_[size_t(e)] += statistics[experts_ + e];
  }
  rows_ += int64_t(statistics[2 * experts_]);
}

void RouterBalance::freeze() {
  GATTN_ASSERT(!frozen_, "the router balance is frozen once per step");
  settle(1.0);
  frozen_ = true;
}

void RouterBalance::add_gradient(float* d_logits, const float* probs, int rows) const {
  for (int64_t t = 0; t < rows; ++t) {  // softmax: d_logit_e = p_e (g_e - sum_f g_f p_f)
    const float* p = probs + t * experts_;
    float* d = d_logits + t * experts_;
    float dot = 0;
    for (int e = 0; e < experts_; ++e) dot += d_prob_[size_t(e)] * p[e];
    for (int e = 0; e < experts_; ++e) d[e] += p[e] * (d_prob_[size_t(e)] - dot);
  }
}

}  // namespace gattn
