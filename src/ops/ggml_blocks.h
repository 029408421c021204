// llama.cpp's quantized block formats as GGUF files store them (ggml-common.h), and a scalar
// dequantizer per format: the reference the quantized dot-product kernels are checked against.
//   Q8_0: 32 values = d * q, q int8, d fp16.                                  34 bytes
//   Q4_0: 32 values = d * (q - 8), q 4 bits (values j and j + 16 share byte j).  18 bytes
//   Q4_K: 256 values in 8 sub-blocks of 32 = d * s_j * q - dmin * m_j, q 4 bits, s_j and m_j
//         6 bits packed in 12 bytes, d and dmin fp16.                         144 bytes
//   Q6_K: 256 values in 16 sub-blocks of 16 = d * s_j * (q - 32), q 6 bits (4 low in ql, 2 high
//         in qh), s_j int8, d fp16.                                           210 bytes
//   Q8_K: 256 values = d * q, q int8, d float, and the sums of each 16 q's: the activations' form
//         for the K-quant dot products.                                       292 bytes
#pragma once
#include <cstdint>
#include <cstring>

namespace gattn::ggml {

constexpr int kQ8_0Values = 32, kQ4_0Values = 32, kKValues = 256;

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Sub-block j's 6-bit scale and min of a Q4_K block (llama.cpp's get_scale_min_k4). Static: each
// file has its own copy, compiled with its own flags (the AVX-512 kernels use it too).
static inline void q4_k_scale_min(int j, const uint8_t* scales, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = scales[j] & 63;
    *min = scales[j + 4] & 63;
  } else {
    *scale = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    *min = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// All eight 6-bit scales and mins of a Q4_K block at once, as q4_k_scale_min gives them one by
// one (llama.cpp's kmask unpacking of the 12 bytes), as bytes in four words: scales 0-3, 4-7, then
// mins 0-3, 4-7 (in registers where the caller builds a vector of them). Static, as
// q4_k_scale_min.
static inline void q4_k_scale_min_words(const uint8_t* packed, uint32_t words[4]) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t low6 = 0x3f3f3f3f, low4 = 0x0f0f0f0f, low2 = 0x03030303;
  words[0] = u[0] & low6;
  words[1] = (u[2] & low4) | (((u[0] >> 6) & low2) << 4);
  words[2] = u[1] & low6;
  words[3] = ((u[2] >> 4) & low4) | (((u[1] >> 6) & low2) << 4);
}
static inline void q4_k_scales_mins(const uint8_t* packed, uint8_t scales[8], uint8_t mins[8]) {
  uint32_t words[4];
  q4_k_scale_min_words(packed, words);
  std::memcpy(scales, words, 8);
  std::memcpy(mins, words + 2, 8);
}

// `n` values of a row of ggml type `type` (GgmlType id: f32, f16, bf16, q8_0, q4_0, q4_K, q6_K)
// starting at `row` (unaligned), as llama.cpp's dequantize_row_* computes them. n must be a whole
// number of the type's blocks; other types are an InternalError (the reader refuses them first).
void dequantize_row(uint32_t type, const uint8_t* row, int64_t n, float* out);

// A Q6_K block's 256 values q - 32 in order (value i's scale: scales[i / 16]), unpacked from ql's
// low and qh's high bits as llama.cpp's dequantize_row_q6_K reads them. Static, as
// q4_k_scale_min.
static inline void q6_k_values(const BlockQ6_K& b, int8_t q[kKValues]) {
  const uint8_t* ql = b.ql;
  const uint8_t* qh = b.qh;
  for (int n = 0; n < kKValues; n += 128, q += 128, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      q[l] = int8_t(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
      q[l + 32] = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
      q[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      q[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
}

}  // namespace gattn::ggml
