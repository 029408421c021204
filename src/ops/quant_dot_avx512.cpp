// AVX-512 (BW, VNNI) dot products of block-quantized weight rows with up to eight activation rows
// (ops/quant_dot.h): 64 weights an instruction — two Q8_0 / Q4_0 blocks, or two 32-value
// sub-blocks of a K-quant — each block's integer sums exact (vpdpbusd, or vpmaddubsw + vpmaddwd
// where sub-blocks carry integer scales), times the block's scale added into eight double lanes
// per row (exact products: ops/quant_dot.h).
#include <immintrin.h>

// GCC 12's AVX-512 headers build the insert and set intrinsics on a deliberately undefined vector
// (`__m512i __Y = __Y;`), which -Wuninitialized reports at every use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "ops/avx512_kernels.h"
#include "ops/ggml_blocks.h"

namespace gattn::avx512 {

namespace {

using ggml::BlockQ4_0;
using ggml::BlockQ4_K;
using ggml::BlockQ6_K;
using ggml::BlockQ8_0;
using ggml::BlockQ8_K;

inline float half(uint16_t h) { return _cvtsh_ss(h); }

template <typename Block>
const Block* blocks_of(const uint8_t* row) {
  return reinterpret_cast<const Block*>(row);
}

inline __m512i two_halves(const void* lo, const void* hi) {
  return _mm512_inserti64x4(
      _mm512_zextsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
      _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}

// acc + p's lanes 0-7 * a + lanes 8-15 * b, in double (two blocks' sums and scales).
inline __m512d add_two_scaled(__m512d acc, __m512i p, float a, float b) {
  acc = _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_castsi512_si256(p)), _mm512_set1_pd(a), acc);
  return _mm512_fmadd_pd(_mm512_cvtepi32_pd(_mm512_extracti64x4_epi64(p, 1)), _mm512_set1_pd(b),
                         acc);
}

// acc + (p's 16 lanes added in pairs: exact) * scale, in double (one block).
inline __m512d add_scaled(__m512d acc, __m512i p, float scale) {
  const __m256i eight =
      _mm256_add_epi32(_mm512_castsi512_si256(p), _mm512_extracti64x4_epi64(p, 1));
  return _mm512_fmadd_pd(_mm512_cvtepi32_pd(eight), _mm512_set1_pd(scale), acc);
}

// Sums of 4 products of signed w and x in each int32 lane (|w| <= 128, |x| <= 127).
inline __m512i signed_dot(__m512i w, __m512i x) {
  const __m512i x_signed =
      _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), x_signed);
}

template <int NX>
void q8_0_rows(int64_t blocks, const uint8_t* w, const uint8_t* x, int64_t stride, float* out) {
  __m512d acc[NX];
  for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
  const BlockQ8_0* wb = blocks_of<BlockQ8_0>(w);
  int64_t b = 0;
  for (; b + 1 < blocks; b += 2) {
    const __m512i wv = two_halves(wb[b].qs, wb[b + 1].qs);
    const float d0 = half(wb[b].d), d1 = half(wb[b + 1].d);
    for (int r = 0; r < NX; ++r) {
      const BlockQ8_0* xb = blocks_of<BlockQ8_0>(x + r * stride) + b;
      const __m512i xv = two_halves(xb[0].qs, xb[1].qs);
      acc[r] = add_two_scaled(acc[r], signed_dot(wv, xv), d0 * half(xb[0].d), d1 * half(xb[1].d));
    }
  }
  for (; b < blocks; ++b) {  // an odd last block
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs));
    for (int r = 0; r < NX; ++r) {
      const BlockQ8_0& xb = blocks_of<BlockQ8_0>(x + r * stride)[b];
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.qs));
      const __m256i xs =
          _mm256_mask_sub_epi8(xv, _mm256_movepi8_mask(wv), _mm256_setzero_si256(), xv);
      const __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(wv), xs);
      acc[r] = _mm512_fmadd_pd(_mm512_cvtepi32_pd(p), _mm512_set1_pd(half(wb[b].d) * half(xb.d)),
                               acc[r]);
    }
  }
  for (int r = 0; r < NX; ++r) out[r] = float(_mm512_reduce_add_pd(acc[r]));
}

// Two Q4_0 blocks' 64 nibbles as bytes 0..15 in block order (each block: its 16 low nibbles, then
// its 16 high ones).
inline __m512i q4_0_pair(const BlockQ4_0& a, const BlockQ4_0& b) {
  const __m128i pa = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.qs));
  const __m128i pb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
  const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(pa), pb, 1);
  const __m512i lo_hi = _mm512_inserti64x4(_mm512_zextsi256_si512(ab), _mm256_srli_epi16(ab, 4), 1);
  // lanes: a.lo b.lo a.hi b.hi (128 bits each) -> a.lo a.hi b.lo b.hi
  const __m512i order = _mm512_setr_epi64(0, 1, 4, 5, 2, 3, 6, 7);
  return _mm512_and_si512(_mm512_permutexvar_epi64(order, lo_hi), _mm512_set1_epi8(0x0F));
}

template <int NX>
void q4_0_rows(int64_t blocks, const uint8_t* w, const uint8_t* x, int64_t stride, float* out) {
  __m512d acc[NX];
  double tail[NX] = {};
  for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
  const BlockQ4_0* wb = blocks_of<BlockQ4_0>(w);
  const __m512i eight = _mm512_set1_epi8(8);
  int64_t b = 0;
  for (; b + 1 < blocks; b += 2) {
    const __m512i wv = q4_0_pair(wb[b], wb[b + 1]);  // unsigned 0..15; the -8 through sum(x)
    const float d0 = half(wb[b].d), d1 = half(wb[b + 1].d);
    for (int r = 0; r < NX; ++r) {
      const BlockQ8_0* xb = blocks_of<BlockQ8_0>(x + r * stride) + b;
      const __m512i xv = two_halves(xb[0].qs, xb[1].qs);
      const __m512i p = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, xv),
                                         _mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, xv));
      acc[r] = add_two_scaled(acc[r], p, d0 * half(xb[0].d), d1 * half(xb[1].d));
    }
  }
  for (; b < blocks; ++b)  // an odd last block, as the reference does it
    for (int r = 0; r < NX; ++r) {
      const BlockQ8_0& xb = blocks_of<BlockQ8_0>(x + r * stride)[b];
      int s = 0;
      for (int j = 0; j < 16; ++j)
        s += ((wb[b].qs[j] & 0xF) - 8) * int(xb.qs[j]) +
             ((wb[b].qs[j] >> 4) - 8) * int(xb.qs[j + 16]);
      tail[r] += double(s) * double(half(wb[b].d) * half(xb.d));
    }
  for (int r = 0; r < NX; ++r) out[r] = float(_mm512_reduce_add_pd(acc[r]) + tail[r]);
}

// 32 int16: a in lanes 0-15, b in 16-31 (vpmaddwd's scale operand for 2 x 32 products).
inline __m512i two_scales16(int a, int b) {
  return _mm512_inserti64x4(_mm512_set1_epi16(int16_t(a)), _mm256_set1_epi16(int16_t(b)), 1);
}

template <int NX>
void q4_k_rows(int64_t blocks, const uint8_t* w, const uint8_t* x, int64_t stride, float* out) {
  __m512d acc[NX];
  double mins[NX] = {};
  for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
  const BlockQ4_K* wb = blocks_of<BlockQ4_K>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t scale[8], min[8];
    for (int j = 0; j < 8; ++j) ggml::q4_k_scale_min(j, wb[b].scales, &scale[j], &min[j]);
    __m512i sums[NX];
    for (int r = 0; r < NX; ++r) sums[r] = _mm512_setzero_si512();
    for (int j = 0; j < 4; ++j) {  // sub-blocks 2j (low nibbles) and 2j + 1 (high ones)
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb[b].qs + 32 * j));
      const __m512i wv = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_and_si256(q, low4)),
                                            _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
      const __m512i sc = two_scales16(scale[2 * j], scale[2 * j + 1]);
      for (int r = 0; r < NX; ++r) {
        const __m512i xv = _mm512_loadu_si512(blocks_of<BlockQ8_K>(x + r * stride)[b].qs + 64 * j);
        sums[r] = _mm512_add_epi32(sums[r], _mm512_madd_epi16(_mm512_maddubs_epi16(wv, xv), sc));
      }
    }
    const float d = half(wb[b].d), dmin = half(wb[b].dmin);
    for (int r = 0; r < NX; ++r) {
      const BlockQ8_K& xb = blocks_of<BlockQ8_K>(x + r * stride)[b];
      int summ = 0;
      for (int j = 0; j < 8; ++j) summ += int(min[j]) * (xb.bsums[2 * j] + xb.bsums[2 * j + 1]);
      acc[r] = add_scaled(acc[r], sums[r], d * xb.d);
      mins[r] += double(summ) * double(dmin * xb.d);
    }
  }
  for (int r = 0; r < NX; ++r) out[r] = float(_mm512_reduce_add_pd(acc[r]) - mins[r]);
}

// 32 int16 scales for 64 products of Q6_K: 8 lanes each of a, b (the first 32 products), c, d.
inline __m512i four_scales16(int8_t a, int8_t b, int8_t c, int8_t d) {
  const __m256i lo =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(a)), _mm_set1_epi16(b), 1);
  const __m256i hi =
      _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(c)), _mm_set1_epi16(d), 1);
  return _mm512_inserti64x4(_mm512_zextsi256_si512(lo), hi, 1);
}

template <int NX>
void q6_k_rows(int64_t blocks, const uint8_t* w, const uint8_t* x, int64_t stride, float* out) {
  __m512d acc[NX];
  for (int r = 0; r < NX; ++r) acc[r] = _mm512_setzero_pd();
  const BlockQ6_K* wb = blocks_of<BlockQ6_K>(w);
  const __m512i low4 = _mm512_set1_epi8(0x0F), bits45 = _mm512_set1_epi8(0x30);
  // the high bits' shifts for quarters (1 | 2) and (3 | 4) of each 128 values
  const __m512i shift12 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(2), 1);
  const __m512i shift34 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
  for (int64_t b = 0; b < blocks; ++b) {
    const BlockQ6_K& blk = wb[b];
    __m512i sums[NX];
    for (int r = 0; r < NX; ++r) sums[r] = _mm512_setzero_si512();
    for (int n = 0; n < 2; ++n) {
      const __m512i ql = _mm512_loadu_si512(blk.ql + 64 * n);
      const __m256i qh256 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * n));
      const __m512i qh = _mm512_inserti64x4(_mm512_zextsi256_si512(qh256), qh256, 1);
      // values 0..63 (the -32 through the sums of x below): quarters 1 | 2, then 3 | 4
      const __m512i q12 = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                          _mm512_and_si512(_mm512_sllv_epi16(qh, shift12), bits45));
      const __m512i q34 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                          _mm512_and_si512(_mm512_srlv_epi16(qh, shift34), bits45));
      const int8_t* sc = blk.scales + 8 * n;
      const __m512i sc12 = four_scales16(sc[0], sc[1], sc[2], sc[3]);
      const __m512i sc34 = four_scales16(sc[4], sc[5], sc[6], sc[7]);
      for (int r = 0; r < NX; ++r) {
        const int8_t* q8 = blocks_of<BlockQ8_K>(x + r * stride)[b].qs + 128 * n;
        const __m512i x12 = _mm512_loadu_si512(q8), x34 = _mm512_loadu_si512(q8 + 64);
        sums[r] = _mm512_add_epi32(
            sums[r], _mm512_add_epi32(_mm512_madd_epi16(_mm512_maddubs_epi16(q12, x12), sc12),
                                      _mm512_madd_epi16(_mm512_maddubs_epi16(q34, x34), sc34)));
      }
    }
    const float d = half(blk.d);
    for (int r = 0; r < NX; ++r) {
      const BlockQ8_K& xb = blocks_of<BlockQ8_K>(x + r * stride)[b];
      int offset = 0;  // sum over the 16 groups of scale * (sum of the group's x), times 32
      for (int g = 0; g < 16; ++g) offset += int(blk.scales[g]) * xb.bsums[g];
      const __m512i exact =
          _mm512_mask_sub_epi32(sums[r], 1, sums[r], _mm512_set1_epi32(32 * offset));
      acc[r] = add_scaled(acc[r], exact, d * xb.d);
    }
  }
  for (int r = 0; r < NX; ++r) out[r] = float(_mm512_reduce_add_pd(acc[r]));
}

template <int NX>
void rows_of(WeightDtype dtype, int64_t cols, const uint8_t* w, const uint8_t* x, int64_t stride,
             float* out) {
  switch (dtype) {
    case WeightDtype::q8_0:
      return q8_0_rows<NX>(cols / 32, w, x, stride, out);
    case WeightDtype::q4_0:
      return q4_0_rows<NX>(cols / 32, w, x, stride, out);
    case WeightDtype::q4_k:
      return q4_k_rows<NX>(cols / 256, w, x, stride, out);
    case WeightDtype::q6_k:
      return q6_k_rows<NX>(cols / 256, w, x, stride, out);
    default:
      return;  // quant_dot (ops/quant_dot.cpp) sends block formats only
  }
}

}  // namespace

void quant_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, const uint8_t* x,
               int64_t x_stride, int nx, float* out) {
  switch (nx) {
    case 1:
      return rows_of<1>(dtype, cols, w, x, x_stride, out);
    case 2:
      return rows_of<2>(dtype, cols, w, x, x_stride, out);
    case 3:
      return rows_of<3>(dtype, cols, w, x, x_stride, out);
    case 4:
      return rows_of<4>(dtype, cols, w, x, x_stride, out);
    case 5:
      return rows_of<5>(dtype, cols, w, x, x_stride, out);
    case 6:
      return rows_of<6>(dtype, cols, w, x, x_stride, out);
    case 7:
      return rows_of<7>(dtype, cols, w, x, x_stride, out);
    default:
      return rows_of<8>(dtype, cols, w, x, x_stride, out);
  }
}

}  // namespace gattn::avx512
