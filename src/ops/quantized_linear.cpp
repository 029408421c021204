#include "ops/quantized_linear.h"

#include <algorithm>
#include <vector>

#include "ops/quant_dot.h"
#include "ops/quant_tile.h"
#include "util/aligned.h"
#include "util/error.h"
#include "util/threads.h"

namespace gattn {

namespace {
// Weight rows a tile: a group of input rows stays in L1 while the tile's rows pass over it.
constexpr int kTileRows = 16;
// Below this many weight bytes one thread does the whole product.
constexpr int64_t kParallelBytes = int64_t(1) << 15;
// From this many input rows the products run on packed tiles (ops/quant_tile.h), where the CPU
// has them: a tile's packing (a pass over its rows) is then spread over enough products.
constexpr int kTiledFromRows = 32;

// Input rows a pass over a group of packed tiles takes (their values stay in L2 across the group).
constexpr int kTiledRowBlock = 256;

// Each thread packs a group of (up to eight) tiles of sixteen weight rows, then runs the input
// rows past them a block at a time: the group (up to 8 x 22 KiB at 1,024 K-quant values a row)
// and a block of rows share L2, and a weight row is packed once whatever the number of input rows.
void tiled_linear(float* out, const QuantizedRows& x, const WeightView& w, int ld_out) {
  const int64_t cols = w.cols, w_bytes = w.row_bytes();
  const int64_t tiles = (w.rows + kQuantTileRows - 1) / kQuantTileRows,
                tile_bytes = quant_tile_bytes(w.dtype, cols);
  const int64_t per_group = std::clamp<int64_t>(tiles / num_threads(), 1, 8);
  const int64_t groups = (tiles + per_group - 1) / per_group;
#pragma omp parallel
  {
    thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> packed;
    packed.resize(size_t(per_group * tile_bytes));
#pragma omp for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t t0 = g * per_group, t1 = std::min(tiles, t0 + per_group);
      for (int64_t t = t0; t < t1; ++t)
        pack_quant_tile(w.dtype, cols, w.bytes() + t * kQuantTileRows * w_bytes,
                        std::min<int64_t>(kQuantTileRows, w.rows - t * kQuantTileRows),
                        packed.data() + (t - t0) * tile_bytes);
      for (int r0 = 0; r0 < x.rows; r0 += kTiledRowBlock) {
        const int nx = std::min(kTiledRowBlock, x.rows - r0);
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t n0 = t * kQuantTileRows;
          quant_tile_dot(w.dtype, cols, packed.data() + (t - t0) * tile_bytes,
                         int(std::min<int64_t>(kQuantTileRows, w.rows - n0)),
                         x.data + r0 * x.row_bytes, x.row_bytes, nx, out + r0 * ld_out + n0,
                         ld_out);
        }
      }
    }
  }
}

// The row-by-row kernels (ops/quant_dot.h) over tiles of sixteen weight rows of one matrix, or of
// several that take the same input rows (a fused q|k|v or gate|up view whose tensors a GGUF file
// stores apart: their columns side by side in out), all in one parallel region: a decode step's
// small matrices share one fork and join, and the threads split their tiles together. Each output
// is one quant_dot over a fixed group of input rows, whatever the thread that runs it.
// With one group of input rows (decode), each thread takes one run of whole tiles and calls the
// kernel once per part of it: the kernel prepares its input rows once per call (ops/quant_dot.h).
constexpr int kMostParts = 8;

// The weight rows [n0, n1) of `w` against every group of input rows.
void dot_rows(decltype(quant_dot)* dot, float* out, const QuantizedRows& x, const WeightView& w,
              int64_t n0, int64_t n1, int ld_out) {
  const int64_t w_bytes = w.row_bytes();
  for (int r0 = 0; r0 < x.rows; r0 += kQuantDotRows)
    dot(w.dtype, w.cols, w.bytes() + n0 * w_bytes, n1 - n0, x.data + r0 * x.row_bytes, x.row_bytes,
        std::min(kQuantDotRows, x.rows - r0), out + int64_t(r0) * ld_out + n0, ld_out);
}

void row_kernel_linear(float* out, const QuantizedRows& x, const WeightView* parts, int n_parts,
                       int ld_out, bool reference) {
  int64_t first_tile[kMostParts + 1] = {}, first_col[kMostParts] = {}, bytes = 0;
  for (int i = 0; i < n_parts; ++i) {
    first_tile[i + 1] = first_tile[i] + (parts[i].rows + kTileRows - 1) / kTileRows;
    first_col[i] = i == 0 ? 0 : first_col[i - 1] + parts[i - 1].rows;
    bytes += parts[i].rows * parts[i].row_bytes();
  }
  const auto dot = reference ? quant_dot_reference : quant_dot;
  const int64_t tiles = first_tile[n_parts];
  // runs of tiles: one a thread with one group of input rows, else one a tile
  const int64_t runs = x.rows <= kQuantDotRows ? std::min<int64_t>(tiles, num_threads()) : tiles;
#pragma omp parallel for schedule(static) if (bytes * std::max(1, x.rows / 8) >= kParallelBytes)
  for (int64_t run = 0; run < runs; ++run) {
    const int64_t t0 = tiles * run / runs, t1 = tiles * (run + 1) / runs;
    for (int p = 0; p < n_parts; ++p) {
      const int64_t from = std::max(t0, first_tile[p]), to = std::min(t1, first_tile[p + 1]);
      if (from < to)
        dot_rows(dot, out + first_col[p], x, parts[p], (from - first_tile[p]) * kTileRows,
                 std::min<int64_t>(parts[p].rows, (to - first_tile[p]) * kTileRows), ld_out);
    }
  }
}
}  // namespace

QuantizedRows quantize_rows(const float* in, int rows, int64_t cols, WeightDtype dtype) {
  GATTN_ASSERT(is_block_format(dtype), "activation blocks for ", weight_dtype_name(dtype));
  const int64_t x_bytes = activation_row_bytes(dtype, cols);
  thread_local std::vector<uint8_t, AlignedAllocator<uint8_t>> quantized;
  if (quantized.size() < size_t(rows * x_bytes)) quantized.resize(size_t(rows * x_bytes));
  uint8_t* const x = quantized.data();
#pragma omp parallel for schedule(static) if (rows >= 16)
  for (int r = 0; r < rows; ++r)
    quantize_activation_row(dtype, in + int64_t(r) * cols, cols, x + r * x_bytes);
  return {x, rows, cols, x_bytes, is_k_quant(dtype)};
}

void quantized_linear(float* out, const QuantizedRows& x, const WeightView& w, int ld_out,
                      bool reference) {
  GATTN_ASSERT(is_block_format(w.dtype), "quantized_linear of ", weight_dtype_name(w.dtype));
  GATTN_ASSERT(x.serves(w), "input rows quantized for other weights than ",
               weight_dtype_name(w.dtype));
  if (ld_out == 0) ld_out = int(w.rows);
  if (!reference && x.rows >= kTiledFromRows && quant_tiles_available(w.dtype))
    return tiled_linear(out, x, w, ld_out);
  row_kernel_linear(out, x, &w, 1, ld_out, reference);
}

bool quantized_linear_parts(float* out, const QuantizedRows& x, const WeightView* parts,
                            int n_parts, int ld_out, bool reference) {
  if (n_parts > kMostParts || x.rows >= kTiledFromRows) return false;
  for (int i = 0; i < n_parts; ++i)
    if (!is_block_format(parts[i].dtype) || !x.serves(parts[i])) return false;
  if (ld_out == 0)
    for (int i = 0; i < n_parts; ++i) ld_out += int(parts[i].rows);
  row_kernel_linear(out, x, parts, n_parts, ld_out, reference);
  return true;
}

void quantized_linear(float* out, const float* in, const WeightView& w, int rows, int ld_out,
                      bool reference) {
  GATTN_ASSERT(is_block_format(w.dtype), "quantized_linear of ", weight_dtype_name(w.dtype));
  quantized_linear(out, quantize_rows(in, rows, w.cols, w.dtype), w, ld_out, reference);
}

}  // namespace gattn
