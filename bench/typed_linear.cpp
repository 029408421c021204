// Prefill products of bf16-stored weights against the fp32 ones, at the 0.6B shape's matrices
// (a 256-token chunk): fp32 linear_forward (sgemm on the fp32 matrix), typed_linear_forward on
// the bf16 matrix with widened fp32 panels of several sizes, and on the CPU's bf16 GEMM where it
// has one. Each variant timed in alternated rounds; medians, and the ratio to fp32.
//   gattn_bench_typed_linear [ROWS=256] [ROUNDS=15] [PANEL_KIB,...=1024,2048,4096,8192]
#include "ops/typed_linear.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ops/bf16_gemm.h"
#include "ops/matmul.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/threads.h"

namespace {
using Clock = std::chrono::steady_clock;

struct Variant {
  std::string name;
  std::function<void()> run;
  std::vector<double> ms = {};
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) try {
  gattn::select_isa(gattn::isa_choice_from_environment());
  const int rows = argc > 1 ? std::atoi(argv[1]) : 256;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  std::vector<int64_t> panels_kib = {1024, 2048, 4096, 8192};
  if (argc > 3) {
    panels_kib.clear();
    std::stringstream list(argv[3]);
    for (std::string item; std::getline(list, item, ',');) panels_kib.push_back(std::stoll(item));
  }
  struct Matrix {
    const char* name;
    int out, in;
  };
  const Matrix matrices[] = {
      {"q|k|v", 4096, 1024}, {"o_proj", 1024, 2048}, {"gate|up", 6144, 1024}, {"down", 1024, 3072}};
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0, 1);
  std::printf("ISA %s, %d threads, %d rows, %d rounds\n", gattn::isa_description().c_str(),
              gattn::num_threads(), rows, rounds);
  double total_f32 = 0;
  std::vector<double> total(panels_kib.size() + 2, 0.0);
  for (const Matrix& m : matrices) {
    std::vector<float> w(size_t(m.out) * m.in), in(size_t(rows) * m.in), out(size_t(rows) * m.out);
    for (float& x : w) x = gattn::round_to_bf16(normal(rng));
    for (float& x : in) x = normal(rng);
    std::vector<uint16_t> w16(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, &w[i], 4);
      w16[i] = uint16_t(bits >> 16);
    }
    const gattn::WeightView view{
        .dtype = gattn::WeightDtype::bf16, .data = w16.data(), .rows = m.out, .cols = m.in};
    const gattn::ExecContext fp32;
    std::vector<Variant> variants;
    variants.push_back(
        {"f32 sgemm",
         [&] { gattn::linear_forward(fp32, out.data(), in.data(), w.data(), rows, m.in, m.out); }});
    for (int64_t kib : panels_kib)
      variants.push_back({"bf16 panels " + std::to_string(kib) + " KiB", [&, kib] {
                            gattn::typed_linear_forward(fp32, out.data(), in.data(), view, rows, 0,
                                                        kib * 1024);
                          }});
    const bool native = gattn::native_bf16_gemm_available();
    const gattn::ExecContext bf16{.precision = gattn::GemmPrecision::bf16};
    std::vector<uint16_t> in16(in.size());
    if (native) {
      variants.push_back({"bf16 GEMM", [&] {
                            gattn::typed_linear_forward(bf16, out.data(), in.data(), view, rows);
                          }});
      // oneDNN's matmul alone (typed_linear_forward runs gattn's row kernel up to
      // kBf16RowsKernelRows rows)
      variants.push_back({"bf16 oneDNN matmul", [&] {
                            gattn::to_bf16(in.data(), rows, m.in, m.in, in16.data());
                            gattn::bf16_gemm_rounded(out.data(), in16.data(), w16.data(), rows,
                                                     m.out, m.in, false, true, 1, 0, m.out);
                          }});
    }
    for (Variant& v : variants) v.run();  // warm
    for (int r = 0; r < rounds; ++r)
      for (size_t i = 0; i < variants.size(); ++i) {
        Variant& v = variants[r % 2 ? variants.size() - 1 - i : i];
        const auto t0 = Clock::now();
        v.run();
        v.ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      }
    const double f32 = median(variants[0].ms);
    total_f32 += f32;
    const double flops = 2.0 * rows * m.out * m.in;
    for (size_t i = 0; i < variants.size(); ++i) {
      const double t = median(variants[i].ms);
      if (i > 0) total[i - 1] += t;
      std::printf("  %-8s %5d x %5d  %-22s %8.3f ms  %6.1f GFLOP/s  rate vs f32 %.3f\n", m.name,
                  m.out, m.in, variants[i].name.c_str(), t, flops / t * 1e-6, f32 / t);
    }
  }
  std::printf("one layer's matrices: f32 %.3f ms\n", total_f32);
  for (size_t i = 0; i < panels_kib.size(); ++i)
    std::printf("  bf16 panels %lld KiB: %.3f ms, rate vs f32 %.3f\n", (long long)panels_kib[i],
                total[i], total_f32 / total[i]);
  if (gattn::native_bf16_gemm_available()) {
    std::printf("  bf16 GEMM: %.3f ms, rate vs f32 %.3f\n", total[panels_kib.size()],
                total_f32 / total[panels_kib.size()]);
    std::printf("  bf16 oneDNN matmul: %.3f ms, rate vs f32 %.3f\n", total[panels_kib.size() + 1],
                total_f32 / total[panels_kib.size() + 1]);
  }
  return 0;
} catch (const gattn::Error& e) {
  std::fprintf(stderr, "gattn_bench_typed_linear: error: %s\n", e.what());
  return 1;
}
