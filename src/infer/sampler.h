// Picking the next token from logits: repetition penalty, temperature, top-k, top-p (nucleus) and
// min-p filtering, then a draw from the softmax with a seeded generator; temperature 0 is greedy.
// The order is Hugging Face's LogitsProcessor order (penalty, temperature, top-k, top-p, min-p).
#pragma once
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace gattn {

struct SamplingOptions {
  double temperature = 1.0;     // 0: greedy (argmax)
  int top_k = 0;                // 0: off
  double top_p = 1.0;           // 1: off
  double min_p = 0.0;           // 0: off; keep tokens with p >= min_p * max p
  double repeat_penalty = 1.0;  // 1: off; CTRL's penalty on every token already in the history
  uint64_t seed = 0;
};

// Validates the options (an Error names the field).
void check_sampling_options(const SamplingOptions& o);

// In place on logits: the penalty (a seen token's logit divided by it when positive, multiplied
// when negative, each token once) ...
void apply_repeat_penalty(std::span<float> logits, std::span<const uint32_t> history,
                          double penalty);
// ... and the filters on probabilities: a removed token gets probability 0. `probs` sums to 1 on
// entry and on exit (renormalised); each keeps at least the most likely token.
void keep_top_k(std::span<double> probs, int k);
void keep_top_p(std::span<double> probs, double p);
void keep_min_p(std::span<double> probs, double min_p);
// Non-finite logits come from weights or activations that overflowed; any use of them is silently
// wrong (greedy picks whatever compares largest, a draw from NaN probabilities the last id). An
// Error naming the position (the tokens before it) and the first NaN or infinite logit.
void check_finite_logits(std::span<const float> logits, size_t position);
// softmax(logits / temperature), in double.
std::vector<double> softmax(std::span<const float> logits, double temperature);

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& options);
  // The next token given the logits of the last position (modified in place by the penalty) and
  // the tokens so far (prompt and generated). A NaN or infinite logit is an Error naming the
  // position and the token id (never a token drawn from them).
  uint32_t next(std::span<float> logits, std::span<const uint32_t> history);

 private:
  SamplingOptions o_;
  std::mt19937_64 rng_;
};

}  // namespace gattn
