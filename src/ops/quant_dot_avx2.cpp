// AVX2 dot products of block-quantized weight rows with up to eight activation rows: each weight
// block is loaded and unpacked once, then multiplied into every activation row (int8 products
// summed pairwise in 16 bits by vpmaddubsw, in 32 bits by vpmaddwd, exact), each block's integer
// sums times its scale added into four double lanes per row (exact products: ops/quant_dot.h),
// the lanes added at the end.
#include "ops/quant_dot_kernels.h"

#ifdef GATTN_QUANT_DOT_AVX2
#include <immintrin.h>

#include "ops/ggml_blocks.h"
#include "ops/quant_dot.h"
#include "util/error.h"

namespace gattn::quant_kernels {

namespace {

using ggml::BlockQ4_0;
using ggml::BlockQ4_K;
using ggml::BlockQ6_K;
using ggml::BlockQ8_0;

inline float half(uint16_t h) { return _cvtsh_ss(h); }

inline double lane_sum(__m256d v) {
  const __m128d x = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(x, _mm_unpackhi_pd(x, x)));
}

// acc + (the eight int32 sums p, added in pairs: exact) * scale, in double.
inline __m256d add_scaled(__m256d acc, __m256i p, double scale) {
  const __m128i four = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
  return _mm256_fmadd_pd(_mm256_cvtepi32_pd(four), _mm256_set1_pd(scale), acc);
}

// Eight int32 sums of the products of 32 signed bytes w and x (|w| <= 128, |x| <= 127).
inline __m256i signed_products(__m256i w, __m256i x) {
  const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

// Eight int32 sums of u[i] * x[i] * scale(i), u unsigned bytes (<= 63), x signed (|x| <= 127),
// scales: 16 int16, one per pair of products.
inline __m256i scaled_products(__m256i u, __m256i x, __m256i scales) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), scales);
}

template <typename Block>
const Block* blocks_of(const uint8_t* row) {
  return reinterpret_cast<const Block*>(row);
}

inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Asks for the weights a few rows ahead: one stream, read faster than the prefetcher alone reads
// it while the products run.
inline void prefetch_ahead(const void* p) {
  _mm_prefetch(static_cast<const char*>(p) + 2048, _MM_HINT_T0);
}

template <int NX>
struct Rows {
  ActivationRow row[NX];
  Rows(WeightDtype dtype, const uint8_t* x, int64_t stride, int64_t cols) {
    for (int r = 0; r < NX; ++r) row[r] = activation_row(dtype, x + r * stride, cols);
  }
};

// Q8_0: each block's signed products with x in eight int32 lanes, times d_w * d_x, in double.
template <int NX>
void q8_0_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  const BlockQ8_0* wb = blocks_of<BlockQ8_0>(w);
  __m256d acc[NX];
  for (int r = 0; r < NX; ++r) acc[r] = _mm256_setzero_pd();
  for (int64_t b = 0; b < cols / 32; ++b) {
    prefetch_ahead(wb + b);
    const __m256i wv = load32(wb[b].qs);
    const double dw = half(wb[b].d);
    for (int r = 0; r < NX; ++r)
      acc[r] = add_scaled(acc[r], signed_products(wv, load32(xs.row[r].q + 32 * b)),
                          dw * xs.row[r].d[b]);
  }
  for (int r = 0; r < NX; ++r) out[r] = float(lane_sum(acc[r]));
}

// Q4_0 four blocks at a time: each block's unsigned nibbles times x in eight int32 lanes, the
// four blocks' lanes summed to one int32 each (vphaddd), less 8 x the block's sum of x (the
// activation row's block sums), times d_w * d_x for the four at once, in double.
inline __m128i nibbles_sum4(const __m256i p[4]) {
  const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
  return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}
// The 16 packed bytes in both halves (a broadcast load: no shuffle), the high half shifted by a
// nibble: values 0-15 are the low nibbles, 16-31 the high ones.
inline __m256i unsigned_nibbles(const BlockQ4_0& block) {
  const __m256i both =
      _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs)));
  return _mm256_and_si256(_mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)),
                          _mm256_set1_epi8(0x0F));
}

template <int NX>
void q4_0_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  const BlockQ4_0* wb = blocks_of<BlockQ4_0>(w);
  const int64_t blocks = cols / 32, fours = blocks / 4 * 4;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256d acc[NX];
  for (int r = 0; r < NX; ++r) acc[r] = _mm256_setzero_pd();
  for (int64_t b = 0; b < fours; b += 4) {
    prefetch_ahead(wb + b);
    prefetch_ahead(reinterpret_cast<const uint8_t*>(wb + b) + 64);
    __m256i u[4];
    for (int k = 0; k < 4; ++k) u[k] = unsigned_nibbles(wb[b + k]);
    const __m256d dw = _mm256_cvtps_pd(_mm_cvtph_ps(_mm_setr_epi16(
        short(wb[b].d), short(wb[b + 1].d), short(wb[b + 2].d), short(wb[b + 3].d), 0, 0, 0, 0)));
    for (int r = 0; r < NX; ++r) {
      const ActivationRow& x = xs.row[r];
      __m256i p[4];
      for (int k = 0; k < 4; ++k)
        p[k] = _mm256_madd_epi16(_mm256_maddubs_epi16(u[k], load32(x.q + 32 * (b + k))), ones);
      const __m128i offsets = _mm_slli_epi32(
          _mm_cvtepi16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x.sums + b))), 3);
      const __m128i sum = _mm_sub_epi32(nibbles_sum4(p), offsets);
      acc[r] = _mm256_fmadd_pd(_mm256_cvtepi32_pd(sum), _mm256_mul_pd(dw, _mm256_loadu_pd(x.d + b)),
                               acc[r]);
    }
  }
  for (int64_t b = fours; b < blocks; ++b) {
    const __m256i u = unsigned_nibbles(wb[b]);
    const double dw = half(wb[b].d);
    for (int r = 0; r < NX; ++r) {
      const ActivationRow& x = xs.row[r];
      const __m256i p =
          _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(u, load32(x.q + 32 * b)), ones),
                           _mm256_set1_epi32(x.sums[b]));  // eight lanes: 8 x the block's sum
      acc[r] = add_scaled(acc[r], p, dw * x.d[b]);
    }
  }
  for (int r = 0; r < NX; ++r) out[r] = float(lane_sum(acc[r]));
}

// Q4_K: the eight 6-bit scales and mins unpacked to int16 words in one vector (each scale then
// broadcast by a byte shuffle), the mins' term from the activation row's 32-value sums (pairs of
// its 16-value sums) in one vpmaddwd.
template <int NX>
void q4_k_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  __m256d acc[NX];  // the scaled sums minus the mins' terms: exact products, one accumulator
  for (int r = 0; r < NX; ++r) acc[r] = _mm256_setzero_pd();
  const BlockQ4_K* wb = blocks_of<BlockQ4_K>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < cols / 256; ++b) {
    prefetch_ahead(wb + b);
    prefetch_ahead(reinterpret_cast<const uint8_t*>(wb + b) + 64);
    uint32_t packed[4];
    ggml::q4_k_scale_min_words(wb[b].scales, packed);
    const __m128i bytes =
        _mm_setr_epi32(int(packed[0]), int(packed[1]), int(packed[2]), int(packed[3]));
    const __m128i words = _mm_cvtepu8_epi16(bytes),
                  mins = _mm_cvtepu8_epi16(_mm_srli_si128(bytes, 8));
    const __m256i scale_words = _mm256_broadcastsi128_si256(words);
    __m256i sums[NX];
    for (int r = 0; r < NX; ++r) sums[r] = _mm256_setzero_si256();
    for (int j = 0; j < 4; ++j) {
      const __m256i q = load32(wb[b].qs + 32 * j);
      const __m256i lo = _mm256_and_si256(q, low4);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      // int16 words 2j and 2j + 1 of `words` in every word
      const __m256i scale_lo =
          _mm256_shuffle_epi8(scale_words, _mm256_set1_epi16(short(0x0100 + 0x0202 * 2 * j)));
      const __m256i scale_hi =
          _mm256_shuffle_epi8(scale_words, _mm256_set1_epi16(short(0x0100 + 0x0202 * (2 * j + 1))));
      for (int r = 0; r < NX; ++r) {
        const int8_t* q8 = xs.row[r].q + 256 * b + 64 * j;
        sums[r] = _mm256_add_epi32(
            sums[r], _mm256_add_epi32(scaled_products(lo, load32(q8), scale_lo),
                                      scaled_products(hi, load32(q8 + 32), scale_hi)));
      }
    }
    const float d = half(wb[b].d), dmin = half(wb[b].dmin);
    for (int r = 0; r < NX; ++r) {
      const float xd = float(xs.row[r].d[b]);
      const __m256i x16 = load32(xs.row[r].sums + 16 * b);
      // the sums of each 32 values (pairs of 16-value sums, |sum| <= 4,064), times their mins
      const __m128i x32 =
          _mm_hadd_epi16(_mm256_castsi256_si128(x16), _mm256_extracti128_si256(x16, 1));
      const __m128i min_terms = _mm_madd_epi16(mins, x32);
      const __m128i four =
          _mm_add_epi32(_mm256_castsi256_si128(sums[r]), _mm256_extracti128_si256(sums[r], 1));
      acc[r] = _mm256_fmadd_pd(_mm256_cvtepi32_pd(four), _mm256_set1_pd(double(d * xd)), acc[r]);
      acc[r] = _mm256_fmadd_pd(_mm256_cvtepi32_pd(min_terms), _mm256_set1_pd(-double(dmin * xd)),
                               acc[r]);
    }
  }
  for (int r = 0; r < NX; ++r) out[r] = float(lane_sum(acc[r]));
}

// Scales 2k and 2k + 1 of `eight` (eight int16 words in both halves) in every word of the low
// half and of the high half: vpmaddwd's operand after vpmaddubsw for 32 values whose first 16
// take scale 2k, the rest 2k + 1 (one byte shuffle).
inline __m256i two_scales(__m256i eight, int k) {
  const int lo = 0x0100 + 0x0202 * (2 * k), hi = 0x0100 + 0x0202 * (2 * k + 1);
  return _mm256_shuffle_epi8(
      eight, _mm256_setr_epi16(short(lo), short(lo), short(lo), short(lo), short(lo), short(lo),
                               short(lo), short(lo), short(hi), short(hi), short(hi), short(hi),
                               short(hi), short(hi), short(hi), short(hi)));
}

template <int NX>
void q6_k_rows(int64_t cols, const uint8_t* w, const Rows<NX>& xs, float* out) {
  __m256d acc[NX];
  for (int r = 0; r < NX; ++r) acc[r] = _mm256_setzero_pd();
  const BlockQ6_K* wb = blocks_of<BlockQ6_K>(w);
  const __m256i low4 = _mm256_set1_epi8(0x0F), bits45 = _mm256_set1_epi8(0x30);
  for (int64_t b = 0; b < cols / 256; ++b) {
    const BlockQ6_K& blk = wb[b];
    for (int line = 0; line < 4; ++line)
      prefetch_ahead(reinterpret_cast<const uint8_t*>(&blk) + 64 * line);
    __m256i sums[NX];
    for (int r = 0; r < NX; ++r) sums[r] = _mm256_setzero_si256();
    for (int n = 0; n < 2; ++n) {
      const __m256i ql0 = load32(blk.ql + 64 * n), ql1 = load32(blk.ql + 64 * n + 32);
      const __m256i qh = load32(blk.qh + 32 * n);
      // the four 32-value quarters, unsigned 0..63 (the -32 is taken off through the sums below)
      const __m256i q[4] = {_mm256_or_si256(_mm256_and_si256(ql0, low4),
                                            _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits45)),
                            _mm256_or_si256(_mm256_and_si256(ql1, low4),
                                            _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits45)),
                            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                                            _mm256_and_si256(qh, bits45)),
                            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits45))};
      const __m256i eight = _mm256_broadcastsi128_si256(
          _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk.scales + 8 * n))));
      const __m256i scale[4] = {two_scales(eight, 0), two_scales(eight, 1), two_scales(eight, 2),
                                two_scales(eight, 3)};
      for (int r = 0; r < NX; ++r) {
        const int8_t* q8 = xs.row[r].q + 256 * b + 128 * n;
        for (int k = 0; k < 4; ++k)
          sums[r] = _mm256_add_epi32(sums[r], scaled_products(q[k], load32(q8 + 32 * k), scale[k]));
      }
    }
    const float d = half(blk.d);
    const __m256i scales16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    for (int r = 0; r < NX; ++r) {
      // 32 * sum over the 16 groups of scale * (sum of the group's x), in eight int32 lanes
      const __m256i bsums = load32(xs.row[r].sums + 16 * b);
      const __m256i exact =
          _mm256_sub_epi32(sums[r], _mm256_slli_epi32(_mm256_madd_epi16(scales16, bsums), 5));
      acc[r] = add_scaled(acc[r], exact, double(d * float(xs.row[r].d[b])));
    }
  }
  for (int r = 0; r < NX; ++r) out[r] = float(lane_sum(acc[r]));
}

template <int NX, void (*kernel)(int64_t, const uint8_t*, const Rows<NX>&, float*)>
void weight_rows(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_bytes, int64_t w_rows,
                 const uint8_t* x, int64_t stride, float* out, int64_t ld_out) {
  const Rows<NX> xs(dtype, x, stride, cols);
  for (int64_t n = 0; n < w_rows; ++n) {
    float sums[NX];
    kernel(cols, w + n * w_bytes, xs, sums);
    for (int r = 0; r < NX; ++r) out[r * ld_out + n] = sums[r];
  }
}

template <int NX>
void rows_of(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
             int64_t stride, float* out, int64_t ld_out) {
  const int64_t w_bytes = weight_row_bytes(dtype, cols);
  switch (dtype) {
    case WeightDtype::q8_0:
      return weight_rows<NX, q8_0_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    case WeightDtype::q4_0:
      return weight_rows<NX, q4_0_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    case WeightDtype::q4_k:
      return weight_rows<NX, q4_k_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    case WeightDtype::q6_k:
      return weight_rows<NX, q6_k_rows<NX>>(dtype, cols, w, w_bytes, w_rows, x, stride, out,
                                            ld_out);
    default:
      return;  // quant_dot (ops/quant_dot.cpp) sends block formats only
  }
}

}  // namespace

void avx2_dot(WeightDtype dtype, int64_t cols, const uint8_t* w, int64_t w_rows, const uint8_t* x,
              int64_t x_stride, int nx, float* out, int64_t ld_out) {
  switch (nx) {
    case 1:
      return rows_of<1>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 2:
      return rows_of<2>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 3:
      return rows_of<3>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 4:
      return rows_of<4>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 5:
      return rows_of<5>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 6:
      return rows_of<6>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    case 7:
      return rows_of<7>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
    default:
      return rows_of<8>(dtype, cols, w, w_rows, x, x_stride, out, ld_out);
  }
}

}  // namespace gattn::quant_kernels
#endif
