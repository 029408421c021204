#include "ops/gemm_floor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "ops/matmul.h"
#include "util/threads.h"

namespace gattn {

namespace {
using Clock = std::chrono::steady_clock;

// The buffers of one shape: a, b and c as large as their leading dimensions make them.
struct GemmBuffers {
  GemmBuffers(const ExecContext& context, const GemmShape& s)
      : x(context),
        a(size_t(s.trans_a ? s.k : s.m) * s.lda, 0.01f),
        b(size_t(s.trans_b ? s.n : s.k) * s.ldb, 0.01f),
        c(size_t(s.m) * s.ldc, 0.0f) {}
  void run(const GemmShape& s) {  // the step's in-parallel GEMMs are attention's tiles
    const float beta = s.accumulate ? 1.0f : 0.0f;
    if (s.rounded_inputs) {  // rounded once, outside the timing, as the step did
      if (!a_shared.values()) {
        a_shared.prepare(x, a.data(), s.trans_a ? s.k : s.m, s.lda);
        b_shared.prepare(x, b.data(), s.trans_b ? s.n : s.k, s.ldb);
      }
      return matmul<float>(x, c.data(), a_shared, b_shared, s.m, s.n, s.k, s.trans_a, s.trans_b,
                           1.0f, beta);
    }
    using Gemm = void (*)(const ExecContext&, float*, const float*, const float*, int, int, int,
                          bool, bool, float, float, int, int, int);
    const Gemm gemm = s.in_parallel ? Gemm(&tile_matmul<float>) : Gemm(&matmul<float>);
    gemm(x, c.data(), a.data(), b.data(), s.m, s.n, s.k, s.trans_a, s.trans_b, 1.0f, beta, s.lda,
         s.ldb, s.ldc);
  }
  const ExecContext& x;
  std::vector<float> a, b, c;
  SharedOperand<float> a_shared, b_shared;
};

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Wall seconds per call of one shape: the best of three runs of `reps` calls after one untimed
// call. In-parallel shapes run on every thread at once, each on its own buffers; a call then
// costs 1 / threads of the wall time.
double seconds_per_call(const ExecContext& x, const GemmShape& s) {
  const double flop = 2.0 * s.m * s.n * s.k;
  const int reps = int(std::clamp(2e-3 * 3e10 / std::max(flop, 1.0), 1.0, 10000.0));
  double best = 1e30;
  if (!s.in_parallel) {
    GemmBuffers buffers(x, s);
    buffers.run(s);
    for (int round = 0; round < 3; ++round) {
      const auto start = Clock::now();
      for (int i = 0; i < reps; ++i) buffers.run(s);
      best = std::min(best, seconds_since(start) / reps);
    }
    return best;
  }
  const int threads = num_threads();
  Clock::time_point start;  // shared
#pragma omp parallel num_threads(threads)
  {
    GemmBuffers buffers(x, s);
    buffers.run(s);
    for (int round = 0; round < 3; ++round) {
#pragma omp barrier
#pragma omp single
      start = Clock::now();  // the single's implied barrier starts every thread together
      for (int i = 0; i < reps; ++i) buffers.run(s);
#pragma omp barrier
#pragma omp single
      best = std::min(best, seconds_since(start) / (double(reps) * threads));
    }
  }
  return best;
}
}  // namespace

GemmFloor measure_gemm_floor(const ExecContext& step, const std::map<GemmShape, int64_t>& calls) {
  ExecContext x = step;
  x.gemm_log = nullptr;  // the timing runs are not part of the step
  GemmFloor floor;
  for (const auto& [shape, count] : calls) {
    const double ms = 1e3 * seconds_per_call(x, shape) * double(count);
    floor.ms += ms;
    (shape.in_parallel ? floor.tile_ms : floor.weight_ms) += ms;
    floor.gflop += 2e-9 * shape.m * shape.n * double(shape.k) * double(count);
    floor.per_shape.push_back({.shape = shape, .calls = count, .ms = ms});
  }
  std::sort(floor.per_shape.begin(), floor.per_shape.end(),
            [](const GemmShapeTime& a, const GemmShapeTime& b) { return a.ms > b.ms; });
  return floor;
}

}  // namespace gattn
