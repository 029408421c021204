#include "ops/embedding.h"

#include <algorithm>

#include "ops/bf16_bits.h"
#include "ops/ggml_blocks.h"
#include "util/error.h"

namespace gattn {

namespace {
void check_ids(const int32_t* ids, int64_t rows, int vocab) {
  for (int64_t n = 0; n < rows; ++n)
    if (ids[n] < 0 || ids[n] >= vocab)
      fail("token id ", ids[n], " at position ", n, " is outside the vocabulary [0, ", vocab, ")");
}
}  // namespace

void embedding_forward(float* out, const int32_t* ids, const WeightView& table, int64_t rows) {
  GATTN_ASSERT(table.device == Device::host, "an embedding table on another device");
  const int dim = int(table.cols);
  if (table.dtype == WeightDtype::f32)
    return embedding_forward(out, ids, table.f32(), rows, dim, int(table.rows));
  check_ids(ids, rows, int(table.rows));
  if (is_block_format(table.dtype)) {  // a GGUF table: each row as llama.cpp dequantizes it
    const int64_t row_bytes = table.row_bytes();
#pragma omp parallel for schedule(static)
    for (int64_t n = 0; n < rows; ++n)
      ggml::dequantize_row(ggml_type_of(table.dtype), table.bytes() + ids[n] * row_bytes, dim,
                           out + n * dim);
    return;
  }
  GATTN_ASSERT(table.dtype == WeightDtype::bf16, "embedding dtype ", int(table.dtype));
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n) {
    const uint16_t* row = table.bf16() + int64_t(ids[n]) * dim;
    for (int c = 0; c < dim; ++c) out[n * dim + c] = bf16_to_float(row[c]);
  }
}

template <typename T>
void embedding_forward(T* out, const int32_t* ids, const T* table, int64_t rows, int dim,
                       int vocab) {
  check_ids(ids, rows, vocab);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n) std::copy_n(table + int64_t(ids[n]) * dim, dim, out + n * dim);
}

template <typename T>
void embedding_backward(T* d_table, const T* d_out, const int32_t* ids, int64_t rows, int dim) {
  // Each thread owns a stripe of channels and walks the tokens in order.
  constexpr int kStripe = 64;
  const int stripes = (dim + kStripe - 1) / kStripe;
#pragma omp parallel for schedule(static)
  for (int stripe = 0; stripe < stripes; ++stripe) {
    const int c0 = stripe * kStripe, c1 = std::min(dim, c0 + kStripe);
    for (int64_t n = 0; n < rows; ++n) {
      T* dst = d_table + int64_t(ids[n]) * dim;
      const T* src = d_out + n * dim;
      for (int c = c0; c < c1; ++c) dst[c] += src[c];
    }
  }
}

#define GATTN_INSTANTIATE(T)                                                           \
  template void embedding_forward<T>(T*, const int32_t*, const T*, int64_t, int, int); \
  template void embedding_backward<T>(T*, const T*, const int32_t*, int64_t, int);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
