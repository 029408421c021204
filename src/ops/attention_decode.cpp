#include "ops/attention_decode.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/fast_exp.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace gattn {

namespace {
template <typename T>
T dot(const T* a, const T* b, int n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (int c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}

#if defined(__AVX2__) && defined(__FMA__)
// Four independent accumulators: one would wait on each FMA's latency.
float dot(const float* a, const float* b, int n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  int c = 0;
  for (; c + 32 <= n; c += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c), _mm256_loadu_ps(b + c), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 8), _mm256_loadu_ps(b + c + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 16), _mm256_loadu_ps(b + c + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + c + 24), _mm256_loadu_ps(b + c + 24), s3);
  }
  const __m256 v = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_hadd_ps(x, x);
  float s = _mm_cvtss_f32(_mm_hadd_ps(x, x));
  for (; c < n; ++c) s += a[c] * b[c];
  return s;
}
#endif

// Asks for the n values at p ahead of their use: a cache's rows for one range of heads are short
// runs at a 4 KiB stride, where the hardware prefetcher restarts on every row.
template <typename T>
void prefetch(const T* p, int n) {
  const char* bytes = reinterpret_cast<const char*>(p);
  for (size_t offset = 0; offset < n * sizeof(T); offset += 64) __builtin_prefetch(bytes + offset);
}

// p[j] = exp(p[j] - max) over n scores; returns their sum and sets *max.
template <typename T>
T exp_shifted(T* p, int n, T* max) {
  T m = p[0];
  for (int j = 1; j < n; ++j) m = std::max(m, p[j]);
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n; ++j) sum += p[j] = fast_exp(p[j] - m);
  *max = m;
  return sum;
}

// The query vectors of one task: every query row of one sequence for each query head of the kv
// heads [kv_begin, kv_end). Vector u = (i * kv_count + kv) * group + g is query row i of head
// (kv_begin + kv) * group + g.
constexpr int kPrefetchRows = 2;  // how far ahead the cache's rows are asked for

struct QueryVectors {
  int rows, kv_begin, kv_count, group;
  int count() const { return rows * kv_count * group; }
  int row(int u) const { return u / (kv_count * group); }
  int kv_head(int u) const { return kv_begin + u / group % kv_count; }
  int head(int u) const { return kv_head(u) * group + u % group; }
};
}  // namespace

// A cache keeps all kv heads of a position in one row, so each task walks the rows in order and
// serves a contiguous range of kv heads: memory is read as one stream, not one 4 KiB stride per
// head. Tasks: sequences x (one range of heads per thread).
template <typename T>
void attention_forward_few_queries(T* out, T* lse, const T* q, const T* k, const T* v,
                                   const AttentionShape& s) {
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const T scale = T(1) / std::sqrt(T(d));
  // Keys query row i sees: those at or before its position (at least one: its own).
  auto seen = [&](int i) { return std::min(s.kv_len, s.q_offset + i + 1); };
  const int most_seen = seen(s.q_len - 1);
#pragma omp parallel
  {
    const int ranges = std::min(omp_get_num_threads(), s.kv_heads);
    const int64_t tasks = int64_t(s.batch) * ranges;
    thread_local std::vector<T> buffer;
    const int most_vectors = s.q_len * group * ((s.kv_heads + ranges - 1) / ranges);
    const size_t need = size_t(most_vectors) * (size_t(most_seen) + d + 2);
    if (buffer.size() < need) buffer.resize(need);       // grown once per thread, then reused
    T* scores = buffer.data();                           // [vectors, most_seen]
    T* acc = scores + size_t(most_vectors) * most_seen;  // [vectors, d]
    T* row_max = acc + size_t(most_vectors) * d;         // [vectors]
    T* row_sum = row_max + most_vectors;                 // [vectors]
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int range = int(task % ranges), b = int(task / ranges);
      const int kv_begin = s.kv_heads * range / ranges;
      const QueryVectors qv{.rows = s.q_len,
                            .kv_begin = kv_begin,
                            .kv_count = s.kv_heads * (range + 1) / ranges - kv_begin,
                            .group = group};
      const int64_t q_row0 = int64_t(b) * s.q_len, kv_row0 = b * s.kv_stride;
      auto query = [&](int u) { return q + (q_row0 + qv.row(u)) * s.ld_q + qv.head(u) * d; };
      for (int j = 0; j < most_seen; ++j) {
        const T* kj = k + (kv_row0 + j) * s.ld_k;
        if (j + kPrefetchRows < most_seen)
          prefetch(kj + kPrefetchRows * s.ld_k + qv.kv_begin * d, qv.kv_count * d);
        for (int u = 0; u < qv.count(); ++u)
          if (j < seen(qv.row(u)))
            scores[size_t(u) * most_seen + j] = scale * dot(query(u), kj + qv.kv_head(u) * d, d);
      }
      for (int u = 0; u < qv.count(); ++u) {
        T* p = scores + size_t(u) * most_seen;
        const int n = seen(qv.row(u));
        row_sum[u] = exp_shifted(p, n, &row_max[u]);
        std::fill(p + n, p + most_seen, T(0));
      }
      // out_u = sum_j p_uj v_j
      std::fill(acc, acc + size_t(qv.count()) * d, T(0));
      for (int j = 0; j < most_seen; ++j) {
        const T* vj = v + (kv_row0 + j) * s.ld_v;
        if (j + kPrefetchRows < most_seen)
          prefetch(vj + kPrefetchRows * s.ld_v + qv.kv_begin * d, qv.kv_count * d);
        for (int u = 0; u < qv.count(); ++u) {
          const T p = scores[size_t(u) * most_seen + j];
          const T* vh = vj + qv.kv_head(u) * d;
          T* a = acc + size_t(u) * d;
#pragma omp simd
          for (int c = 0; c < d; ++c) a[c] += p * vh[c];
        }
      }
      for (int u = 0; u < qv.count(); ++u) {
        const int64_t row = q_row0 + qv.row(u);
        T* o = out + row * s.ld_out + qv.head(u) * d;
        const T inv = T(1) / row_sum[u];
        for (int c = 0; c < d; ++c) o[c] = acc[size_t(u) * d + c] * inv;
        lse[row * s.q_heads + qv.head(u)] = row_max[u] + std::log(row_sum[u]);
      }
    }
  }
}

template void attention_forward_few_queries<float>(float*, float*, const float*, const float*,
                                                   const float*, const AttentionShape&);
template void attention_forward_few_queries<double>(double*, double*, const double*, const double*,
                                                    const double*, const AttentionShape&);

}  // namespace gattn
