// Many activation rows (prefill) times Q8_0 or Q4_0 weights on AVX-512 VNNI (ops/quant_tile.h):
// sixteen weight rows repacked once so that one vpdpbusd multiplies four values of all sixteen
// rows (lane n: weight row n) by the same four activation values, broadcast. A block's eight
// vpdpbusd leave each weight row's integer block sum in its own lane: no reduction across lanes,
// one conversion and FMA per eight rows and block, where the row-by-row kernels
// (ops/quant_dot_avx512.cpp) gather sums across lanes for every block pair.
#include <immintrin.h>

#include <cstring>

// GCC 12's AVX-512 headers build the insert and set intrinsics on a deliberately undefined vector
// (`__m512i __Y = __Y;`), which -Wuninitialized reports at every use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "ops/avx512_kernels.h"
#include "ops/ggml_blocks.h"
#include "ops/quant_dot.h"
#include "ops/quant_tile.h"

namespace gattn::avx512 {

namespace {

// One block of a tile: eight vectors of the weights (vector j, lane n: values 4j .. 4j + 3 of
// weight row n, as vpdpbusd's unsigned bytes), then the sixteen rows' scales as doubles.
constexpr int64_t kValuesBytes = 8 * 64;

// Row n's 32 values of block b as unsigned bytes (Q8_0: the value + 128; Q4_0: the nibble, the
// value + 8), in order.
void unsigned_values(WeightDtype dtype, const uint8_t* row, int64_t b, uint8_t out[32]) {
  if (dtype == WeightDtype::q8_0) {
    const auto& block = reinterpret_cast<const ggml::BlockQ8_0*>(row)[b];
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm256_xor_si256(v, _mm256_set1_epi8(char(0x80))));
    return;
  }
  const auto& block = reinterpret_cast<const ggml::BlockQ4_0*>(row)[b];
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
  const __m128i low = _mm_set1_epi8(0x0F);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_and_si128(packed, low));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 16),
                   _mm_and_si128(_mm_srli_epi16(packed, 4), low));
}

double block_scale(WeightDtype dtype, const uint8_t* row, int64_t b) {
  const uint16_t d = dtype == WeightDtype::q8_0
                         ? reinterpret_cast<const ggml::BlockQ8_0*>(row)[b].d
                         : reinterpret_cast<const ggml::BlockQ4_0*>(row)[b].d;
  return double(_cvtsh_ss(d));
}

// R activation rows (their values, block scales and offsets) against one tile: acc[r][h] lanes
// are weight rows 8h .. 8h + 7. Each lane adds its row's exact block products block after block,
// in double: the scalar reference's sums (ops/quant_dot.cpp), bit for bit.
template <int R>
void tile_rows(int64_t blocks, const uint8_t* tile, const ActivationRow* x,
               const int32_t* const* off, float* out, int64_t ld_out, int w_rows) {
  __m512d acc[R][2];
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_pd();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* at = tile + b * kQuantTileBlockBytes;
    __m512i w[8];
    for (int j = 0; j < 8; ++j) w[j] = _mm512_load_si512(at + 64 * j);
    const double* scales = reinterpret_cast<const double*>(at + kValuesBytes);
    const __m512d dw0 = _mm512_load_pd(scales), dw1 = _mm512_load_pd(scales + 8);
    for (int r = 0; r < R; ++r) {
      const int8_t* q = x[r].q + 32 * b;
      __m512i p = _mm512_set1_epi32(-off[r][b]);
      for (int j = 0; j < 8; ++j) {
        int32_t four;
        std::memcpy(&four, q + 4 * j, 4);
        p = _mm512_dpbusd_epi32(p, w[j], _mm512_set1_epi32(four));
      }
      const __m512d dx = _mm512_set1_pd(x[r].d[b]);
      acc[r][0] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(p)),
                                  _mm512_mul_pd(dw0, dx), acc[r][0]);
      acc[r][1] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(p, 1)),
                                  _mm512_mul_pd(dw1, dx), acc[r][1]);
    }
  }
  const __mmask8 m0 = __mmask8(w_rows >= 8 ? 0xFF : (1u << w_rows) - 1);
  const __mmask8 m1 = __mmask8(w_rows >= 16 ? 0xFF : w_rows <= 8 ? 0 : (1u << (w_rows - 8)) - 1);
  for (int r = 0; r < R; ++r) {
    _mm256_mask_storeu_ps(out + r * ld_out, m0, _mm512_cvtpd_ps(acc[r][0]));
    _mm256_mask_storeu_ps(out + r * ld_out + 8, m1, _mm512_cvtpd_ps(acc[r][1]));
  }
}

}  // namespace

void pack_quant_tile(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows,
                     uint8_t* tile) {
  const int64_t blocks = cols / 32, w_bytes = weight_row_bytes(dtype, cols);
  std::memset(tile, 0, size_t(blocks * kQuantTileBlockBytes));
  for (int64_t n = 0; n < w_rows; ++n) {
    const uint8_t* row = w + n * w_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t* at = tile + b * kQuantTileBlockBytes;
      uint8_t values[32];
      unsigned_values(dtype, row, b, values);
      for (int j = 0; j < 8; ++j) std::memcpy(at + 64 * j + 4 * n, values + 4 * j, 4);
      const double d = block_scale(dtype, row, b);
      std::memcpy(at + kValuesBytes + 8 * n, &d, 8);
    }
  }
}

void quant_tile_dot(int64_t cols, const uint8_t* tile, int w_rows, const uint8_t* x,
                    int64_t x_stride, const int32_t* offsets, int nx, float* out, int64_t ld_out) {
  const int64_t blocks = cols / 32;
  constexpr int kRows = 4;
  for (int r0 = 0; r0 < nx; r0 += kRows) {
    ActivationRow rows[kRows];
    const int32_t* off[kRows];
    const int n = nx - r0 < kRows ? nx - r0 : kRows;
    for (int r = 0; r < n; ++r) {
      rows[r] = activation_row(WeightDtype::q8_0, x + (r0 + r) * x_stride, cols);
      off[r] = offsets + (r0 + r) * blocks;
    }
    float* o = out + r0 * ld_out;
    switch (n) {
      case 1:
        tile_rows<1>(blocks, tile, rows, off, o, ld_out, w_rows);
        break;
      case 2:
        tile_rows<2>(blocks, tile, rows, off, o, ld_out, w_rows);
        break;
      case 3:
        tile_rows<3>(blocks, tile, rows, off, o, ld_out, w_rows);
        break;
      default:
        tile_rows<4>(blocks, tile, rows, off, o, ld_out, w_rows);
    }
  }
}

}  // namespace gattn::avx512
