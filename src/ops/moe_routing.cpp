#include "ops/moe_routing.h"

#include <algorithm>
#include <cmath>

namespace gattn {

void top_k_experts(int32_t* c, const float* p, int experts, int k) {
  // By insertion (k is small: 8-10 of 64-512); a later expert displaces an earlier one only when
  // strictly more probable.
  int n = 0;
  for (int e = 0; e < experts; ++e) {
    if (n == k && p[e] <= p[c[k - 1]]) continue;
    int at = std::min(n, k - 1);
    while (at > 0 && p[c[at - 1]] < p[e]) {
      c[at] = c[at - 1];
      --at;
    }
    c[at] = e;
    n = std::min(n + 1, k);
  }
}

void moe_route_forward(float* probs, int32_t* choice, float* weight, const float* logits,
                       const RouteShape& s) {
  const int E = s.experts, k = s.k;
  for (int t = 0; t < s.rows; ++t) {
    const float* x = logits + int64_t(t) * E;
    float* p = probs + int64_t(t) * E;
    const float top = *std::max_element(x, x + E);
    float sum = 0;
    for (int e = 0; e < E; ++e) sum += p[e] = std::exp(x[e] - top);
    for (int e = 0; e < E; ++e) p[e] /= sum;
    const int32_t* c = choice + int64_t(t) * k;
    float* w = weight + int64_t(t) * k;
    top_k_experts(choice + int64_t(t) * k, p, E, k);
    float selected = 0;
    for (int j = 0; j < k; ++j) selected += w[j] = p[c[j]];
    if (s.norm_topk)
      for (int j = 0; j < k; ++j) w[j] /= selected;
  }
}

void moe_route_backward(float* d_logits, const float* d_weight, const float* probs,
                        const int32_t* choice, const float* weight, const RouteShape& s,
                        float* d_p) {
  const int E = s.experts, k = s.k;
  for (int t = 0; t < s.rows; ++t) {
    const float* p = probs + int64_t(t) * E;
    const int32_t* c = choice + int64_t(t) * k;
    const float* w = weight + int64_t(t) * k;
    const float* dw = d_weight + int64_t(t) * k;
    std::fill(d_p, d_p + E, 0.0f);
    if (s.norm_topk) {  // w_j = p_j / S: dp_j = (dw_j - sum_i dw_i w_i) / S
      float selected = 0, dot = 0;
      for (int j = 0; j < k; ++j) {
        selected += p[c[j]];
        dot += dw[j] * w[j];
      }
      for (int j = 0; j < k; ++j) d_p[c[j]] = (dw[j] - dot) / selected;
    } else {
      for (int j = 0; j < k; ++j) d_p[c[j]] = dw[j];
    }
    float dot = 0;  // softmax: d_logit_e = p_e (dp_e - sum_f dp_f p_f)
    for (int e = 0; e < E; ++e) dot += d_p[e] * p[e];
    float* dl = d_logits + int64_t(t) * E;
    for (int e = 0; e < E; ++e) dl[e] = p[e] * (d_p[e] - dot);
  }
}

void group_by_expert(ExpertGroups& g, const int32_t* choice, const RouteShape& s) {
  const int64_t pairs = int64_t(s.rows) * s.k;
  g.start.assign(size_t(s.experts) + 1, 0);
  for (int64_t i = 0; i < pairs; ++i) ++g.start[size_t(choice[i]) + 1];
  for (int e = 0; e < s.experts; ++e) g.start[e + 1] += g.start[e];
  g.token_of_row.resize(size_t(pairs));
  g.row_of_choice.resize(size_t(pairs));
  g.next.assign(g.start.begin(), g.start.end() - 1);
  for (int64_t i = 0; i < pairs; ++i) {  // tokens ascending: each group in token order
    const int32_t row = g.next[size_t(choice[i])]++;
    g.token_of_row[size_t(row)] = int32_t(i / s.k);
    g.row_of_choice[size_t(i)] = row;
  }
}

}  // namespace gattn
