// GEMM rates at the training shapes of S and M (BENCHMARKS.md), each shape timed alone, median of
// 5 calls after one untimed: OpenBLAS sgemm (fp32 training), oneDNN's sgemm (the alternative
// fp32 library), and gattn's bf16_gemm as training calls it (both inputs rounded to bf16, then
// oneDNN's bf16 matmul); then one 64 x 64 x 64 attention tile on one thread, fp32 (sgemm) against
// the bf16 tile kernel, for each transpose the attention passes use.
//   gattn_bench_gemm [THREADS=0: all]
#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/bf16_tile.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/threads.h"

namespace {
using Clock = std::chrono::steady_clock;

template <typename Work>
double median_ms(int repeats, Work work) {
  std::vector<double> ms;
  work();
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = Clock::now();
    work();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

struct Shape {
  int m, n, k;
  bool trans_a, trans_b;
  const char* what;
};
}  // namespace

int main(int argc, char** argv) {
  try {
    gattn::select_isa(gattn::isa_choice_from_environment());  // before oneDNN's first use
  } catch (const gattn::Error& e) {
    std::fprintf(stderr, "gattn_bench_gemm: error: %s\n", e.what());
    return 1;
  }
  if (argc > 1) gattn::set_num_threads(std::atoi(argv[1]));
  const Shape shapes[] = {{8192, 1024, 512, false, true, "M q/k/v forward"},
                          {8192, 3072, 512, false, true, "M gate/up forward"},
                          {8192, 512, 1536, false, true, "M down forward"},
                          {8192, 8192, 512, false, true, "M LM head forward"},
                          {1024, 512, 8192, true, false, "M q/k/v weight grad"},
                          {8192, 512, 3072, false, false, "M gate/up input grad"},
                          {4096, 1216, 192, false, true, "S q/k/v/gate forward"},
                          {4096, 1024, 192, false, true, "S gate/up forward"},
                          {1024, 4096, 192, false, true, "S LM head chunk forward"},
                          {1024, 192, 4096, false, false, "S LM head chunk input grad"},
                          {2048, 2048, 2048, false, false, "square 2048"}};
  std::printf("threads %d, ISA %s, oneDNN %s; GFLOP/s (ms)\n%-28s %18s %18s %18s\n",
              gattn::num_threads(), gattn::isa_description().c_str(),
              gattn::onednn_isa_name().c_str(), "shape", "OpenBLAS sgemm", "oneDNN sgemm",
              "gattn bf16_gemm");
  for (const Shape& s : shapes) {
    const int lda = s.trans_a ? s.m : s.k, ldb = s.trans_b ? s.k : s.n;
    std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n), c(size_t(s.m) * s.n);
    for (size_t i = 0; i < a.size(); ++i) a[i] = float(i % 17) * 0.01f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = float(i % 13) * 0.01f;
    const auto ta = s.trans_a ? CblasTrans : CblasNoTrans,
               tb = s.trans_b ? CblasTrans : CblasNoTrans;
    const double openblas = median_ms(5, [&] {
      cblas_sgemm(CblasRowMajor, ta, tb, s.m, s.n, s.k, 1, a.data(), lda, b.data(), ldb, 0,
                  c.data(), s.n);
    });
    const double onednn = median_ms(5, [&] {
      dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, 1, a.data(), lda,
                 b.data(), ldb, 0, c.data(), s.n);
    });
    const double bf16 = median_ms(5, [&] {
      gattn::bf16_gemm(c.data(), a.data(), b.data(), s.m, s.n, s.k, s.trans_a, s.trans_b, 1, 0, lda,
                       ldb, s.n);
    });
    const double gflop = 2.0 * s.m * s.n * s.k / 1e6;
    std::printf("%-28s %8.0f (%7.2f) %8.0f (%7.2f) %8.0f (%7.2f)\n", s.what, gflop / openblas,
                openblas, gflop / onednn, onednn, gflop / bf16, bf16);
  }
  if (!gattn::bf16_tiles_available()) return 0;
  const int t = 64, calls = 20000;
  std::vector<float> a(t * t, 0.1f), b(t * t, 0.2f), c(t * t);
  std::printf("one 64 x 64 x 64 tile, one thread: GFLOP/s\n%-8s %10s %16s\n", "op", "sgemm",
              "bf16 tile kernel");
  openblas_set_num_threads(1);
  for (const auto& [trans_a, trans_b, name] :
       {std::tuple{false, true, "NT"}, std::tuple{false, false, "NN"},
        std::tuple{true, false, "TN"}}) {
    const bool ta = trans_a, tb = trans_b;  // copies: lambdas below capture them
    auto per_call_us = [&](auto work) {
      return median_ms(3,
                       [&] {
                         for (int i = 0; i < calls; ++i) work();
                       }) *
             1e3 / calls;
    };
    const double f32 = per_call_us([&] {
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, t,
                  t, t, 1, a.data(), t, b.data(), t, 1, c.data(), t);
    });
    const double bf16 = per_call_us([&] {
      gattn::bf16_tile_gemm(c.data(), a.data(), b.data(), t, t, t, ta, tb, 1, 1, t, t, t);
    });
    const double gflop = 2e-3 * t * t * t;  // per microsecond
    std::printf("%-8s %10.0f %16.0f\n", name, gflop / f32, gflop / bf16);
  }
}
