#include "ops/typed_linear.h"

#include <unistd.h>

#include <algorithm>
#include <vector>

#include "ops/bf16_bits.h"
#include "ops/bf16_gemm.h"
#include "ops/matmul.h"
#include "ops/quantized_linear.h"
#include "ops/small_batch_linear.h"
#include "util/aligned.h"
#include "util/error.h"

namespace gattn {

namespace {
void widen_rows(const uint16_t* w, int64_t count, float* out) {
#pragma omp parallel for schedule(static) if (count >= (int64_t(1) << 16))
  for (int64_t i = 0; i < count; ++i) out[i] = bf16_to_float(w[i]);
}

// out = in W^T, W bf16, on the CPU's bf16 GEMM: the activations rounded, the weights read as
// stored.
void bf16_weights_native(float* out, const float* in, const uint16_t* w, int rows, int in_dim,
                         int out_dim, int ld_out) {
  thread_local std::vector<uint16_t, AlignedAllocator<uint16_t>> in_bf16;
  if (in_bf16.size() < size_t(rows) * in_dim) in_bf16.resize(size_t(rows) * in_dim);
  to_bf16(in, rows, in_dim, in_dim, in_bf16.data());
  bf16_gemm_rounded(out, in_bf16.data(), w, rows, out_dim, in_dim, false, true, 1, 0, ld_out);
}

// out = in W^T, W bf16, panel by panel of widened rows (each an fp32 GEMM in x's precision).
void bf16_weights_widened(const ExecContext& x, float* out, const float* in, const uint16_t* w,
                          int rows, int in_dim, int out_dim, int ld_out, int64_t panel_bytes) {
  thread_local AlignedFloats panel;
  // Panels of near-equal height (a multiple of 16): no narrow last one.
  const int most = std::min(out_dim, bf16_panel_rows(in_dim, panel_bytes));
  const int panels = (out_dim + most - 1) / most;
  const int panel_rows = std::min(most, ((out_dim + panels - 1) / panels + 15) / 16 * 16);
  if (panel.size() < size_t(panel_rows) * in_dim) panel.resize(size_t(panel_rows) * in_dim);
  for (int j0 = 0; j0 < out_dim; j0 += panel_rows) {
    const int n = std::min(panel_rows, out_dim - j0);
    widen_rows(w + int64_t(j0) * in_dim, int64_t(n) * in_dim, panel.data());
    matmul<float>(x, out + j0, in, panel.data(), rows, n, in_dim, false, true, 1, 0, in_dim, in_dim,
                  ld_out);
  }
}
}  // namespace

int bf16_panel_rows(int cols, int64_t panel_bytes) {
  const int64_t rows = panel_bytes / (int64_t(std::max(cols, 1)) * int64_t(sizeof(float)));
  return int(std::max<int64_t>(16, rows / 16 * 16));
}

int64_t bf16_panel_bytes() {
  static const int64_t bytes = [] {
    const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    return std::max<int64_t>(int64_t(4) << 20, l2 > 0 ? int64_t(l2) : 0);
  }();
  return bytes;
}

void typed_linear_forward(const ExecContext& x, float* out, const float* in, const WeightView& w,
                          int rows, int ld_out, int64_t panel_bytes) {
  GATTN_ASSERT(w.device == Device::host, "a weight on another device reached a host product");
  const int out_dim = int(w.rows), in_dim = int(w.cols);
  if (ld_out == 0) ld_out = out_dim;
  switch (w.dtype) {
    case WeightDtype::f32:
      return linear_forward(x, out, in, w.f32(), rows, in_dim, out_dim, false, ld_out);
    case WeightDtype::bf16:
      if (rows <= kSmallBatchRows)
        return small_batch_linear(out, in, w.bf16(), rows, in_dim, out_dim, false, ld_out);
      if (x.precision == GemmPrecision::bf16 ||
          (x.bf16_weights_on_bf16_gemm && native_bf16_gemm_available()))
        return bf16_weights_native(out, in, w.bf16(), rows, in_dim, out_dim, ld_out);
      return bf16_weights_widened(x, out, in, w.bf16(), rows, in_dim, out_dim, ld_out,
                                  panel_bytes ? panel_bytes : bf16_panel_bytes());
    case WeightDtype::q8_0:
    case WeightDtype::q4_0:
    case WeightDtype::q4_k:
    case WeightDtype::q6_k:
      return quantized_linear(out, in, w, rows, ld_out, x.reference_quant_kernels);
  }
  GATTN_ASSERT(false, "weight dtype ", int(w.dtype));
}

void typed_linear_forward_parts(const ExecContext& x, float* out, const float* in,
                                const WeightView* parts, int n_parts, int rows, int ld_out) {
  QuantizedRows quantized;
  if (is_block_format(parts[0].dtype)) {  // all parts in one region where they allow it
    quantized = quantize_rows(in, rows, parts[0].cols, parts[0].dtype);
    if (quantized_linear_parts(out, quantized, parts, n_parts, ld_out, x.reference_quant_kernels))
      return;
  }
  for (int i = 0; i < n_parts; out += parts[i].rows, ++i) {
    if (!is_block_format(parts[i].dtype)) {
      typed_linear_forward(x, out, in, parts[i], rows, ld_out);
      continue;
    }
    if (!quantized.serves(parts[i]))
      quantized = quantize_rows(in, rows, parts[i].cols, parts[i].dtype);
    quantized_linear(out, quantized, parts[i], ld_out, x.reference_quant_kernels);
  }
}

}  // namespace gattn
