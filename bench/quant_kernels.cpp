// The integer dot kernels' own rates (ops/quant_dot.h): quantized_linear of one block format at
// one or a few input rows, on a matrix resident in the L2 cache (the kernel's roof: nothing but
// its arithmetic) and on one far larger than the caches (what decode sees: memory-bound), next
// to the read bandwidth of a buffer of the same size. Weights are random blocks (finite scales).
//   gattn_bench_quant_kernels [ROWS=1] [THREADS=1] [REPEATS=5] [COLS=1024] [l2]
// l2: the L2-resident matrix and the process's kernels only (bench/decode_roof.py runs one copy
// per core at once: the cores' rates when all of them work, on this shared host).
// Prints per format: weights / s and bytes / s for each size, and the kernel (reference, avx2,
// avx512 where the CPU has VNNI).
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ops/quantized_linear.h"
#include "util/aligned.h"
#include "util/fp16.h"
#include "util/threads.h"

namespace {

using bench::Clock;
using bench::seconds_since;
using gattn::WeightDtype;

std::vector<uint8_t, gattn::AlignedAllocator<uint8_t>> random_blocks(WeightDtype dtype,
                                                                     int64_t rows, int64_t cols) {
  std::mt19937 rng(1);
  const int64_t bytes = gattn::weight_row_bytes(dtype, cols) * rows;
  std::vector<uint8_t, gattn::AlignedAllocator<uint8_t>> data(static_cast<size_t>(bytes));
  for (auto& b : data) b = uint8_t(rng());
  const int64_t block = gattn::weight_block_bytes(dtype);
  const std::vector<int> scales = dtype == WeightDtype::q4_k   ? std::vector<int>{0, 2}
                                  : dtype == WeightDtype::q6_k ? std::vector<int>{208}
                                                               : std::vector<int>{0};
  const uint16_t h = gattn::float_to_half(0.01f);
  for (int64_t at = 0; at < bytes; at += block)
    for (int off : scales) std::memcpy(&data[size_t(at + off)], &h, 2);
  return data;
}

// Median seconds of `repeats` products.
double time_product(const gattn::WeightView& w, int rows, int repeats, bool reference) {
  std::vector<float> in(size_t(rows * w.cols), 0.5f), out(size_t(rows * w.rows));
  std::vector<double> times;
  for (int i = 0; i < repeats + 1; ++i) {
    const auto start = Clock::now();
    gattn::quantized_linear(out.data(), in.data(), w, rows, 0, reference);
    if (i > 0) times.push_back(seconds_since(start));  // the first warms up
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double read_bandwidth(const uint8_t* data, size_t bytes, int repeats) {
  std::vector<double> times;
  for (int i = 0; i < repeats + 1; ++i) {
    const auto start = Clock::now();
    uint64_t sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (size_t j = 0; j < bytes / 8; ++j) {
      uint64_t v;
      std::memcpy(&v, data + 8 * j, 8);
      sum += v;
    }
    if (sum == 42) std::printf(" ");
    if (i > 0) times.push_back(seconds_since(start));
  }
  std::sort(times.begin(), times.end());
  return double(bytes) / times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int rows = argc > 1 ? std::atoi(argv[1]) : 1;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 5;
  const int64_t cols = argc > 4 ? std::atoll(argv[4]) : 1024;
  const bool l2_only = argc > 5 && std::string(argv[5]) == "l2";
  if (rows < 1 || threads < 1 || repeats < 1 || cols < 256 || cols % 256 ||
      (argc > 5 && !l2_only)) {
    std::fprintf(stderr,
                 "usage: gattn_bench_quant_kernels [ROWS=1] [THREADS=1] [REPEATS=5] "
                 "[COLS=1024, a multiple of 256] [l2]\n");
    return 2;
  }
  gattn::set_num_threads(threads);
  std::printf("quantized_linear, %d input row(s), %d thread(s), median of %d\n", rows, threads,
              repeats);
  std::printf(
      "| format | matrix | bytes | kernel | Gweights/s | GB/s of weights "
      "|\n|---|---|---|---|---|---|\n");
  for (WeightDtype dtype :
       {WeightDtype::q8_0, WeightDtype::q4_0, WeightDtype::q4_k, WeightDtype::q6_k}) {
    // 256 KiB-ish (L2-resident) and ~600 MB (memory)
    for (int64_t out_dim : {int64_t(192), int64_t(3072) * 150}) {
      if (l2_only && out_dim > 10000) continue;
      const auto data = random_blocks(dtype, out_dim, cols);
      const gattn::WeightView w{.dtype = dtype, .data = data.data(), .rows = out_dim, .cols = cols};
      const double bytes = double(data.size());
      const int reps = out_dim > 10000 ? repeats : repeats * 200;
      for (bool reference : {false, true}) {
        if (reference && (out_dim > 10000 || l2_only)) continue;
        const double s = time_product(w, rows, reps, reference);
        std::printf("| %s | %lld x %lld | %.1f MB | %s | %.2f | %.2f |\n",
                    gattn::weight_dtype_name(dtype), static_cast<long long>(out_dim),
                    static_cast<long long>(cols), bytes * 1e-6,
                    reference ? "reference" : "process's", double(out_dim) * cols / s * 1e-9,
                    bytes / s * 1e-9);
      }
      if (out_dim > 10000)
        std::printf("| (read) | | %.1f MB | plain read | | %.2f |\n", bytes * 1e-6,
                    read_bandwidth(data.data(), data.size(), repeats) * 1e-9);
    }
  }
}
