#include "infer/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <unordered_set>

#include "util/error.h"

namespace gattn {

namespace {
void normalise(std::span<double> probs) {
  const double sum = std::accumulate(probs.begin(), probs.end(), 0.0);
  for (double& p : probs) p /= sum;
}

// Indices of probs, most likely first (ties by index, so the order is deterministic).
std::vector<uint32_t> by_probability(std::span<const double> probs) {
  std::vector<uint32_t> order(probs.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return probs[a] > probs[b]; });
  return order;
}

uint32_t argmax(std::span<const float> logits) {
  return uint32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
}
}  // namespace

void check_sampling_options(const SamplingOptions& o) {
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    fail("temperature must be a finite number >= 0, got ", o.temperature);
  if (o.top_k < 0) fail("top_k must be >= 0 (0: off), got ", o.top_k);
  if (!(o.top_p > 0 && o.top_p <= 1)) fail("top_p must be in (0, 1], got ", o.top_p);
  if (!(o.min_p >= 0 && o.min_p <= 1)) fail("min_p must be in [0, 1], got ", o.min_p);
  if (!(o.repeat_penalty > 0) || !std::isfinite(o.repeat_penalty))
    fail("repeat_penalty must be a finite number > 0, got ", o.repeat_penalty);
}

void check_finite_logits(std::span<const float> logits, size_t position) {
  const auto bad =
      std::find_if(logits.begin(), logits.end(), [](float x) { return !std::isfinite(x); });
  if (bad != logits.end())
    fail("the model's logits for the token at position ", position, " are not finite (", *bad,
         " for token id ", bad - logits.begin(), " of ", logits.size(),
         "): its weights or activations overflowed");
}

void apply_repeat_penalty(std::span<float> logits, std::span<const uint32_t> history,
                          double penalty) {
  if (penalty == 1.0) return;
  std::unordered_set<uint32_t> seen(history.begin(), history.end());
  for (uint32_t id : seen) {
    if (id >= logits.size()) continue;
    float& x = logits[id];
    x = x > 0 ? float(x / penalty) : float(x * penalty);
  }
}

std::vector<double> softmax(std::span<const float> logits, double temperature) {
  const float max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> probs(logits.size());
  for (size_t i = 0; i < logits.size(); ++i)
    probs[i] = std::exp((double(logits[i]) - max) / temperature);
  normalise(probs);
  return probs;
}

void keep_top_k(std::span<double> probs, int k) {
  if (k <= 0 || size_t(k) >= probs.size()) return;
  const std::vector<uint32_t> order = by_probability(probs);
  const double kth = probs[order[k - 1]];
  for (double& p : probs)
    if (p < kth) p = 0;  // ties with the k-th are kept, as HF's top-k does
  normalise(probs);
}

void keep_top_p(std::span<double> probs, double top_p) {
  if (top_p >= 1) return;
  const std::vector<uint32_t> order = by_probability(probs);
  double cumulative = 0;
  size_t keep = 0;
  while (keep < order.size() && cumulative < top_p) cumulative += probs[order[keep++]];
  for (size_t i = std::max<size_t>(keep, 1); i < order.size(); ++i) probs[order[i]] = 0;
  normalise(probs);
}

void keep_min_p(std::span<double> probs, double min_p) {
  if (min_p <= 0) return;
  const double threshold = min_p * *std::max_element(probs.begin(), probs.end());
  for (double& p : probs)
    if (p < threshold) p = 0;
  normalise(probs);
}

Sampler::Sampler(const SamplingOptions& options) : o_(options), rng_(options.seed) {
  check_sampling_options(options);
}

uint32_t Sampler::next(std::span<float> logits, std::span<const uint32_t> history) {
  apply_repeat_penalty(logits, history, o_.repeat_penalty);
  check_finite_logits(logits, history.size());
  if (o_.temperature == 0) return argmax(logits);
  std::vector<double> probs = softmax(logits, o_.temperature);
  keep_top_k(probs, o_.top_k);
  keep_top_p(probs, o_.top_p);
  keep_min_p(probs, o_.min_p);
  // A uniform draw in [0, 1) from 53 random bits (std::mt19937_64 is exactly specified; its
  // distributions are not), then the inverse of the cumulative distribution.
  const double u = double(rng_() >> 11) * 0x1.0p-53;
  double cumulative = 0;
  uint32_t last = 0;
  for (uint32_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0) continue;
    last = i;
    cumulative += probs[i];
    if (u < cumulative) return i;
  }
  return last;  // rounding left u at or above the total
}

}  // namespace gattn
