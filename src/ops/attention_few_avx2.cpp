// AVX2 passes of the few-query attention (ops/attention_few_avx2.h). The portable path calls dot4
// once per query vector and four rows (a call, four horizontal sums) and loads each value row
// once per query vector; here the four rows' sums are reduced together and the two vectors of a
// kv head (GQA) share each value row's loads. Rows are visited as the portable path visits them
// (four far-apart streams, every vector of a row while it is hot: a sweep per vector over a
// chunk's rows, each taking one head's slice of every row, was slower), and every addition is
// made in its order.
#include "ops/attention_few_avx2.h"

#ifdef GATTN_DOT_AVX2
#include "ops/four_streams.h"

namespace gattn::avx2 {

namespace {
// {hsum(s0), hsum(s1), hsum(s2), hsum(s3)} where hsum(s) is horizontal_sum(a, b, 0, 0) of
// ops/dot.h for s = a + b: (s + 0), its halves added, then two pairwise adds; four at once.
__m128 sums_of_four(__m256 s0, __m256 s1, __m256 s2, __m256 s3) {
  const __m256 zero = _mm256_setzero_ps();
  s0 = _mm256_add_ps(s0, zero);  // as horizontal_sum's (a + b) + (0 + 0): -0 becomes +0
  s1 = _mm256_add_ps(s1, zero);
  s2 = _mm256_add_ps(s2, zero);
  s3 = _mm256_add_ps(s3, zero);
  const __m256 t01 = _mm256_add_ps(_mm256_permute2f128_ps(s0, s1, 0x20),
                                   _mm256_permute2f128_ps(s0, s1, 0x31));  // [halves 0 | 1]
  const __m256 t23 =
      _mm256_add_ps(_mm256_permute2f128_ps(s2, s3, 0x20), _mm256_permute2f128_ps(s2, s3, 0x31));
  const __m256 h = _mm256_hadd_ps(t01, t23);
  const __m256 h2 = _mm256_hadd_ps(h, h);  // [0, 2, 0, 2 | 1, 3, 1, 3]
  return _mm_unpacklo_ps(_mm256_castps256_ps128(h2), _mm256_extractf128_ps(h2, 1));
}

// Query x against four key rows: dot4's two accumulators a row, 16 values at a time.
template <typename KV>
__m128 four_dots(const float* x, const KV* const k[4], int d) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
  for (int c = 0; c < d; c += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + c), x1 = _mm256_loadu_ps(x + c + 8);
    a0 = _mm256_fmadd_ps(x0, load8(k[0] + c), a0);
    b0 = _mm256_fmadd_ps(x1, load8(k[0] + c + 8), b0);
    a1 = _mm256_fmadd_ps(x0, load8(k[1] + c), a1);
    b1 = _mm256_fmadd_ps(x1, load8(k[1] + c + 8), b1);
    a2 = _mm256_fmadd_ps(x0, load8(k[2] + c), a2);
    b2 = _mm256_fmadd_ps(x1, load8(k[2] + c + 8), b2);
    a3 = _mm256_fmadd_ps(x0, load8(k[3] + c), a3);
    b3 = _mm256_fmadd_ps(x1, load8(k[3] + c + 8), b3);
  }
  return sums_of_four(_mm256_add_ps(a0, b0), _mm256_add_ps(a1, b1), _mm256_add_ps(a2, b2),
                      _mm256_add_ps(a3, b3));
}

template <typename KV>
void scores(float* out, int64_t ld, const FewQueryVectors& qv, const KV* k, int64_t ld_k, int n,
            float scale) {
  const __m128 scales = _mm_set1_ps(scale);
  in_four_streams(
      n,
      [&](const int js[4]) {
        for (int u = 0; u < qv.count; ++u) {
          const KV* ku = k + qv.kv_offset[u];
          const KV* const rows[4] = {ku + js[0] * ld_k, ku + js[1] * ld_k, ku + js[2] * ld_k,
                                     ku + js[3] * ld_k};
          alignas(16) float s[4];
          _mm_store_ps(s, _mm_mul_ps(scales, four_dots(qv.queries[u], rows, qv.d)));
          float* o = out + u * ld;
          for (int i = 0; i < 4; ++i) o[js[i]] = s[i];
        }
      },
      [&](int j) {
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

}  // namespace gattn::avx2
#endif
