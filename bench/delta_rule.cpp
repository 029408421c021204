// The chunked gated delta rule alone (ops/delta_rule.h), forward (with output) and backward, at a
// training shape: the roof study of the hybrid step's largest op. Prints the median time of each
// pass over ROUNDS alternated rounds, and the time of the pass's 64 x 64 x 64 products run alone
// (the GEMM floor of its chunk algebra).
//   gattn_bench_delta_rule [SEQUENCES=16] [TOKENS=256] [KEY_HEADS=2] [VALUE_HEADS=4] [DIM=64]
//                          [ROUNDS=7] [G_LOW=-0.5: the log decays g uniform in (G_LOW, -0.001)]
#include "ops/delta_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <vector>

#include "bench_util.h"
#include "ops/matmul.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/threads.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<float> random_rows(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> rows(static_cast<size_t>(n));
  for (auto& value : rows) value = u(rng);
  return rows;
}

// Rows of `heads` vectors of `dim`, each of unit length times `scale`.
void normalise(std::vector<float>& rows, int dim, float scale) {
  for (size_t i = 0; i < rows.size(); i += size_t(dim)) {
    double norm = 0;
    for (int d = 0; d < dim; ++d) norm += double(rows[i + d]) * rows[i + d];
    const float f = scale / float(std::sqrt(norm) + 1e-6);
    for (int d = 0; d < dim; ++d) rows[i + d] *= f;
  }
}

}  // namespace

int main(int argc, char** argv) try {
  gattn::select_isa(gattn::isa_choice_from_environment());
  auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  gattn::DeltaRuleShape s;
  s.sequences = arg(1, 16);
  s.tokens = arg(2, 256);
  s.key_heads = arg(3, 2);
  s.value_heads = arg(4, 4);
  s.key_dim = s.value_dim = arg(5, 64);
  const int rounds = arg(6, 7);
  s.qk_stride = int64_t(s.key_heads) * s.key_dim;
  s.v_stride = s.out_stride = int64_t(s.value_heads) * s.value_dim;
  s.gate_stride = s.value_heads;
  gattn::check_delta_rule_shape(s);
  const int64_t rows = int64_t(s.sequences) * s.tokens;
  std::mt19937 rng(7);
  auto q = random_rows(rng, rows * s.qk_stride, -1, 1),
       k = random_rows(rng, rows * s.qk_stride, -1, 1);
  normalise(q, s.key_dim, 1.0f / std::sqrt(float(s.key_dim)));
  normalise(k, s.key_dim, 1.0f);
  auto v = random_rows(rng, rows * s.v_stride, -1, 1);
  const float g_low = argc > 7 ? float(std::atof(argv[7])) : -0.5f;
  auto g = random_rows(rng, rows * s.gate_stride, g_low, -0.001f);
  auto beta = random_rows(rng, rows * s.gate_stride, 0.05f, 0.95f);
  auto d_out = random_rows(rng, rows * s.out_stride, -1, 1);
  std::vector<float> out(size_t(rows * s.out_stride)), state(size_t(s.sequences * s.state_size()));
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()), dg(g.size()), dbeta(beta.size());
  const gattn::DeltaRuleInputs<float> in{q.data(), k.data(), v.data(), g.data(), beta.data()};
  const gattn::DeltaRuleGradients<float> grads{dq.data(), dk.data(),    dv.data(),
                                               dg.data(), dbeta.data(), nullptr};
  gattn::ExecContext x;
  auto forward = [&] {
    std::fill(state.begin(), state.end(), 0.0f);
    gattn::delta_rule_chunked<float>(x, s, in, state.data(), out.data(), nullptr);
  };
  auto backward = [&] {
    gattn::delta_rule_chunked_backward<float>(x, s, in, nullptr, d_out.data(), grads);
  };
  // The chunk algebra's products alone, as many as one forward (7 per chunk and value head) and
  // one backward (22: its forward sweep's 7 + its own 15) make, on operands kept in cache.
  const int64_t chunk_heads = int64_t(s.sequences) * s.chunks() * s.value_heads;
  const int c = gattn::kDeltaRuleChunk, dim = s.key_dim;
  auto a = random_rows(rng, int64_t(c) * dim, -1, 1), b = random_rows(rng, int64_t(c) * dim, -1, 1);
  std::vector<float> cc(size_t(c) * dim);
  auto products = [&](int per_chunk) {
    return [&, per_chunk] {
      for (int64_t i = 0; i < chunk_heads * per_chunk; ++i)
        gattn::tile_matmul<float>(x, cc.data(), a.data(), b.data(), c, dim, c, false, i & 1, 1.0f,
                                  0.0f, 0, 0, 0);
    };
  };
  struct Pass {
    const char* name;
    std::function<void()> run;
    std::vector<double> ms = {};
  };
  std::vector<Pass> passes = {{"forward", forward},
                              {"backward", backward},
                              {"forward's 64^3 products alone (7 per chunk)", products(7)},
                              {"backward's 64^3 products alone (22 per chunk)", products(22)}};
  for (auto& p : passes) p.run();  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (auto& p : passes) {
      const auto start = bench::Clock::now();
      p.run();
      p.ms.push_back(1e3 * bench::seconds_since(start));
    }
  std::printf(
      "ISA %s, %d threads; %d sequences x %d tokens, %d key / %d value heads of %d; "
      "%lld chunk-heads; median of %d rounds\n",
      gattn::isa_description().c_str(), gattn::num_threads(), s.sequences, s.tokens, s.key_heads,
      s.value_heads, dim, (long long)chunk_heads, rounds);
  for (auto& p : passes) std::printf("  %-48s %9.2f ms\n", p.name, median(p.ms));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gattn_bench_delta_rule: %s\n", e.what());
  return 1;
}
