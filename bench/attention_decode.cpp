// The decode attention alone (ops/attention_decode through attention_forward): one query row of
// one sequence over an fp32 or bf16 KV cache, at a model's head shape; the calls go round LAYERS
// caches, as a token's layers do (ref-dense's 8 at 560 positions: 9 MB, L3-sized). Prints the
// median microseconds of a call (and GFLOP/s: 4 x heads x head size x positions).
//   gattn_bench_attention_decode [Q_HEADS=8] [KV_HEADS=4] [HEAD_DIM=64] [POSITIONS=560]
//                                [THREADS=1] [REPEATS=2000] [LAYERS=8] [CACHE=f32|bf16]
// (ref-dense: 8 4 64; the 0.6B shape: 16 8 128.) Alternate builds in rounds to compare them.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ops/attention.h"
#include "ops/bf16_bits.h"
#include "ops/exec_context.h"
#include "util/threads.h"

int main(int argc, char** argv) {
  auto arg = [&](int i, int fallback) { return argc > i ? std::atoi(argv[i]) : fallback; };
  const int q_heads = arg(1, 8), kv_heads = arg(2, 4), d = arg(3, 64), positions = arg(4, 560);
  const int threads = arg(5, 1), repeats = arg(6, 2000), layers = arg(7, 8);
  const bool bf16 = argc > 8 && std::string(argv[8]) == "bf16";
  gattn::ThreadScope scope(threads);
  gattn::AttentionShape s{};
  s.batch = 1, s.q_len = 1, s.kv_len = positions, s.q_offset = positions - 1;
  s.kv_stride = positions, s.q_heads = q_heads, s.kv_heads = kv_heads, s.head_dim = d;
  s.ld_q = s.ld_out = q_heads * d, s.ld_k = s.ld_v = kv_heads * d;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.f, 0.3f);
  const size_t cache = size_t(positions) * s.ld_k;
  std::vector<float> q(size_t(s.ld_q)), k(cache * layers), v(k.size());
  for (auto* x : {&q, &k, &v})
    for (float& y : *x) y = normal(rng);
  std::vector<uint16_t> k16(k.size()), v16(v.size());  // the cache as bf16 (rounded to nearest)
  for (size_t i = 0; i < k.size(); ++i)
    k16[i] = gattn::bf16_instruction_bits(k[i]), v16[i] = gattn::bf16_instruction_bits(v[i]);
  std::vector<float> out(size_t(s.ld_out)), lse(static_cast<size_t>(q_heads));
  std::vector<double> times;
  for (int i = 0; i < repeats + 10; ++i) {
    const auto start = bench::Clock::now();
    const size_t layer = size_t(i % layers) * cache;
    if (bf16)
      gattn::attention_forward(gattn::ExecContext{}, out.data(), lse.data(), q.data(),
                               k16.data() + layer, v16.data() + layer, s);
    else
      gattn::attention_forward(gattn::ExecContext{}, out.data(), lse.data(), q.data(),
                               k.data() + layer, v.data() + layer, s);
    if (i >= 10) times.push_back(bench::seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf(
      "heads %d/%d, head size %d, %d positions, %s cache, %d threads: %.2f us a call, %.1f "
      "GFLOP/s\n",
      q_heads, kv_heads, d, positions, bf16 ? "bf16" : "f32", threads, 1e6 * median,
      4.0 * q_heads * d * positions / median / 1e9);
}
