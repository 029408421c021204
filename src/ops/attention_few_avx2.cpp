// The AVX2 scores and values passes of the few-query attention (ops/attention_few_avx2.h). The
// portable loops load each key and value row once per query vector and call dot4 (ops/dot.cpp) for
// every four keys; here the two vectors of a kv head (GQA) share each row's loads, and the scores'
// products are made in line. Rows are visited as the portable path visits them (four far-apart
// streams, every vector of a row while it is hot: a sweep per vector over a chunk's rows, each
// taking one head's slice of every row, was slower), and every addition is made in its order.
#include "ops/attention_few_avx2.h"

#ifdef GATTN_DOT_AVX2
#include "ops/four_streams.h"

namespace gattn::avx2 {

namespace {
// Two accumulators per (vector, row) over the two halves of each 16 values, as dot4 makes them:
// acc_a += x[c..c+8) row[c..c+8), acc_b += x[c+8..c+16) row[c+8..c+16), c = 0, 16, ...
struct HalfSums {
  __m256 a = _mm256_setzero_ps(), b = _mm256_setzero_ps();
  __m256 sum() const { return _mm256_add_ps(a, b); }
};

// The scores of four (vector, row) pairs from their sums: dot4's reduction, its empty tail
// (+ 0) and the scale, in that order; stored at out[i] for i < 4.
inline void store_scores(const HalfSums s[4], float scale, float* const out[4]) {
  alignas(16) float dots[4];
  const __m128 sums = horizontal_sums(s[0].sum(), s[1].sum(), s[2].sum(), s[3].sum());
  _mm_store_ps(dots, _mm_mul_ps(_mm_set1_ps(scale), _mm_add_ps(sums, _mm_setzero_ps())));
  for (int i = 0; i < 4; ++i) *out[i] = dots[i];
}

// One vector against four rows (its kv head's slice of each): dot4's products in line.
template <typename KV>
[[gnu::always_inline]] inline void scores_one_vector(float* out, int64_t ld,
                                                     const FewQueryVectors& qv, int u, const KV* k,
                                                     int64_t ld_k, const int js[4], float scale) {
  const float* q = qv.queries[u];
  const KV* rows[4];
  for (int i = 0; i < 4; ++i) rows[i] = k + js[i] * ld_k + qv.kv_offset[u];
  HalfSums s[4];
  for (int c = 0; c < qv.d; c += 16) {
    const __m256 x0 = _mm256_loadu_ps(q + c), x1 = _mm256_loadu_ps(q + c + 8);
    for (int i = 0; i < 4; ++i) {
      s[i].a = _mm256_fmadd_ps(x0, load8(rows[i] + c), s[i].a);
      s[i].b = _mm256_fmadd_ps(x1, load8(rows[i] + c + 8), s[i].b);
    }
  }
  float* const at[4] = {out + u * ld + js[0], out + u * ld + js[1], out + u * ld + js[2],
                        out + u * ld + js[3]};
  store_scores(s, scale, at);
}

// Vectors u and u + 1 (one kv head) against rows r0 and r1: each row's values loaded once.
template <typename KV>
[[gnu::always_inline]] inline void scores_pair(float* out, int64_t ld, const FewQueryVectors& qv,
                                               int u, const KV* k, int64_t ld_k, int r0, int r1,
                                               float scale) {
  const float *q0 = qv.queries[u], *q1 = qv.queries[u + 1];
  const KV *k0 = k + r0 * ld_k + qv.kv_offset[u], *k1 = k + r1 * ld_k + qv.kv_offset[u];
  HalfSums s[4];  // (u, r0), (u, r1), (u + 1, r0), (u + 1, r1)
  for (int c = 0; c < qv.d; c += 16) {
    const __m256 x0 = _mm256_loadu_ps(q0 + c), x1 = _mm256_loadu_ps(q0 + c + 8);
    const __m256 y0 = _mm256_loadu_ps(q1 + c), y1 = _mm256_loadu_ps(q1 + c + 8);
    const __m256 a0 = load8(k0 + c), b0 = load8(k0 + c + 8);
    s[0].a = _mm256_fmadd_ps(x0, a0, s[0].a);
    s[0].b = _mm256_fmadd_ps(x1, b0, s[0].b);
    s[2].a = _mm256_fmadd_ps(y0, a0, s[2].a);
    s[2].b = _mm256_fmadd_ps(y1, b0, s[2].b);
    const __m256 a1 = load8(k1 + c), b1 = load8(k1 + c + 8);
    s[1].a = _mm256_fmadd_ps(x0, a1, s[1].a);
    s[1].b = _mm256_fmadd_ps(x1, b1, s[1].b);
    s[3].a = _mm256_fmadd_ps(y0, a1, s[3].a);
    s[3].b = _mm256_fmadd_ps(y1, b1, s[3].b);
  }
  float* const at[4] = {out + u * ld + r0, out + u * ld + r1, out + (u + 1) * ld + r0,
                        out + (u + 1) * ld + r1};
  store_scores(s, scale, at);
}

template <typename KV>
void scores(float* out, int64_t ld, const FewQueryVectors& qv, const KV* k, int64_t ld_k, int n,
            float scale) {
  const bool pairs = qv.group % 2 == 0;  // two vectors share each key row
  in_four_streams(
      n,
      [&](const int js[4]) {
        if (pairs) {
          for (int u = 0; u < qv.count; u += 2) {
            scores_pair(out, ld, qv, u, k, ld_k, js[0], js[1], scale);
            scores_pair(out, ld, qv, u, k, ld_k, js[2], js[3], scale);
          }
        } else {
          for (int u = 0; u < qv.count; ++u) scores_one_vector(out, ld, qv, u, k, ld_k, js, scale);
        }
      },
      [&](int j) {  // the portable path's dot for a row left over
        for (int u = 0; u < qv.count; ++u)
          out[u * ld + j] = scale * dot(qv.queries[u], k + j * ld_k + qv.kv_offset[u], qv.d);
      });
}

// acc[u] += the four rows' weighted sum for U vectors of one kv head at a time, each value chunk
// loaded once for the U. The portable loop's operations in its order: GCC compiles its
// p0 v0 + p1 v1 + p2 v2 + p3 v3 as p1 v1, then p0 v0, p2 v2 and p3 v3 fused in (seen in its code,
// and bench/bits_check.sh's decode logits equal the portable path's).
template <int U, typename KV>
void values_four(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv, const KV* v,
                 int64_t ld_v, const int js[4]) {
  const int d = qv.d;
  for (int u0 = 0; u0 < qv.count; u0 += U) {
    const KV* base = v + qv.kv_offset[u0];
    const KV *v0 = base + js[0] * ld_v, *v1 = base + js[1] * ld_v, *v2 = base + js[2] * ld_v,
             *v3 = base + js[3] * ld_v;
    __m256 p0[U], p1[U], p2[U], p3[U];
    for (int u = 0; u < U; ++u) {
      const float* pu = p + (u0 + u) * ld;
      p0[u] = _mm256_set1_ps(pu[js[0]]);
      p1[u] = _mm256_set1_ps(pu[js[1]]);
      p2[u] = _mm256_set1_ps(pu[js[2]]);
      p3[u] = _mm256_set1_ps(pu[js[3]]);
    }
    for (int c = 0; c < d; c += 8) {
      const __m256 x0 = load8(v0 + c), x1 = load8(v1 + c), x2 = load8(v2 + c), x3 = load8(v3 + c);
      for (int u = 0; u < U; ++u) {
        float* a = acc + int64_t(u0 + u) * d + c;
        __m256 sum = _mm256_mul_ps(p1[u], x1);
        sum = _mm256_fmadd_ps(p0[u], x0, sum);
        sum = _mm256_fmadd_ps(p2[u], x2, sum);
        sum = _mm256_fmadd_ps(p3[u], x3, sum);
        _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), sum));
      }
    }
  }
}

// The same for one row left over: one fused add.
template <typename KV>
void values_one(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv, const KV* v,
                int64_t ld_v, int j) {
  const int d = qv.d;
  for (int u = 0; u < qv.count; ++u) {
    const KV* vj = v + j * ld_v + qv.kv_offset[u];
    const __m256 pj = _mm256_set1_ps(p[u * ld + j]);
    float* a = acc + int64_t(u) * d;
    for (int c = 0; c < d; c += 8)
      _mm256_storeu_ps(a + c, _mm256_fmadd_ps(pj, load8(vj + c), _mm256_loadu_ps(a + c)));
  }
}

template <typename KV>
void values(float* acc, const float* p, int64_t ld, const FewQueryVectors& qv, const KV* v,
            int64_t ld_v, int n) {
  const bool pairs = qv.group % 2 == 0;  // two vectors share each value chunk
  in_four_streams(
      n,
      [&](const int js[4]) {
        if (pairs)
          values_four<2>(acc, p, ld, qv, v, ld_v, js);
        else
          values_four<1>(acc, p, ld, qv, v, ld_v, js);
      },
      [&](int j) { values_one(acc, p, ld, qv, v, ld_v, j); });
}

// fast_exp (ops/fast_exp.h) on eight lanes: the same operations in the same order, so the same
// bits (its comparisons written as masks with the same outcome for NaN).
__m256 fast_exp8(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.33f), highest = _mm256_set1_ps(88.72f);
  const __m256 at_least = _mm256_blendv_ps(lowest, x, _mm256_cmp_ps(x, lowest, _CMP_GT_OQ));
  const __m256 clamped =
      _mm256_blendv_ps(highest, at_least, _mm256_cmp_ps(at_least, highest, _CMP_LT_OQ));
  const __m256 shifter = _mm256_set1_ps(0x1.8p23f);
  const __m256 k = _mm256_sub_ps(
      _mm256_fmadd_ps(clamped, _mm256_set1_ps(1.44269504088896341f), shifter), shifter);
  const __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(-2.12194440e-4f),
                                    _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693359375f), clamped));
  __m256 q = _mm256_set1_ps(1.9875691500e-4f);
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.3981999507e-3f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(8.3334519073e-3f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(4.1665795894e-2f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(1.6666665459e-1f));
  q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 e_r =
      _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(q, r), r, r), _mm256_set1_ps(1.0f));
  const __m256i ki = _mm256_cvttps_epi32(k);
  // ki / 2 rounded toward zero, as C++ divides: add the sign bit, then shift
  const __m256i half = _mm256_srai_epi32(_mm256_add_epi32(ki, _mm256_srli_epi32(ki, 31)), 1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 scale_a = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
  const __m256 scale_b = _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(ki, half), bias), 23));
  const __m256 y = _mm256_mul_ps(_mm256_mul_ps(e_r, scale_a), scale_b);
  const __m256 below_inf =
      _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), _mm256_cmp_ps(x, highest, _CMP_GT_OQ));
  const __m256 in_range =
      _mm256_blendv_ps(below_inf, _mm256_setzero_ps(), _mm256_cmp_ps(x, lowest, _CMP_LT_OQ));
  return _mm256_blendv_ps(in_range, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}
}  // namespace

float few_query_exp_shifted(float* p, int n, float* max) {
  // The largest score: each lane keeps its running max as the scalar loop does (m < p ? p : m),
  // the lanes then taken in order the same way; the same value as the scalar loop's.
  __m256 lanes = _mm256_set1_ps(p[0]);
  int j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 x = _mm256_loadu_ps(p + j);
    lanes = _mm256_blendv_ps(lanes, x, _mm256_cmp_ps(lanes, x, _CMP_LT_OQ));
  }
  alignas(32) float lane[8];
  _mm256_store_ps(lane, lanes);
  float m = lane[0];
  for (int l = 1; l < 8; ++l) m = m < lane[l] ? lane[l] : m;
  for (; j < n; ++j) m = m < p[j] ? p[j] : m;
  // exp(p - m) in place, the sum in the scalar loop's eight lanes (lane l: j = l mod 8 of the
  // first n - n % 8, the rest added to lane 0), then the lanes in order.
  const __m256 shift = _mm256_set1_ps(m);
  __m256 sum8 = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) {
    const __m256 e = fast_exp8(_mm256_sub_ps(_mm256_loadu_ps(p + j), shift));
    _mm256_storeu_ps(p + j, e);
    sum8 = _mm256_add_ps(sum8, e);
  }
  _mm256_store_ps(lane, sum8);
  if (j < n) {
    alignas(32) float tail[8] = {};
    for (int t = 0; j + t < n; ++t) tail[t] = p[j + t];
    _mm256_store_ps(tail, fast_exp8(_mm256_sub_ps(_mm256_load_ps(tail), shift)));
    for (int t = 0; j < n; ++j, ++t) lane[0] += p[j] = tail[t];
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

}  // namespace gattn::avx2
#endif
