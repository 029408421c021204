#include "train/adamw.h"

#include <algorithm>
#include <cmath>

namespace gattn {

AdamW::AdamW(const ParamLayout& layout, const AdamWOptions& options)
    : layout_(layout), options_(options), m_(layout.total(), 0.0f), v_(layout.total(), 0.0f) {}

bool AdamW::decays(const TensorSpec& t) const {
  for (const std::string& pattern : options_.no_decay)
    if (t.name.find(pattern) != std::string::npos) return false;
  return true;
}

void AdamW::step(Weights& weights, const Gradients& grads, double lr) {
  ++steps_;
  const double bias1 = 1 - std::pow(options_.beta1, double(steps_));
  const double bias2_sqrt = std::sqrt(1 - std::pow(options_.beta2, double(steps_)));
  const float step_size = float(lr / bias1), bias2_sqrt_f = float(bias2_sqrt);
  const float b1_weight = float(1 - options_.beta1), beta2 = float(options_.beta2);
  const float b2_weight = float(1 - options_.beta2), eps = float(options_.eps);
  for (const TensorSpec& t : layout_.tensors()) {
    if (t.frozen) continue;
    const float keep = decays(t) ? float(1 - lr * options_.weight_decay) : 1.0f;
    float* p = weights.data() + t.offset;
    const float* g = grads.data() + t.offset;
    float* m = m_.data() + t.offset;
    float* v = v_.data() + t.offset;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < t.numel; ++i) {
      p[i] *= keep;
      m[i] += b1_weight * (g[i] - m[i]);  // torch: exp_avg.lerp_(grad, 1 - beta1)
      v[i] = v[i] * beta2 + b2_weight * g[i] * g[i];
      p[i] -= step_size * m[i] / (std::sqrt(v[i]) / bias2_sqrt_f + eps);
    }
  }
}

void zero_frozen_gradients(const ParamLayout& layout, Gradients& grads) {
  for (const TensorSpec& t : layout.tensors())
    if (t.frozen) std::fill_n(grads.data() + t.offset, t.numel, 0.0f);
}

double global_norm(const Gradients& grads) {
  double sum = 0;
  for (float g : grads.values()) sum += double(g) * g;
  return std::sqrt(sum);
}

double clip_gradients(Gradients& grads, double norm, double max_norm) {
  const double coefficient = std::min(1.0, max_norm / (norm + 1e-6));
  if (coefficient < 1.0) {
    const float c = float(coefficient);
    float* g = grads.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < grads.size(); ++i) g[i] *= c;
  }
  return coefficient;
}

}  // namespace gattn
