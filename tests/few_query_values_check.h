// The setup and the row order shared by the vector kernels' values-pass tests (AVX2 and AVX-512,
// tests/test_attention_few_*.cpp): random cached values (fp32 or bf16 rows, padded), softmax
// weights and accumulators, and the expected sums built by visiting each vector's rows in the
// four-stream order (j, j + n/4, j + n/2, j + 3n/4; then the rows left over one at a time), the
// arithmetic of each visit given by the test, as each kernel promises its own.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ops/bf16_bits.h"
#include "ops/few_query_vectors.h"

namespace gattn {

inline float widen(float x) { return x; }
inline float widen(uint16_t x) { return bf16_to_float(x); }
template <typename KV>
KV cached(float x);
template <>
inline float cached<float>(float x) {
  return x;
}
template <>
inline uint16_t cached<uint16_t>(float x) {
  return bf16_instruction_bits(x);
}

template <typename KV>
struct ValuesCase {
  int n = 0, d = 0, group = 0, vectors = 0;  // rows, head size, vectors per kv head, vectors
  int64_t ld = 0;          // a cached row: every kv head's values, then 16 of padding
  std::vector<KV> v;       // n rows
  std::vector<float> p;    // [vectors, n] weights
  std::vector<float> acc;  // [vectors, d] the accumulators before the pass
  std::vector<int> kv_offset;
  FewQueryVectors vectors_view() const {  // no queries: the values pass reads none
    return {nullptr, kv_offset.data(), vectors, group, d};
  }
};

template <typename KV>
ValuesCase<KV> values_case(int kv_heads, int group, int d, int n, unsigned seed) {
  ValuesCase<KV> c;
  c.n = n, c.d = d, c.group = group, c.vectors = kv_heads * group, c.ld = kv_heads * d + 16;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  c.v.resize(size_t(n * c.ld));
  for (auto& x : c.v) x = cached<KV>(normal(rng));
  c.p.resize(size_t(c.vectors) * n), c.acc.resize(size_t(c.vectors) * d);
  for (auto& x : c.p) x = std::exp(normal(rng));
  for (auto& x : c.acc) x = normal(rng);
  c.kv_offset.resize(c.vectors);
  for (int u = 0; u < c.vectors; ++u) c.kv_offset[u] = u / group * d;
  return c;
}

// The accumulators after adding every vector's rows in the four-stream order:
// add(a, weight, value, count) adds a visit's rows (count 4: a quad; 1: a row left over) to the d
// accumulators a, weight(i) and value(i, c) giving the visit's row i's weight and value c.
template <typename KV, typename Add>
std::vector<float> values_in_four_streams(const ValuesCase<KV>& c, Add&& add) {
  std::vector<float> want = c.acc;
  const int part = c.n / 4;
  for (int u = 0; u < c.vectors; ++u) {
    const KV* vu = c.v.data() + c.kv_offset[u];
    const float* pu = &c.p[size_t(u) * c.n];
    float* a = &want[size_t(u) * c.d];
    auto visit = [&](const int js[4], int count) {
      auto weight = [&](int i) { return pu[js[i]]; };
      auto value = [&](int i, int col) { return widen(vu[js[i] * c.ld + col]); };
      add(a, weight, value, count);
    };
    for (int j = 0; j < part; ++j) {
      const int js[4] = {j, j + part, j + 2 * part, j + 3 * part};
      visit(js, 4);
    }
    for (int j = 4 * part; j < c.n; ++j) {
      const int js[4] = {j, j, j, j};
      visit(js, 1);
    }
  }
  return want;
}

}  // namespace gattn
