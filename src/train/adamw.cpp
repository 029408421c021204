#include "train/adamw.h"

#include <algorithm>
#include <cmath>

#include "train/communicator.h"
#include "util/error.h"

namespace gattn {

AdamW::AdamW(const ParamLayout& layout, const AdamWOptions& options,
             std::optional<ShardRange> shard)
    : layout_(layout),
      options_(options),
      shard_(shard.value_or(ShardRange{0, layout.total()})),
      m_(size_t(shard_.size()), 0.0f),
      v_(size_t(shard_.size()), 0.0f) {
  if (shard_.begin < 0 || shard_.begin > shard_.end || shard_.end > layout.total())
    fail("AdamW: shard [", shard_.begin, ", ", shard_.end, ") outside the ", layout.total(),
         " parameters");
}

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
    const int64_t begin = std::max(t.offset, shard_.begin);
    const int64_t end = std::min(t.offset + t.numel, shard_.end);
    if (begin >= end) continue;
    const float keep = decays(t) ? float(1 - lr * options_.weight_decay) : 1.0f;
    float* p = weights.data() + begin;
    const float* g = grads.data() + begin;
    float* m = m_.data() + (begin - shard_.begin);
    float* v = v_.data() + (begin - shard_.begin);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < end - begin; ++i) {
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

std::vector<double> chunk_square_sums(const float* values, int64_t count) {
  std::vector<double> sums((count + kNormChunk - 1) / kNormChunk);
  const int64_t chunks = int64_t(sums.size());
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double sum = 0;
    const int64_t end = std::min(count, (c + 1) * kNormChunk);
    for (int64_t i = c * kNormChunk; i < end; ++i) sum += double(values[i]) * values[i];
    sums[c] = sum;
  }
  return sums;
}

double norm_of_chunk_sums(const std::vector<double>& sums) {
  double sum = 0;
  for (double s : sums) sum += s;
  return std::sqrt(sum);
}

double global_norm(const Gradients& grads) {
  return norm_of_chunk_sums(chunk_square_sums(grads.data(), grads.size()));
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
