// The quantized dot products (ops/quant_dot.h, ops/quantized_linear.h): the vector kernels against
// the scalar reference (the oracle), the reference against dequantize-then-fp32, the activation
// quantizers' arithmetic, and float_to_half against the CPU's own conversion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "model_test_data.h"
#include "ops/avx512_kernels.h"
#include "ops/ggml_blocks.h"
#include "ops/quant_dot.h"
#include "ops/quant_dot_kernels.h"
#include "ops/quant_tile.h"
#include "ops/quantized_linear.h"
#include "ops/typed_linear.h"
#include "util/cpu_features.h"
#include "util/cpu_isa.h"
#include "util/fp16.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace gattn {
namespace {

constexpr WeightDtype kBlockFormats[] = {WeightDtype::q8_0, WeightDtype::q4_0, WeightDtype::q4_k,
                                         WeightDtype::q6_k};

// Byte offsets of a block's fp16 scales.
std::vector<int> scale_offsets(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::q4_k:
      return {0, 2};
    case WeightDtype::q6_k:
      return {208};
    default:
      return {0};
  }
}

// rows x cols weights of random blocks whose fp16 scales are finite, in [2^-10, 2^-4).
std::vector<uint8_t> random_blocks(WeightDtype dtype, int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t bytes = weight_row_bytes(dtype, cols) * rows;
  std::vector<uint8_t> data(static_cast<size_t>(bytes));
  for (uint8_t& b : data) b = uint8_t(rng());
  std::uniform_real_distribution<float> scale(1.0f / 1024, 1.0f / 16);
  const int64_t block = weight_block_bytes(dtype);
  for (int64_t at = 0; at < bytes; at += block)
    for (int off : scale_offsets(dtype)) {
      const uint16_t h = float_to_half(scale(rng));
      std::memcpy(&data[size_t(at + off)], &h, 2);
    }
  return data;
}

std::vector<float> gaussian(int64_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  return x;
}

double relative_l2(const std::vector<float>& got, const std::vector<float>& want) {
  return gattn::relative_l2(got.data(), want.data(), int64_t(want.size()));
}

#if defined(__F16C__)
TEST(Fp16, FloatToHalfRoundsAsF16cDoes) {
  std::mt19937 rng(3);
  std::vector<uint32_t> bits = {0u,          0x80000000u, 0x7f800000u, 0x477ff000u,
                                0x477fefffu, 0x33000000u, 0x33000001u, 0x38800000u,
                                0x387fffffu, 0x3f801000u, 0x3f803000u, 0x7fc00001u};
  for (int i = 0; i < 2000000; ++i) bits.push_back(rng());
  for (uint32_t b : bits) {
    float f;
    std::memcpy(&f, &b, 4);
    const uint16_t want = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
    const uint16_t got = float_to_half(f);
    if (std::isnan(f))
      ASSERT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff)) << std::hex << b;
    else
      ASSERT_EQ(got, want) << std::hex << b;
  }
}
#endif

TEST(Q4KScales, AllAtOnceEqualOneByOne) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 1000; ++trial) {
    uint8_t packed[12];
    for (uint8_t& b : packed) b = uint8_t(rng());
    uint8_t scales[8], mins[8];
    ggml::q4_k_scales_mins(packed, scales, mins);
    for (int j = 0; j < 8; ++j) {
      uint8_t scale, min;
      ggml::q4_k_scale_min(j, packed, &scale, &min);
      ASSERT_EQ(scales[j], scale) << trial << " " << j;
      ASSERT_EQ(mins[j], min) << trial << " " << j;
    }
  }
}

TEST(QuantizeActivations, Q8_0ScalesByTheLargestMagnitudeAndRoundsToEven) {
  std::vector<float> x(32, 0.0f);
  x[0] = -2.54f;  // the largest magnitude: q = -127
  x[1] = 0.01f;   // 0.01 * 127 / 2.54 = 0.5 -> 0 (even), not 1
  x[2] = 0.03f;   // 1.5 -> 2
  x[3] = 1.27f;   // 63.5 -> 64
  std::vector<uint8_t> out(size_t(activation_row_bytes(WeightDtype::q8_0, 32)));
  quantize_activation_row(WeightDtype::q8_0, x.data(), 32, out.data());
  const ActivationRow b = activation_row(WeightDtype::q8_0, out.data(), 32);
  EXPECT_EQ(b.d[0], half_to_float(float_to_half(2.54f / 127.0f)));  // the scale as a half
  EXPECT_EQ(b.q[0], -127);
  // x * (127 / 2.54) in float, then rounded to even: what the x86 quantizer computes
  for (int j = 1; j < 4; ++j) EXPECT_EQ(b.q[j], int(std::nearbyint(x[j] * (127.0f / 2.54f)))) << j;
  EXPECT_EQ(b.q[3], 64);
  for (int j = 4; j < 32; ++j) EXPECT_EQ(b.q[j], 0);
}

// The process's quantizer (AVX2 on x86) gives the scalar loops' bytes: random rows of several
// sizes, and blocks of ties, NaNs, infinities, zeros, and of a largest magnitude of both signs
// (Q8_K takes the first one's sign).
TEST(QuantizeActivations, TheVectorQuantizerGivesTheReferencesBytes) {
  const int64_t cols = 1024;
  std::vector<std::vector<float>> rows;
  for (int seed = 0; seed < 4; ++seed) rows.push_back(gaussian(cols, 40 + seed, 0.1f * (1 + seed)));
  std::vector<float> edges(cols, 0.0f);  // block 0 (and K-block 0) all zero
  for (int j = 32; j < 64; ++j) edges[size_t(j)] = 0.01f * float(j - 48);  // ties at x.5 steps
  edges[64] = NAN;
  edges[65] = 1.0f;
  for (int j = 96; j < 128; ++j) edges[size_t(j)] = NAN;  // a block of NaNs
  edges[128] = INFINITY;
  edges[129] = 3.0f;
  edges[160] = -0.0f;
  edges[161] = 1e-30f;  // below fp16's range: a zero scale
  edges[300] = -5.0f;   // K-block 1: -5 first, then +5
  edges[301] = 5.0f;
  edges[520] = 7.0f;  // K-block 2: +7 first, then -7
  edges[700] = -7.0f;
  for (int j = 800; j < 832; ++j) edges[size_t(j)] = float(j % 3) * 1e4f;
  rows.push_back(edges);
  for (WeightDtype dtype : {WeightDtype::q8_0, WeightDtype::q4_k}) {
    const size_t bytes = size_t(activation_row_bytes(dtype, cols));
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<uint8_t> want(bytes, 0), got(bytes, 0);
      quantize_activation_row_reference(dtype, rows[r].data(), cols, want.data());
      quantize_activation_row(dtype, rows[r].data(), cols, got.data());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
          << weight_dtype_name(dtype) << " row " << r;
    }
  }
}

TEST(QuantizeActivations, Q8_KTakesTheSignedMaximumAndKeepsGroupSums) {
  std::vector<float> x = gaussian(512, 11);
  x[300] = 9.0f;  // block 1's largest magnitude, positive: its q is -127
  std::vector<uint8_t> out(size_t(activation_row_bytes(WeightDtype::q4_k, 512)));
  quantize_activation_row(WeightDtype::q4_k, x.data(), 512, out.data());
  const ActivationRow row = activation_row(WeightDtype::q4_k, out.data(), 512);
  const int8_t* q = row.q + 256;  // block 1
  const float d = float(row.d[1]);
  EXPECT_EQ(q[300 - 256], -127);
  EXPECT_EQ(d, 1.0f / (-127.0f / 9.0f));  // a float, as Q8_K stores it
  for (int g = 0; g < 16; ++g) {
    int sum = 0;
    for (int j = 0; j < 16; ++j) sum += q[16 * g + j];
    EXPECT_EQ(row.sums[16 + g], sum) << g;
  }
  for (int j = 0; j < 256; ++j)  // each value within half a step of its quantized value
    EXPECT_LE(std::fabs(d * q[j] - x[256 + j]), std::fabs(d) * 0.5001f) << j;
}

using DotKernel = void (*)(WeightDtype, int64_t, const uint8_t*, int64_t, const uint8_t*, int64_t,
                           int, float*, int64_t);

// The vector kernels this CPU can run, by name: the process's choice, and each ISA's own.
std::vector<std::pair<std::string, DotKernel>> vector_kernels() {
  std::vector<std::pair<std::string, DotKernel>> kernels = {{"quant_dot", quant_dot}};
#ifdef GATTN_QUANT_DOT_AVX2
  kernels.emplace_back("avx2", quant_kernels::avx2_dot);
#endif
#ifdef GATTN_X86_KERNELS
  if (cpu_features().avx512bw && cpu_features().avx512_vnni)
    kernels.emplace_back("avx512", avx512::quant_dot);
#endif
  return kernels;
}

// Every kernel, every group size, an even and an odd number of blocks (352 values: one-row
// Q8_0 / Q4_0 take eight blocks at a time, then a pair, then one): the vector kernels add
// the reference's per-block floats in another order, nothing else.
TEST(QuantDot, VectorKernelsAgreeWithTheScalarReference) {
  for (const auto& [kernel_name, kernel] : vector_kernels())
    for (int64_t cols : {1024, 1280, 96, 352})
      for (WeightDtype dtype : kBlockFormats) {
        if (cols % weight_block_values(dtype)) continue;
        const std::vector<uint8_t> w = random_blocks(dtype, 1, cols, 5);
        const int64_t x_bytes = activation_row_bytes(dtype, cols);
        std::vector<uint8_t> x(size_t(x_bytes * kQuantDotRows));
        for (int r = 0; r < kQuantDotRows; ++r) {
          const std::vector<float> v = gaussian(cols, 100 + r, 1.0f + r);
          quantize_activation_row(dtype, v.data(), cols, x.data() + r * x_bytes);
        }
        for (int nx = 1; nx <= kQuantDotRows; ++nx) {
          std::vector<float> want(nx), got(nx);
          quant_dot_reference(dtype, cols, w.data(), 1, x.data(), x_bytes, nx, want.data(), 1);
          kernel(dtype, cols, w.data(), 1, x.data(), x_bytes, nx, got.data(), 1);
          EXPECT_LE(relative_l2(got, want), 1e-6)
              << kernel_name << " " << weight_dtype_name(dtype) << " cols " << cols << " nx " << nx;
        }
      }
}

// The product of a whole matrix, decode- and prefill-sized, through quantized_linear: the vector
// kernels against the reference, and the reference against dequantize-then-fp32 (the error of
// quantizing the activations; printed). For unrelated random weights and inputs the products are
// small against the inputs' size and that error is at its largest: Q8_0 rounds to steps of
// max|x| / 127 (max|x| ~ 2.4 sd over 32 normal values), an error of sd 2.4 / 127 / sqrt(12) =
// 0.55% of the input's, which the sum carries over whole (Q8_K's 256-value blocks: ~0.7%); a
// model's logits, sums of related values, see less (test_gguf_quantized.cpp: <= 5e-3).
TEST(QuantizedLinear, MatchesTheReferenceAndDequantizedFp32) {
  const int64_t cols = 512, out_dim = 48;
  for (WeightDtype dtype : kBlockFormats) {
    const std::vector<uint8_t> w = random_blocks(dtype, out_dim, cols, 9);
    const WeightView view{.dtype = dtype, .data = w.data(), .rows = out_dim, .cols = cols};
    std::vector<float> dense(size_t(out_dim * cols));
    for (int64_t n = 0; n < out_dim; ++n)
      ggml::dequantize_row(ggml_type_of(dtype), w.data() + n * view.row_bytes(), cols,
                           dense.data() + n * cols);
    for (int rows : {1, 3, 8, 21, 40}) {
      const std::vector<float> in = gaussian(rows * cols, 7 + rows);
      std::vector<float> got(size_t(rows * out_dim)), ref(got.size()), fp32(got.size());
      quantized_linear(got.data(), in.data(), view, rows);
      quantized_linear(ref.data(), in.data(), view, rows, 0, true);
      for (int r = 0; r < rows; ++r)
        for (int64_t n = 0; n < out_dim; ++n) {
          double s = 0;
          for (int64_t k = 0; k < cols; ++k) s += double(in[r * cols + k]) * dense[n * cols + k];
          fp32[r * out_dim + n] = float(s);
        }
      EXPECT_LE(relative_l2(got, ref), 1e-6) << weight_dtype_name(dtype) << " rows " << rows;
      const double quantization = relative_l2(ref, fp32);
      std::printf("%s rows %d: relative L2 against dequantize-then-fp32 %.2e\n",
                  weight_dtype_name(dtype), rows, quantization);
      EXPECT_LE(quantization, 1e-2) << weight_dtype_name(dtype) << " rows " << rows;
    }
  }
}

// Prefill-sized products on packed sixteen-row tiles (ops/quant_tile.h), which this process runs
// under AVX-512 VNNI, or AVX2 (every x86 build's baseline): the scalar reference's values bit for
// bit (each lane adds its row's
// exact block products in the reference's order), for a last tile of 5 rows, an odd number of
// blocks, input rows not a multiple of the kernel's four, groups of several tiles (300 weight rows)
// and more input rows than one pass over a group takes (300).
TEST(QuantizedLinear, TilesGiveTheScalarReferenceBitForBit) {
#ifdef GATTN_QUANT_DOT_AVX2
  const bool tiles = true;
#else
  const bool tiles = active_isa() == Isa::avx512 && cpu_features().avx512_vnni;
#endif
  struct Shape {
    int64_t out_dim, cols;
    int rows;
  };
  const Shape shapes[] = {{37, 96, 32},   {37, 96, 35},    {37, 256, 66}, {37, 1024, 35},
                          {37, 1280, 66}, {300, 256, 300}, {300, 96, 40}};
  for (WeightDtype dtype : kBlockFormats) {
    ASSERT_EQ(quant_tiles_available(dtype), tiles) << weight_dtype_name(dtype);
    if (!tiles) continue;
    for (const Shape& shape : shapes) {
      const int64_t cols = shape.cols, out_dim = shape.out_dim;
      const int rows = shape.rows;
      if (cols % weight_block_values(dtype)) continue;
      const std::vector<uint8_t> w = random_blocks(dtype, out_dim, cols, 11);
      const WeightView view{.dtype = dtype, .data = w.data(), .rows = out_dim, .cols = cols};
      const std::vector<float> in = gaussian(rows * cols, 50 + rows);
      std::vector<float> got(size_t(rows * out_dim)), want(got.size());
      quantized_linear(got.data(), in.data(), view, rows);
      quantized_linear(want.data(), in.data(), view, rows, 0, true);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << weight_dtype_name(dtype) << " " << out_dim << " x " << cols << ", rows " << rows;
    }
  }
  for (WeightDtype dtype : {WeightDtype::f32, WeightDtype::bf16})
    EXPECT_FALSE(quant_tiles_available(dtype)) << weight_dtype_name(dtype);
}

// A matrix in parts of mixed storage (a fused q|k|v view over a GGUF file's tensors): parts that
// take the same activation blocks share one quantization of the input, and every part's columns
// equal its own product, bit for bit.
TEST(QuantizedLinear, PartsShareTheQuantizedInputAndEqualTheirOwnProducts) {
  const int64_t cols = 256;
  const WeightDtype dtypes[] = {WeightDtype::q8_0, WeightDtype::q4_0, WeightDtype::f32,
                                WeightDtype::q4_k, WeightDtype::q6_k, WeightDtype::q8_0};
  const int64_t part_rows[] = {32, 16, 8, 16, 48, 8};
  std::vector<std::vector<uint8_t>> storage;
  std::vector<WeightView> parts;
  int64_t out_dim = 0;
  for (int i = 0; i < 6; ++i) {
    if (dtypes[i] == WeightDtype::f32) {
      const std::vector<float> f = gaussian(part_rows[i] * cols, 40 + i, 0.05f);
      storage.emplace_back(reinterpret_cast<const uint8_t*>(f.data()),
                           reinterpret_cast<const uint8_t*>(f.data() + f.size()));
    } else {
      storage.push_back(random_blocks(dtypes[i], part_rows[i], cols, 20 + i));
    }
    parts.push_back({.dtype = dtypes[i], .rows = part_rows[i], .cols = cols});
    out_dim += part_rows[i];
  }
  for (int i = 0; i < 6; ++i) parts[i].data = storage[i].data();
  ExecContext exec;
  for (int rows : {1, 5, 19}) {
    const std::vector<float> in = gaussian(rows * cols, 3 + rows);
    std::vector<float> got(size_t(rows * out_dim)), want(got.size());
    typed_linear_forward_parts(exec, got.data(), in.data(), parts.data(), 6, rows, int(out_dim));
    int64_t done = 0;
    for (const WeightView& part : parts) {
      typed_linear_forward(exec, want.data() + done, in.data(), part, rows, int(out_dim));
      done += part.rows;
    }
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << "rows " << rows;
  }
}

// Parts that all take the same input blocks (q, k, v or gate, up of a Q4_K_M file: Q4_K and Q6_K;
// or Q8_0 and Q4_0) run in one region at decode sizes (quantized_linear_parts): each part's
// columns equal its own product bit for bit; at prefill sizes it declines (part by part there).
TEST(QuantizedLinear, PartsInOneRegionEqualTheirOwnProducts) {
  const int64_t cols = 512;
  const std::vector<std::vector<WeightDtype>> sets = {
      {WeightDtype::q4_k, WeightDtype::q4_k, WeightDtype::q6_k},
      {WeightDtype::q8_0, WeightDtype::q4_0}};
  const int64_t part_rows[] = {64, 32, 48};
  for (const auto& dtypes : sets) {
    std::vector<std::vector<uint8_t>> storage;
    std::vector<WeightView> parts;
    int64_t out_dim = 0;
    for (size_t i = 0; i < dtypes.size(); ++i) {
      storage.push_back(random_blocks(dtypes[i], part_rows[i], cols, 60 + int(i)));
      parts.push_back({.dtype = dtypes[i], .rows = part_rows[i], .cols = cols});
      out_dim += part_rows[i];
    }
    for (size_t i = 0; i < parts.size(); ++i) parts[i].data = storage[i].data();
    for (int rows : {1, 8, 13, 40}) {
      const std::vector<float> in = gaussian(rows * cols, 70 + rows);
      const QuantizedRows x = quantize_rows(in.data(), rows, cols, dtypes[0]);
      std::vector<float> got(size_t(rows * out_dim)), want(got.size());
      const bool one_region =
          quantized_linear_parts(got.data(), x, parts.data(), int(parts.size()), int(out_dim));
      EXPECT_EQ(one_region, rows < 32) << "rows " << rows;
      if (!one_region) continue;
      int64_t done = 0;
      for (const WeightView& part : parts) {
        quantized_linear(want.data() + done, x, part, int(out_dim));
        done += part.rows;
      }
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
          << weight_dtype_name(dtypes[0]) << " parts, rows " << rows;
    }
  }
}

}  // namespace
}  // namespace gattn
