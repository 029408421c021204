// The few-query attention's passes over a KV cache (ops/attention_decode.cpp) on AVX-512, fp32 or
// bf16 keys and values (avx512_kernels.h). Compiled with AVX-512 flags (CMake's gattn_avx512):
// nothing here may be shared with baseline files (no inline functions of other headers).
//
// Rows are visited as four far-apart streams (j, j + n/4, j + n/2, j + 3n/4), then the leftover
// ones. Vectors u of one kv head (runs of `group` consecutive u) are taken up to kMostVectors at a
// time, so each key or value chunk is loaded (and widened) once for all of them. A vector's sums
// do not depend on how many vectors run beside it.

// GCC 12 warns inside its own AVX-512 headers (their _mm512_undefined_* values, GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "ops/avx512_kernels.h"

namespace gattn::avx512 {

namespace {
constexpr int kLanes = 16;
constexpr int kMostVectors = 6;  // 4 x 6 score accumulators + 4 keys + 1 query in 32 registers

__m512 load16(const float* p) { return _mm512_loadu_ps(p); }
__m512 load16(const uint16_t* p) {  // bf16 widened exactly: the bits shifted up
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

// {sum a, sum b, sum c, sum d} of four vectors' lanes, added in one fixed tree.
__m128 sum4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
  const __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
  const __m512 abcd = _mm512_add_ps(_mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_ps(ab, cd, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m256 half =
      _mm256_add_ps(_mm512_castps512_ps256(abcd),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(abcd), 1)));
  return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
}

// Visits rows 0 .. n - 1 as four far-apart streams, then the leftover rows one at a time
// (rows[1..3] then repeat rows[0], whose results are not kept: `count` says how many are real).
template <typename Visit>
void in_four_streams(int n, Visit&& visit) {
  const int part = n / 4;
  for (int j = 0; j < part; ++j) {
    const int rows[4] = {j, j + part, j + 2 * part, j + 3 * part};
    visit(rows, 4);
  }
  for (int j = 4 * part; j < n; ++j) {
    const int rows[4] = {j, j, j, j};
    visit(rows, 1);
  }
}

// A quad's scores for every vector, in blocks of U vectors of one kv head (U divides the run
// length qv.group): the blocks' accumulators are independent, so consecutive blocks and quads
// overlap in the core instead of waiting on one chain of FMAs.
template <int U, typename KV>
void scores_quad(float* out, int64_t ld, const FewQueryVectors& qv, const KV* k, int64_t ld_k,
                 float scale, const int rows[4], int count) {
  const int d = qv.d;
  for (int u0 = 0; u0 < qv.count; u0 += U) {
    const int offset = qv.kv_offset[u0];
    const KV* k0 = k + rows[0] * ld_k + offset;
    const KV* k1 = k + rows[1] * ld_k + offset;
    const KV* k2 = k + rows[2] * ld_k + offset;
    const KV* k3 = k + rows[3] * ld_k + offset;
    __m512 acc[U][4];
    for (int u = 0; u < U; ++u)
      for (int i = 0; i < 4; ++i) acc[u][i] = _mm512_setzero_ps();
    for (int c = 0; c < d; c += kLanes) {
      const __m512 x0 = load16(k0 + c), x1 = load16(k1 + c), x2 = load16(k2 + c),
                   x3 = load16(k3 + c);
      for (int u = 0; u < U; ++u) {
        const __m512 x = _mm512_loadu_ps(qv.queries[u0 + u] + c);
        acc[u][0] = _mm512_fmadd_ps(x, x0, acc[u][0]);
        acc[u][1] = _mm512_fmadd_ps(x, x1, acc[u][1]);
        acc[u][2] = _mm512_fmadd_ps(x, x2, acc[u][2]);
        acc[u][3] = _mm512_fmadd_ps(x, x3, acc[u][3]);
      }
    }
    for (int u = 0; u < U; ++u) {
      alignas(16) float s[4];
      _mm_store_ps(
          s, _mm_mul_ps(sum4(acc[u][0], acc[u][1], acc[u][2], acc[u][3]), _mm_set1_ps(scale)));
      float* o = out + (u0 + u) * ld;
      for (int i = 0; i < count; ++i) o[rows[i]] = s[i];
    }
  }
}

// acc[u][c0 .. c0 + 16 G) += sum_j p[u][j] v[j] for the U vectors from u0 (one kv head) over rows
// j < n, taken four at a time as in_four_streams visits them; the U x G accumulators stay in
// registers over every row. Each value's arithmetic and order are those of adding a quad's four
// products (p0 x0, then + p1 x1, + p2 x2, + p3 x3) to the accumulator quad by quad.
template <int U, int G, typename KV>
void values_block(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv, const KV* v,
                  int64_t ld_v, int n, int u0, int c0) {
  const int d = qv.d, offset = qv.kv_offset[u0] + c0;
  __m512 a[U][G];
  for (int u = 0; u < U; ++u)
    for (int g = 0; g < G; ++g)
      a[u][g] = _mm512_loadu_ps(acc + int64_t(u0 + u) * d + c0 + g * kLanes);
  in_four_streams(n, [&](const int rows[4], int count) {
    const KV* v0 = v + rows[0] * ld_v + offset;
    const KV* v1 = v + rows[1] * ld_v + offset;
    const KV* v2 = v + rows[2] * ld_v + offset;
    const KV* v3 = v + rows[3] * ld_v + offset;
    __m512 p0[U], p1[U], p2[U], p3[U];
    for (int u = 0; u < U; ++u) {
      const float* pu = p + (u0 + u) * ld;
      p0[u] = _mm512_set1_ps(pu[rows[0]]);
      p1[u] = _mm512_set1_ps(count == 4 ? pu[rows[1]] : 0.0f);
      p2[u] = _mm512_set1_ps(count == 4 ? pu[rows[2]] : 0.0f);
      p3[u] = _mm512_set1_ps(count == 4 ? pu[rows[3]] : 0.0f);
    }
    for (int g = 0; g < G; ++g) {
      const int c = g * kLanes;
      const __m512 x0 = load16(v0 + c), x1 = load16(v1 + c), x2 = load16(v2 + c),
                   x3 = load16(v3 + c);
      for (int u = 0; u < U; ++u) {
        __m512 sum = _mm512_mul_ps(p0[u], x0);
        sum = _mm512_fmadd_ps(p1[u], x1, sum);
        sum = _mm512_fmadd_ps(p2[u], x2, sum);
        sum = _mm512_fmadd_ps(p3[u], x3, sum);
        a[u][g] = _mm512_add_ps(a[u][g], sum);
      }
    }
  });
  for (int u = 0; u < U; ++u)
    for (int g = 0; g < G; ++g)
      _mm512_storeu_ps(acc + int64_t(u0 + u) * d + c0 + g * kLanes, a[u][g]);
}

// Blocks of U vectors, the head's values in groups of G chunks of 16 (U x G accumulators at most
// 8), then single chunks for what is left.
template <int U, typename KV>
void values_of_vectors(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                       const KV* v, int64_t ld_v, int n) {
  constexpr int G = U <= 2 ? 4 : U <= 4 ? 2 : 1;
  for (int u0 = 0; u0 < qv.count; u0 += U) {
    int c0 = 0;
    for (; c0 + G * kLanes <= qv.d; c0 += G * kLanes)
      values_block<U, G>(acc, p, ld, qv, v, ld_v, n, u0, c0);
    for (; c0 < qv.d; c0 += kLanes) values_block<U, 1>(acc, p, ld, qv, v, ld_v, n, u0, c0);
  }
}

// The largest block of vectors of one kv head the kernels take: a divisor of the run length.
int block_size(int group) {
  for (int u = kMostVectors; u > 1; --u)
    if (group % u == 0) return u;
  return 1;
}

template <typename KV>
void scores(float* out, int64_t ld, const FewQueryVectors& qv, const KV* k, int64_t ld_k, int n,
            float scale) {
  using Quad =
      void (*)(float*, int64_t, const FewQueryVectors&, const KV*, int64_t, float, const int*, int);
  static constexpr Quad kQuads[kMostVectors] = {scores_quad<1, KV>, scores_quad<2, KV>,
                                                scores_quad<3, KV>, scores_quad<4, KV>,
                                                scores_quad<5, KV>, scores_quad<6, KV>};
  const Quad quad = kQuads[block_size(qv.group) - 1];
  in_four_streams(
      n, [&](const int rows[4], int count) { quad(out, ld, qv, k, ld_k, scale, rows, count); });
}

template <typename KV>
void values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv, const KV* v,
            int64_t ld_v, int n) {
  using Vectors =
      void (*)(float*, const float*, int64_t, const FewQueryVectors&, const KV*, int64_t, int);
  static constexpr Vectors kVectors[kMostVectors] = {
      values_of_vectors<1, KV>, values_of_vectors<2, KV>, values_of_vectors<3, KV>,
      values_of_vectors<4, KV>, values_of_vectors<5, KV>, values_of_vectors<6, KV>};
  kVectors[block_size(qv.group) - 1](acc, p, ld, qv, v, ld_v, n);
}

// fast_exp (ops/fast_exp.h) on sixteen lanes: the same operations in the same order, so the same
// bits (its comparisons written as masks with the same outcome for NaN).
__m512 fast_exp16(__m512 x) {
  const __m512 lowest = _mm512_set1_ps(-87.33f), highest = _mm512_set1_ps(88.72f);
  const __m512 at_least =
      _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lowest, _CMP_GT_OQ), lowest, x);
  const __m512 clamped =
      _mm512_mask_blend_ps(_mm512_cmp_ps_mask(at_least, highest, _CMP_LT_OQ), highest, at_least);
  const __m512 shifter = _mm512_set1_ps(0x1.8p23f);
  const __m512 k = _mm512_sub_ps(
      _mm512_fmadd_ps(clamped, _mm512_set1_ps(1.44269504088896341f), shifter), shifter);
  const __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(-2.12194440e-4f),
                                    _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693359375f), clamped));
  __m512 q = _mm512_set1_ps(1.9875691500e-4f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.3981999507e-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(8.3334519073e-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.1665795894e-2f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.6666665459e-1f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(5.0000001201e-1f));
  const __m512 e_r =
      _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(q, r), r, r), _mm512_set1_ps(1.0f));
  const __m512i ki = _mm512_cvttps_epi32(k);
  // ki / 2 rounded toward zero, as C++ divides: add the sign bit, then shift
  const __m512i half = _mm512_srai_epi32(_mm512_add_epi32(ki, _mm512_srli_epi32(ki, 31)), 1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 scale_a = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(half, bias), 23));
  const __m512 scale_b = _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(ki, half), bias), 23));
  const __m512 y = _mm512_mul_ps(_mm512_mul_ps(e_r, scale_a), scale_b);
  const __m512 below_inf = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, highest, _CMP_GT_OQ), y,
                                                _mm512_set1_ps(__builtin_inff()));
  const __m512 in_range = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, lowest, _CMP_LT_OQ), below_inf,
                                               _mm512_setzero_ps());
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), in_range, x);
}
}  // namespace

float few_query_exp_shifted(float* p, int n, float* max) {
  // The largest score: each lane keeps its running max as the scalar loop does (m < p ? p : m),
  // the lanes then taken in order the same way; the same value as the scalar loop's.
  __m512 lanes = _mm512_set1_ps(p[0]);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m512 x = _mm512_loadu_ps(p + j);
    lanes = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(lanes, x, _CMP_LT_OQ), lanes, x);
  }
  alignas(64) float lane_max[kLanes];
  _mm512_store_ps(lane_max, lanes);
  float m = lane_max[0];
  for (int l = 1; l < kLanes; ++l) m = m < lane_max[l] ? lane_max[l] : m;
  for (; j < n; ++j) m = m < p[j] ? p[j] : m;
  // exp(p - m) in place; the sum in the scalar loop's eight lanes (lane l: j = l mod 8 of the
  // first n - n % 8, the rest added to lane 0), then the lanes in order.
  const __m512 shift = _mm512_set1_ps(m);
  __m256 sum8 = _mm256_setzero_ps();
  j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m512 e = fast_exp16(_mm512_sub_ps(_mm512_loadu_ps(p + j), shift));
    _mm512_storeu_ps(p + j, e);
    sum8 = _mm256_add_ps(sum8, _mm512_castps512_ps256(e));
    sum8 = _mm256_add_ps(sum8, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1)));
  }
  alignas(32) float lane[8];
  _mm256_store_ps(lane, sum8);
  if (j < n) {
    const __mmask16 tail = __mmask16((1u << (n - j)) - 1);
    const __m512 e = fast_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, p + j), shift));
    alignas(64) float tail_exp[kLanes];
    _mm512_store_ps(tail_exp, e);
    int t = 0;
    for (; j + 8 <= n; j += 8, t += 8)
      for (int l = 0; l < 8; ++l) lane[l] += p[j + l] = tail_exp[t + l];
    for (; j < n; ++j, ++t) lane[0] += p[j] = tail_exp[t];
  }
  float sum = 0;
  for (int l = 0; l < 8; ++l) sum += lane[l];
  *max = m;
  return sum;
}

void few_query_scores(float* out, int64_t ld, const FewQueryVectors& qv, const float* k,
                      int64_t ld_k, int n, float scale) {
  scores(out, ld, qv, k, ld_k, n, scale);
}
void few_query_scores(float* out, int64_t ld, const FewQueryVectors& qv, const uint16_t* k,
                      int64_t ld_k, int n, float scale) {
  scores(out, ld, qv, k, ld_k, n, scale);
}
void few_query_values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                      const float* v, int64_t ld_v, int n) {
  values(acc, p, ld, qv, v, ld_v, n);
}
void few_query_values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv,
                      const uint16_t* v, int64_t ld_v, int n) {
  values(acc, p, ld, qv, v, ld_v, n);
}

}  // namespace gattn::avx512
