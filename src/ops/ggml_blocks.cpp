#include "ops/ggml_blocks.h"

#include <cstring>

#include "io/gguf.h"
#include "util/error.h"
#include "util/fp16.h"

namespace gattn::ggml {

namespace {

template <typename Block>
Block block_at(const uint8_t* row, int64_t i) {
  Block b;
  std::memcpy(&b, row + i * int64_t(sizeof(Block)), sizeof b);
  return b;
}

void dequantize_q8_0(const uint8_t* row, int64_t blocks, float* y) {
  for (int64_t i = 0; i < blocks; ++i, y += kQ8_0Values) {
    const auto b = block_at<BlockQ8_0>(row, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQ8_0Values; ++j) y[j] = float(b.qs[j]) * d;
  }
}

void dequantize_q4_0(const uint8_t* row, int64_t blocks, float* y) {
  for (int64_t i = 0; i < blocks; ++i, y += kQ4_0Values) {
    const auto b = block_at<BlockQ4_0>(row, i);
    const float d = half_to_float(b.d);
    for (int j = 0; j < kQ4_0Values / 2; ++j) {
      y[j] = float((b.qs[j] & 0x0F) - 8) * d;
      y[j + kQ4_0Values / 2] = float((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_q4_k(const uint8_t* row, int64_t blocks, float* y) {
  for (int64_t i = 0; i < blocks; ++i) {
    const auto b = block_at<BlockQ4_K>(row, i);
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    const uint8_t* q = b.qs;
    for (int j = 0; j < kKValues / 64; ++j, q += 32) {
      uint8_t scale, min;
      q4_k_scale_min(2 * j, b.scales, &scale, &min);
      const float d1 = d * float(scale), m1 = dmin * float(min);
      q4_k_scale_min(2 * j + 1, b.scales, &scale, &min);
      const float d2 = d * float(scale), m2 = dmin * float(min);
      for (int l = 0; l < 32; ++l) *y++ = d1 * float(q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * float(q[l] >> 4) - m2;
    }
  }
}

void dequantize_q6_k(const uint8_t* row, int64_t blocks, float* y) {
  for (int64_t i = 0; i < blocks; ++i, y += kKValues) {
    const auto b = block_at<BlockQ6_K>(row, i);
    const float d = half_to_float(b.d);
    int8_t q[kKValues];
    q6_k_values(b, q);
    for (int v = 0; v < kKValues; ++v) y[v] = d * float(b.scales[v / 16]) * float(q[v]);
  }
}

}  // namespace

void dequantize_row(uint32_t type, const uint8_t* row, int64_t n, float* out) {
  switch (GgmlType(type)) {
    case GgmlType::f32:
      std::memcpy(out, row, size_t(n) * 4);
      return;
    case GgmlType::f16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        out[i] = half_to_float(h);
      }
      return;
    case GgmlType::bf16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, row + 2 * i, 2);
        const uint32_t bits = uint32_t(h) << 16;
        std::memcpy(out + i, &bits, 4);
      }
      return;
    case GgmlType::q8_0:
      GATTN_ASSERT(n % kQ8_0Values == 0);
      return dequantize_q8_0(row, n / kQ8_0Values, out);
    case GgmlType::q4_0:
      GATTN_ASSERT(n % kQ4_0Values == 0);
      return dequantize_q4_0(row, n / kQ4_0Values, out);
    case GgmlType::q4_k:
      GATTN_ASSERT(n % kKValues == 0);
      return dequantize_q4_k(row, n / kKValues, out);
    case GgmlType::q6_k:
      GATTN_ASSERT(n % kKValues == 0);
      return dequantize_q6_k(row, n / kKValues, out);
    default:
      break;
  }
  GATTN_ASSERT(false, "dequantize_row of ggml type ", ggml_type_name(type));
}

}  // namespace gattn::ggml
