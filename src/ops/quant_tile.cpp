#include "ops/quant_tile.h"

#include <cstring>

#include "ops/avx512_kernels.h"
#include "ops/ggml_blocks.h"
#include "ops/quant_dot_kernels.h"
#include "ops/quant_tile_layout.h"
#include "util/cpu_features.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/fp16.h"

namespace gattn {

namespace {

using namespace quant_tile_layout;

bool vnni_tiles() {
#ifdef GATTN_X86_KERNELS
  static const bool vnni = active_isa() == Isa::avx512 && cpu_features().avx512_vnni;
  return vnni;
#else
  return false;
#endif
}

// Row n's 32 values of block b as unsigned bytes (Q8_0: the value + 128; Q4_0: the nibble, the
// value + 8), in order.
void unsigned_values(WeightDtype dtype, const uint8_t* row, int64_t b, uint8_t out[32]) {
  if (dtype == WeightDtype::q8_0) {
    const auto& block = reinterpret_cast<const ggml::BlockQ8_0*>(row)[b];
    for (int v = 0; v < 32; ++v) out[v] = uint8_t(block.qs[v]) ^ 0x80;
    return;
  }
  const auto& block = reinterpret_cast<const ggml::BlockQ4_0*>(row)[b];
  for (int v = 0; v < 16; ++v) {
    out[v] = block.qs[v] & 0xF;
    out[v + 16] = block.qs[v] >> 4;
  }
}

double block_scale(WeightDtype dtype, const uint8_t* row, int64_t b) {
  const uint16_t d = dtype == WeightDtype::q8_0
                         ? reinterpret_cast<const ggml::BlockQ8_0*>(row)[b].d
                         : reinterpret_cast<const ggml::BlockQ4_0*>(row)[b].d;
  return double(half_to_float(d));
}

// Row n's 256 values of K-quant block b as unsigned bytes (Q4_K: the nibbles; Q6_K: q + 32).
void unsigned_k_values(WeightDtype dtype, const uint8_t* row, int64_t b, uint8_t out[256]) {
  if (dtype == WeightDtype::q6_k) {
    int8_t q[256];
    ggml::q6_k_values(reinterpret_cast<const ggml::BlockQ6_K*>(row)[b], q);
    for (int v = 0; v < 256; ++v) out[v] = uint8_t(q[v] + 32);
    return;
  }
  const auto& block = reinterpret_cast<const ggml::BlockQ4_K*>(row)[b];
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) {
      const uint8_t q = block.qs[32 * (j / 2) + l];
      out[32 * j + l] = j % 2 ? q >> 4 : q & 0xF;
    }
}

void put_int32(uint8_t* vectors, int vector, int n, int32_t v) {
  std::memcpy(vectors + 64 * vector + 4 * n, &v, 4);
}
void put_int16_pair(uint8_t* vectors, int vector, int n, int16_t lo, int16_t hi) {
  const int16_t pair[2] = {lo, hi};
  std::memcpy(vectors + 64 * vector + 4 * n, pair, 4);
}
void put_float(uint8_t* at, int n, float v) { std::memcpy(at + 4 * n, &v, 4); }

// Row n of a K-quant tile's block b: its values, scales (and mins) and d (and dmin).
void pack_k_row(WeightDtype dtype, const uint8_t* row, int64_t b, int n, uint8_t* at) {
  uint8_t values[256];
  unsigned_k_values(dtype, row, b, values);
  for (int j = 0; j < 64; ++j) std::memcpy(at + 64 * j + 4 * n, values + 4 * j, 4);
  if (dtype == WeightDtype::q6_k) {
    const auto& block = reinterpret_cast<const ggml::BlockQ6_K*>(row)[b];
    for (int s = 0; s < 16; ++s) put_int32(at + kQ6KScales, s, n, block.scales[s]);
    for (int i = 0; i < 8; ++i)
      put_int16_pair(at + kQ6KPairs, i, n, block.scales[2 * i], block.scales[2 * i + 1]);
    put_float(at + kQ6KD, n, half_to_float(block.d));
    return;
  }
  const auto& block = reinterpret_cast<const ggml::BlockQ4_K*>(row)[b];
  uint8_t scales[8], mins[8];
  ggml::q4_k_scales_mins(block.scales, scales, mins);
  for (int j = 0; j < 8; ++j) put_int32(at + kQ4KScales, j, n, scales[j]);
  for (int i = 0; i < 8; ++i) put_int16_pair(at + kQ4KMins, i, n, mins[i], mins[i]);
  put_float(at + kQ4KD, n, half_to_float(block.d));
  put_float(at + kQ4KDmin, n, half_to_float(block.dmin));
}
}  // namespace

bool quant_tiles_available(WeightDtype dtype) {
#ifdef GATTN_QUANT_DOT_AVX2
  return is_block_format(dtype);
#else
  return vnni_tiles() && is_block_format(dtype);
#endif
}

void pack_quant_tile(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows,
                     uint8_t* tile) {
  GATTN_ASSERT(quant_tiles_available(dtype) && w_rows >= 1 && w_rows <= kQuantTileRows,
               "a quantized tile of ", w_rows, " ", weight_dtype_name(dtype), " rows");
  const int64_t w_bytes = weight_row_bytes(dtype, cols);
  std::memset(tile, 0, size_t(quant_tile_bytes(dtype, cols)));
  if (is_k_quant(dtype)) {
    for (int64_t n = 0; n < w_rows; ++n)
      for (int64_t b = 0; b < cols / 256; ++b)
        pack_k_row(dtype, w + n * w_bytes, b, int(n), tile + b * kQuantTileKBlockBytes);
    return;
  }
  for (int64_t n = 0; n < w_rows; ++n) {
    const uint8_t* row = w + n * w_bytes;
    for (int64_t b = 0; b < cols / 32; ++b) {
      uint8_t* at = tile + b * kQuantTileBlockBytes;
      uint8_t values[32];
      unsigned_values(dtype, row, b, values);
      for (int j = 0; j < 8; ++j) std::memcpy(at + 64 * j + 4 * n, values + 4 * j, 4);
      const double d = block_scale(dtype, row, b);
      std::memcpy(at + kValuesBytes + 8 * n, &d, 8);
    }
  }
}

void quant_tile_dot(WeightDtype dtype, int64_t cols, const uint8_t* tile, int w_rows,
                    const uint8_t* x, int64_t x_stride, int nx, float* out, int64_t ld_out) {
#ifdef GATTN_X86_KERNELS
  if (vnni_tiles())
    return avx512::quant_tile_dot(dtype, cols, tile, w_rows, x, x_stride, nx, out, ld_out);
#endif
#ifdef GATTN_QUANT_DOT_AVX2
  quant_kernels::avx2_tile_dot(dtype, cols, tile, w_rows, x, x_stride, nx, out, ld_out);
#else
  (void)dtype, (void)cols, (void)tile, (void)w_rows, (void)x, (void)x_stride, (void)nx, (void)out,
      (void)ld_out;
  GATTN_ASSERT(false, "quantized tiles on a build without x86 kernels");
#endif
}

}  // namespace gattn
