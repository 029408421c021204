// What the benchmark programs share: a clock, and the greedy choice of the next token.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

inline int32_t argmax(const float* logits, int n) {
  return int32_t(std::max_element(logits, logits + n) - logits);
}
inline int32_t argmax(const std::vector<float>& logits) {
  return argmax(logits.data(), int(logits.size()));
}

}  // namespace bench
