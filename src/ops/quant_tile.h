// Prefill products of Q8_0, Q4_0, Q4_K and Q6_K weights on sixteen-row tiles repacked for the
// vector unit (ops/quant_tile_layout.h; ops/quant_tile_avx512.cpp where the CPU has AVX-512 VNNI,
// ops/quant_tile_avx2.cpp elsewhere): quantized_linear packs each tile of weight rows once and runs
// every activation row past it. The sums are the scalar
// reference's (ops/quant_dot.h: each row's exact block products added block after block in double),
// bit for bit.
#pragma once
#include <cstdint>

#include "ops/weight_view.h"

namespace gattn {

inline constexpr int kQuantTileRows = 16;
// A packed 32-value block (Q8_0, Q4_0): eight 64-byte vectors of values, sixteen double scales.
inline constexpr int64_t kQuantTileBlockBytes = 8 * 64 + 16 * 8;
// A packed 256-value block (Q4_K, Q6_K): 64 vectors of values, the sub-blocks' scales (and mins)
// in 24 vectors, the sixteen rows' d (and dmin).
inline constexpr int64_t kQuantTileKBlockBytes = 64 * 64 + 24 * 64 + 64;

// Whether this process runs `dtype` products on tiles (the four block formats, on x86).
bool quant_tiles_available(WeightDtype dtype);

// Bytes of one tile of `cols` values a row (64-byte aligned buffers).
inline int64_t quant_tile_bytes(WeightDtype dtype, int64_t cols) {
  return is_k_quant(dtype) ? cols / 256 * kQuantTileKBlockBytes : cols / 32 * kQuantTileBlockBytes;
}

// Weight rows [0, w_rows) (w_rows <= 16, weight_row_bytes apart) into `tile`, the rest zero.
void pack_quant_tile(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows,
                     uint8_t* tile);

// What the tile adds to each Q8_0 (128) or Q4_0 (8) weight to make it an unsigned byte: each
// block's products lose it times the activation block's sum (ops/quant_dot.h's ActivationRow).
inline int32_t quant_tile_weight_offset(WeightDtype dtype) {
  return dtype == WeightDtype::q8_0 ? 128 : 8;
}

// out[r * ld_out + n] = (tile row n) . (activation row r) for n < w_rows and r < nx.
void quant_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                    const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out);

}  // namespace gattn
