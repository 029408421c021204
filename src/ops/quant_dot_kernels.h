// The vector kernels behind quant_dot (ops/quant_dot.h) and quant_tile_dot (ops/quant_tile.h) on
// AVX2, the x86-64 baseline: ops/quant_dot_avx2.cpp, ops/quant_tile_avx2.cpp; and the
// activations' quantization (ops/quantize_activations_avx2.cpp).
#pragma once
#include <cstdint>

#include "ops/weight_view.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define GATTN_QUANT_DOT_AVX2 1
#endif

namespace gattn::quant_kernels {

#ifdef GATTN_QUANT_DOT_AVX2
// quant_dot's contract, 1 <= nx <= kQuantDotRows.
void avx2_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
              int64_t x_stride, int nx, float* out, int64_t ld_out);
// quant_tile_dot's contract (ops/quant_tile.h; ops/quant_tile_avx2.cpp).
void avx2_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                   const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out);
// quantize_activation_row's blocks (ops/quant_dot.h), the same bytes as its scalar loops
// (ops/quantize_activations_avx2.cpp): Q8_0 blocks of 32 values, Q8_K blocks of 256.
void avx2_quantize_q8_0(const float* x, int64_t blocks, int8_t* q, double* d, int16_t* sums);
void avx2_quantize_q8_k(const float* x, int64_t blocks, int8_t* q, double* d, int16_t* sums);
#endif

}  // namespace gattn::quant_kernels
