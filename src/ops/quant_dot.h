// Dot products of llama.cpp's block-quantized weight rows (Q8_0, Q4_0, Q4_K, Q6_K:
// ops/ggml_blocks.h) with activations quantized as llama.cpp's CPU backend quantizes them: Q8_0
// blocks for Q8_0 and Q4_0 weights, Q8_K blocks for the K-quants. Each block's products are summed
// in integers and scaled once (the weights' and the activations' scales), as llama.cpp's
// ggml_vec_dot_*.
//
// Each block's integer sums times its float scale (the weights' and the activations' scales
// multiplied in float, as llama.cpp does) are exact in double and added in double: the scalar
// reference (plain C++, the bit-level oracle) adds them block after block, the vector kernels
// (AVX-512 VNNI, AVX2; chosen at run time) lane by lane, and after rounding to float they agree
// (tests: <= 1e-6 relative; equal but for a double sum within 2^-29 of a float rounding boundary).
// llama.cpp adds float lanes: its dot products differ from these by float rounding.
#pragma once
#include <cstdint>

#include "ops/weight_view.h"

namespace gattn {

// Bytes of one activation row of `cols` values quantized for weights of `dtype` (a block format):
// a multiple of 64.
int64_t activation_row_bytes(WeightDtype dtype, int64_t cols);

// An activation row as the kernels read it (the values of llama.cpp's Q8_0 or Q8_K blocks, laid
// out for vector loads): the int8 values, one scale per block (32 values for Q8_0 and Q4_0
// weights, 256 for the K-quants) as a double, and the values' sums: of each 32 for Q8_0 blocks
// (the packed tiles' weight offsets: ops/quant_tile.h), of each 16 for the K-quants.
struct ActivationRow {
  const int8_t* q;
  const double* d;
  const int16_t* sums;
};
// Static: each file has its own copy, compiled with its own flags (the AVX-512 kernels use it).
static inline ActivationRow activation_row(WeightDtype dtype, const uint8_t* row, int64_t cols) {
  const double* d = reinterpret_cast<const double*>(row + cols);
  return {reinterpret_cast<const int8_t*>(row), d,
          reinterpret_cast<const int16_t*>(d + cols / (is_k_quant(dtype) ? 256 : 32))};
}

// x[cols] -> the activation row for `dtype` weights. Q8_0 as llama.cpp's x86 quantize_row_q8_0:
// d = max|x| / 127 rounded to fp16, q = round-to-nearest-even(x * 127 / max|x|), and the sum
// of each block's q's. Q8_K as
// quantize_row_q8_K_ref: the value of largest magnitude m, q = min(127, round(-127 / m * x)),
// d = 1 / (-127 / m) (a float), and the sums of each 16 q's.
void quantize_activation_row(WeightDtype dtype, const float* x, int64_t cols, uint8_t* out);
// The plain C++ loops (the bit-level oracle of the vector quantizers, which give the same bytes).
void quantize_activation_row_reference(WeightDtype dtype, const float* x, int64_t cols,
                                       uint8_t* out);

// out[i * ld_out + n] = (weight row n) . (activation row i) for n < w_rows and i < nx: weight
// row n at w + n * weight_row_bytes(dtype, cols), activation row i at x + i * x_stride bytes;
// cols values a row. The scalar reference, and the kernel this process uses.
void quant_dot_reference(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows,
                         const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out);
void quant_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
               int64_t x_stride, int nx, float* out, int64_t ld_out);

// The most activation rows one quant_dot call takes.
inline constexpr int kQuantDotRows = 8;

}  // namespace gattn
