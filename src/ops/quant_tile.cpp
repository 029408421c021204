#include "ops/quant_tile.h"

#include "ops/avx512_kernels.h"
#include "util/cpu_features.h"
#include "util/cpu_isa.h"
#include "util/error.h"

namespace gattn {

bool quant_tiles_available(WeightDtype dtype) {
#ifdef GATTN_X86_KERNELS
  static const bool vnni = active_isa() == Isa::avx512 && cpu_features().avx512_vnni;
  return vnni && is_block_format(dtype);
#else
  (void)dtype;
  return false;
#endif
}

void pack_quant_tile(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows,
                     uint8_t* tile) {
  GATTN_ASSERT(quant_tiles_available(dtype) && w_rows >= 1 && w_rows <= kQuantTileRows,
               "a quantized tile of ", w_rows, " ", weight_dtype_name(dtype), " rows");
#ifdef GATTN_X86_KERNELS
  avx512::pack_quant_tile(dtype, cols, w, w_rows, tile);
#else
  (void)cols, (void)w, (void)tile;
#endif
}

void quant_tile_offsets(WeightDtype dtype, int64_t cols, const uint8_t* x, int64_t x_stride, int nx,
                        int32_t* offsets) {
  const int32_t offset = dtype == WeightDtype::q8_0 ? 128 : 8;
  const int64_t blocks = cols / 32;
  for (int r = 0; r < nx; ++r) {
    const auto* q = reinterpret_cast<const int8_t*>(x + r * x_stride);
    for (int64_t b = 0; b < blocks; ++b) {
      int32_t sum = 0;
      for (int j = 0; j < 32; ++j) sum += q[32 * b + j];
      offsets[r * blocks + b] = offset * sum;
    }
  }
}

void quant_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                    const uint8_t* x, int64_t x_stride, const int32_t* offsets, int nx, float* out,
                    int64_t ld_out) {
#ifdef GATTN_X86_KERNELS
  avx512::quant_tile_dot(dtype, cols, tile, w_rows, x, x_stride, offsets, nx, out, ld_out);
#else
  (void)dtype, (void)cols, (void)tile, (void)w_rows, (void)x, (void)x_stride, (void)offsets,
      (void)nx, (void)out, (void)ld_out;
  GATTN_ASSERT(false, "quantized tiles on a build without x86 kernels");
#endif
}

}  // namespace gattn
