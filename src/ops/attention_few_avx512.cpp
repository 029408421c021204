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

// acc[u] += sum_i p[u][rows[i]] v[rows[i]] for every vector (four value rows, `count` real), in
// blocks of U vectors of one kv head, each value chunk loaded once per block.
template <int U, typename KV>
void values_quad(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv, const KV* v,
                 int64_t ld_v, const int rows[4], int count) {
  const int d = qv.d;
  for (int u0 = 0; u0 < qv.count; u0 += U) {
    const int offset = qv.kv_offset[u0];
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
    for (int c = 0; c < d; c += kLanes) {
      const __m512 x0 = load16(v0 + c), x1 = load16(v1 + c), x2 = load16(v2 + c),
                   x3 = load16(v3 + c);
      for (int u = 0; u < U; ++u) {
        float* a = acc + int64_t(u0 + u) * d + c;
        __m512 sum = _mm512_mul_ps(p0[u], x0);
        sum = _mm512_fmadd_ps(p1[u], x1, sum);
        sum = _mm512_fmadd_ps(p2[u], x2, sum);
        sum = _mm512_fmadd_ps(p3[u], x3, sum);
        _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), sum));
      }
    }
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
  using Quad = void (*)(float*, const float*, int64_t, const FewQueryVectors&, const KV*, int64_t,
                        const int*, int);
  static constexpr Quad kQuads[kMostVectors] = {values_quad<1, KV>, values_quad<2, KV>,
                                                values_quad<3, KV>, values_quad<4, KV>,
                                                values_quad<5, KV>, values_quad<6, KV>};
  const Quad quad = kQuads[block_size(qv.group) - 1];
  in_four_streams(
      n, [&](const int rows[4], int count) { quad(acc, p, ld, qv, v, ld_v, rows, count); });
}
}  // namespace

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
