// The AVX2 values pass of the few-query attention (ops/attention_few_avx2.h). The portable loop
// loads each value row once per query vector; here the two vectors of a kv head (GQA) share each
// value row's loads. Rows are visited as the portable path visits them (four far-apart streams,
// every vector of a row while it is hot: a sweep per vector over a chunk's rows, each taking one
// head's slice of every row, was slower), and every addition is made in its order.
#include "ops/attention_few_avx2.h"

#ifdef GATTN_DOT_AVX2
#include "ops/four_streams.h"

namespace gattn::avx2 {

namespace {
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
