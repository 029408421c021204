#include "ops/quant_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/avx512_kernels.h"
#include "ops/ggml_blocks.h"
#include "ops/quant_dot_kernels.h"
#include "util/cpu_features.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/fp16.h"

namespace gattn {

namespace {

using ggml::BlockQ4_0;
using ggml::BlockQ4_K;
using ggml::BlockQ6_K;
using ggml::BlockQ8_0;

template <typename Block>
Block block_at(const uint8_t* row, int64_t i) {
  Block b;
  std::memcpy(&b, row + i * int64_t(sizeof(Block)), sizeof b);
  return b;
}

// round-to-nearest-even of v into [-127, 127]; a nan gives 0 (its block's scale is nan anyway).
int8_t round_q(float v) {
  if (std::isnan(v)) return 0;
  return int8_t(std::clamp(std::nearbyint(v), -127.0f, 127.0f));
}

void quantize_q8_0(const float* x, int64_t blocks, int8_t* q, double* d, int16_t* sums) {
  for (int64_t b = 0; b < blocks; ++b, x += 32, q += 32) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    d[b] = half_to_float(float_to_half(amax / 127.0f));
    const float id = amax != 0 ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += q[j] = round_q(x[j] * id);
    sums[b] = int16_t(sum);
  }
}

void quantize_q8_k(const float* x, int64_t blocks, int8_t* q, double* d, int16_t* sums) {
  for (int64_t b = 0; b < blocks; ++b, x += 256, q += 256) {
    float amax = 0, max = 0;
    for (int j = 0; j < 256; ++j)
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    d[b] = 0;
    std::fill(q, q + 256, int8_t(0));
    if (amax != 0) {
      const float iscale = -127.0f / max;
      for (int j = 0; j < 256; ++j) q[j] = round_q(iscale * x[j]);
      d[b] = 1 / iscale;  // a float, as Q8_K stores it
    }
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += q[16 * g + j];
      sums[16 * b + g] = int16_t(sum);
    }
  }
}

// The reference dots of one weight row with one activation row: integer sums per block times
// the block's scales, exactly in double, added in double. Q8_0 and Q4_0: sum * d_w * d_x, both
// scales halves (an int below 2^17 times 11 and 11 bits). K-quants: sum * float(d_w * d_x), the
// scales' product rounded to float once per block as llama.cpp does (an int below 2^29 times 24
// bits); the vector kernels add the same exact products in another order, so after the
// rounding to float every kernel gives the same value (a difference needs a double sum within
// 2^-29 of a float rounding boundary). Without that, float sums in another order would now and
// then move an activation across a rounding boundary of the next quantization, changing the
// logits by ~1e-4.
float dot_q8_0(int64_t blocks, const uint8_t* w, const ActivationRow& x) {
  double sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto wb = block_at<BlockQ8_0>(w, b);
    int s = 0;
    for (int j = 0; j < 32; ++j) s += int(wb.qs[j]) * int(x.q[32 * b + j]);
    sum += double(s) * double(half_to_float(wb.d)) * x.d[b];
  }
  return float(sum);
}

float dot_q4_0(int64_t blocks, const uint8_t* w, const ActivationRow& x) {
  double sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto wb = block_at<BlockQ4_0>(w, b);
    const int8_t* q = x.q + 32 * b;
    int s = 0;
    for (int j = 0; j < 16; ++j)
      s += ((wb.qs[j] & 0xF) - 8) * int(q[j]) + ((wb.qs[j] >> 4) - 8) * int(q[j + 16]);
    sum += double(s) * double(half_to_float(wb.d)) * x.d[b];
  }
  return float(sum);
}

float dot_q4_k(int64_t blocks, const uint8_t* w, const ActivationRow& x) {
  double sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto wb = block_at<BlockQ4_K>(w, b);
    const int8_t* q8 = x.q + 256 * b;
    const int16_t* sums = x.sums + 16 * b;
    int sumi = 0, summ = 0;
    for (int j = 0; j < 8; ++j) {
      uint8_t scale, min;
      ggml::q4_k_scale_min(j, wb.scales, &scale, &min);
      summ += int(min) * (sums[2 * j] + sums[2 * j + 1]);
      const uint8_t* q = wb.qs + 32 * (j / 2);
      int s = 0;
      for (int l = 0; l < 32; ++l) s += (j % 2 ? q[l] >> 4 : q[l] & 0xF) * int(q8[32 * j + l]);
      sumi += int(scale) * s;
    }
    const float xd = float(x.d[b]);
    sum += double(sumi) * double(half_to_float(wb.d) * xd) -
           double(summ) * double(half_to_float(wb.dmin) * xd);
  }
  return float(sum);
}

float dot_q6_k(int64_t blocks, const uint8_t* w, const ActivationRow& x) {
  double sum = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const auto wb = block_at<BlockQ6_K>(w, b);
    int8_t q[256];
    ggml::q6_k_values(wb, q);
    const int8_t* q8 = x.q + 256 * b;
    int sumi = 0;
    for (int v = 0; v < 256; ++v) sumi += wb.scales[v / 16] * q[v] * q8[v];
    sum += double(sumi) * double(half_to_float(wb.d) * float(x.d[b]));
  }
  return float(sum);
}

}  // namespace

int64_t activation_row_bytes(WeightDtype dtype, int64_t cols) {
  GATTN_ASSERT(is_block_format(dtype), "activation blocks for ", weight_dtype_name(dtype));
  GATTN_ASSERT(cols % weight_block_values(dtype) == 0, cols, " values for ",
               weight_dtype_name(dtype), " blocks");
  const int64_t block = is_k_quant(dtype) ? 256 : 32;
  const int64_t sums = is_k_quant(dtype) ? cols / 16 : cols / 32;
  const int64_t bytes =
      cols + cols / block * int64_t(sizeof(double)) + sums * int64_t(sizeof(int16_t));
  return (bytes + 63) / 64 * 64;
}

namespace {
using Quantizer = void (*)(const float*, int64_t, int8_t*, double*, int16_t*);

void quantize_row_with(Quantizer q8_0, Quantizer q8_k, WeightDtype dtype, const float* x,
                       int64_t cols, uint8_t* out) {
  GATTN_ASSERT(is_block_format(dtype) && cols % weight_block_values(dtype) == 0);
  const ActivationRow row = activation_row(dtype, out, cols);
  auto* q = const_cast<int8_t*>(row.q);
  auto* d = const_cast<double*>(row.d);
  auto* sums = const_cast<int16_t*>(row.sums);
  if (is_k_quant(dtype)) return q8_k(x, cols / 256, q, d, sums);
  q8_0(x, cols / 32, q, d, sums);
}
}  // namespace

void quantize_activation_row_reference(WeightDtype dtype, const float* x, int64_t cols,
                                       uint8_t* out) {
  quantize_row_with(quantize_q8_0, quantize_q8_k, dtype, x, cols, out);
}

void quantize_activation_row(WeightDtype dtype, const float* x, int64_t cols, uint8_t* out) {
#ifdef GATTN_QUANT_DOT_AVX2
  quantize_row_with(quant_kernels::avx2_quantize_q8_0, quant_kernels::avx2_quantize_q8_k, dtype, x,
                    cols, out);
#else
  quantize_activation_row_reference(dtype, x, cols, out);
#endif
}

void quant_dot_reference(WeightDtype dtype, int64_t cols, const uint8_t* weights, int64_t w_rows,
                         const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out) {
  const int64_t blocks = cols / weight_block_values(dtype), w_bytes = weight_row_bytes(dtype, cols);
  for (int64_t n = 0; n < w_rows; ++n)
    for (int r = 0; r < nx; ++r) {
      const uint8_t* w = weights + n * w_bytes;
      float& result = out[r * ld_out + n];
      const ActivationRow xr = activation_row(dtype, x + r * x_stride, cols);
      switch (dtype) {
        case WeightDtype::q8_0:
          result = dot_q8_0(blocks, w, xr);
          break;
        case WeightDtype::q4_0:
          result = dot_q4_0(blocks, w, xr);
          break;
        case WeightDtype::q4_k:
          result = dot_q4_k(blocks, w, xr);
          break;
        case WeightDtype::q6_k:
          result = dot_q6_k(blocks, w, xr);
          break;
        default:
          GATTN_ASSERT(false, "quant_dot of ", weight_dtype_name(dtype));
      }
    }
}

void quant_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
               int64_t x_stride, int nx, float* out, int64_t ld_out) {
  GATTN_ASSERT(is_block_format(dtype) && nx >= 1 && nx <= kQuantDotRows, "quant_dot of ",
               weight_dtype_name(dtype), " with ", nx, " rows");
#ifdef GATTN_X86_KERNELS
  static const bool vnni = active_isa() == Isa::avx512 && cpu_features().avx512_vnni;
  if (vnni) return avx512::quant_dot(dtype, cols, w, w_rows, x, x_stride, nx, out, ld_out);
#endif
#ifdef GATTN_QUANT_DOT_AVX2
  return quant_kernels::avx2_dot(dtype, cols, w, w_rows, x, x_stride, nx, out, ld_out);
#else
  quant_dot_reference(dtype, cols, w, w_rows, x, x_stride, nx, out, ld_out);
#endif
}

}  // namespace gattn
