#include "ops/attention_decode.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/attention_few_avx2.h"
#include "ops/avx512_kernels.h"
#include "ops/bf16_bits.h"
#include "ops/dot.h"
#include "ops/fast_exp.h"
#include "ops/four_streams.h"
#include "util/cpu_isa.h"

namespace gattn {

namespace {
// A cached key or value as the query's type: bf16 bits widened (exactly), others as they are.
template <typename T>
T widened(T x) {
  return x;
}
inline float widened(uint16_t x) { return bf16_to_float(x); }

// Dot products of a query with one and with four key rows: fp32 (and fp32 with bf16 keys)
// through ops/dot's vector kernels, any other type (the float64 of the tests) by plain loops.
template <typename T, typename KV>
T row_dot(const T* a, const KV* b, int n) {
  T s = 0;
  for (int c = 0; c < n; ++c) s += a[c] * b[c];
  return s;
}
inline float row_dot(const float* a, const float* b, int n) { return dot(a, b, n); }
inline float row_dot(const float* a, const uint16_t* b, int n) { return dot(a, b, n); }

template <typename T, typename KV>
void row_dot4(const T* x, const KV* const rows[4], int n, T out[4]) {
  for (int i = 0; i < 4; ++i) out[i] = row_dot(x, rows[i], n);
}
inline void row_dot4(const float* x, const float* const rows[4], int n, float out[4]) {
  dot4(x, rows, n, out);
}
inline void row_dot4(const float* x, const uint16_t* const rows[4], int n, float out[4]) {
  dot4(x, rows, n, out);
}

// p[j] = exp(p[j] - max) over n scores; returns their sum and sets *max. The sum has one order
// whatever the compiler vectorises: 8 partial sums, lane l taking the j = l mod 8 of the first
// n - n % 8 scores, the others added to lane 0, then the lanes in order (the order GCC's 8-lane
// vectors gave the former `omp simd reduction` where it vectorised the loop).
template <typename T>
T exp_shifted(T* p, int n, T* max) {
  T m = p[0];
  for (int j = 1; j < n; ++j) m = std::max(m, p[j]);
  constexpr int kLanes = 8;
  T lane[kLanes] = {};
  int j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += p[j + l] = fast_exp(p[j + l] - m);
  for (; j < n; ++j) lane[0] += p[j] = fast_exp(p[j] - m);
  T sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += lane[l];
  *max = m;
  return sum;
}

// The query vectors of one task: every query row of one sequence for each query head of the kv
// heads [kv_begin, kv_end). Vector u = (i * kv_count + kv) * group + g is query row i of head
// (kv_begin + kv) * group + g.
struct QueryVectors {
  int rows, kv_begin, kv_count, group;
  int count() const { return rows * kv_count * group; }
  int row(int u) const { return u / (kv_count * group); }
  int kv_head(int u) const { return kv_begin + u / group % kv_count; }
  int head(int u) const { return kv_head(u) * group + u % group; }
};

// Which code runs a task's passes: AVX-512's kernels (fp32 queries, the head size a multiple of
// their 16 lanes), AVX2's (the same head sizes: the portable loops' arithmetic), or the portable
// loops (any other type: the float64 of the tests).
enum class FewQueryKernels { avx512, avx2, loops };

template <typename T>
FewQueryKernels few_query_kernels(int head_dim) {
  if constexpr (std::is_same_v<T, float>) {
#ifdef GATTN_X86_KERNELS
    if (head_dim % 16 == 0 && avx512_bf16_kernels_in_use()) return FewQueryKernels::avx512;
#endif
#ifdef GATTN_DOT_AVX2
    if (head_dim % 16 == 0) return FewQueryKernels::avx2;
#endif
  }
  (void)head_dim;
  return FewQueryKernels::loops;
}

// Each query vector's first value and where its kv head starts in a cached row.
template <typename T>
struct VectorPointers {
  std::vector<const T*> queries;
  std::vector<int> kv_offsets;

  void make(const QueryVectors& qv, const T* q, int64_t q_row0, const AttentionShape& s) {
    queries.resize(qv.count());
    kv_offsets.resize(qv.count());
    for (int u = 0; u < qv.count(); ++u) {
      queries[u] = q + (q_row0 + qv.row(u)) * s.ld_q + qv.head(u) * s.head_dim;
      kv_offsets[u] = qv.kv_head(u) * s.head_dim;
    }
  }
};

// One task's unnormalised attention over the cached positions [j0, j1) (rows ld apart): for each
// query vector u, row_max[u] and row_sum[u] of its visible scores (exp shifted by the max) and
// acc[u] = sum_j exp(score - max) v_j; a vector that sees none of these positions gets max -inf,
// sum 0 and acc 0. scores: [vectors, j1 - j0]. Visits the rows in order, as four far-apart
// streams (which one core reads faster than one).
template <typename T, typename KV>
struct FewQueryTask {
  const AttentionShape& s;
  const QueryVectors& qv;
  const VectorPointers<T>& vs;
  const KV *k, *v;  // the sequence's first cached row
  int64_t q_row0;
  T scale;
  FewQueryKernels kernels;

  int seen(int i) const { return std::min(s.kv_len, s.q_offset + i + 1); }

  void run(int j0, int j1, T* scores, T* acc, T* row_max, T* row_sum) const {
    const int len = j1 - j0;
    score(k + int64_t(j0) * s.ld_k, len, scores);
    for (int u = 0; u < qv.count(); ++u) {
      T* p = scores + size_t(u) * len;
      const int n = std::clamp(seen(qv.row(u)) - j0, 0, len);  // later rows are not kept
      if (n > 0) {
        row_sum[u] = exp_shifted_of(p, n, &row_max[u]);
      } else {
        row_sum[u] = 0;
        row_max[u] = -std::numeric_limits<T>::infinity();
      }
      std::fill(p + n, p + len, T(0));
    }
    std::fill(acc, acc + size_t(qv.count()) * s.head_dim, T(0));
    add_values(scores, v + int64_t(j0) * s.ld_v, len, acc);
  }

  // exp_shifted, on the AVX-512 or AVX2 kernels where they run (the same bits).
  T exp_shifted_of(T* p, int n, T* max) const {
    if constexpr (std::is_same_v<T, float>) {
#ifdef GATTN_X86_KERNELS
      if (kernels == FewQueryKernels::avx512) return avx512::few_query_exp_shifted(p, n, max);
#endif
#ifdef GATTN_DOT_AVX2
      if (kernels == FewQueryKernels::avx2) return avx2::few_query_exp_shifted(p, n, max);
#endif
    }
    return exp_shifted(p, n, max);
  }

  // The vectors as the fp32 kernels take them.
  FewQueryVectors vectors_for_kernels() const requires std::is_same_v<T, float> {
    return {vs.queries.data(), vs.kv_offsets.data(), qv.count(), qv.group, s.head_dim};
  }

  // scores[u * len + j] = scale * (query u . key row j) for the len rows from k0.
  void score(const KV* k0, int len, T* scores) const {
    const int d = s.head_dim;
    if constexpr (std::is_same_v<T, float>) {
      [[maybe_unused]] const FewQueryVectors kernel_vectors = vectors_for_kernels();
#ifdef GATTN_X86_KERNELS
      if (kernels == FewQueryKernels::avx512)
        return avx512::few_query_scores(scores, len, kernel_vectors, k0, s.ld_k, len, scale);
#endif
#ifdef GATTN_DOT_AVX2
      if (kernels == FewQueryKernels::avx2)
        return avx2::few_query_scores(scores, len, kernel_vectors, k0, s.ld_k, len, scale);
#endif
    }
    auto key = [&](int j, int u) { return k0 + int64_t(j) * s.ld_k + vs.kv_offsets[u]; };
    in_four_streams(
        len,
        [&](const int js[4]) {
          for (int u = 0; u < qv.count(); ++u) {
            const KV* const rows[4] = {key(js[0], u), key(js[1], u), key(js[2], u), key(js[3], u)};
            T dots[4];
            row_dot4(vs.queries[u], rows, d, dots);
            for (int i = 0; i < 4; ++i) scores[size_t(u) * len + js[i]] = scale * dots[i];
          }
        },
        [&](int j) {
          for (int u = 0; u < qv.count(); ++u)
            scores[size_t(u) * len + j] = scale * row_dot(vs.queries[u], key(j, u), d);
        });
  }

  // acc[u] += sum_j p[u * len + j] v_j over the len rows from first (invisible rows have p = 0).
  void add_values(const T* p, const KV* first, int len, T* acc) const {
    const int d = s.head_dim;
    if constexpr (std::is_same_v<T, float>) {
      [[maybe_unused]] const FewQueryVectors kernel_vectors = vectors_for_kernels();
#ifdef GATTN_X86_KERNELS
      if (kernels == FewQueryKernels::avx512)
        return avx512::few_query_values(acc, p, len, kernel_vectors, first, s.ld_v, len);
#endif
#ifdef GATTN_DOT_AVX2
      if (kernels == FewQueryKernels::avx2)
        return avx2::few_query_values(acc, p, len, kernel_vectors, first, s.ld_v, len);
#endif
    }
    auto value = [&](int j, int u) { return first + int64_t(j) * s.ld_v + vs.kv_offsets[u]; };
    in_four_streams(
        len,
        [&](const int js[4]) {
          for (int u = 0; u < qv.count(); ++u) {
            const T* pu = p + size_t(u) * len;
            const T p0 = pu[js[0]], p1 = pu[js[1]], p2 = pu[js[2]], p3 = pu[js[3]];
            const KV *v0 = value(js[0], u), *v1 = value(js[1], u), *v2 = value(js[2], u),
                     *v3 = value(js[3], u);
            T* a = acc + size_t(u) * d;
#pragma omp simd
            for (int c = 0; c < d; ++c)
              a[c] += p0 * widened(v0[c]) + p1 * widened(v1[c]) + p2 * widened(v2[c]) +
                      p3 * widened(v3[c]);
          }
        },
        [&](int j) {
          for (int u = 0; u < qv.count(); ++u) {
            const T pj = p[size_t(u) * len + j];
            const KV* vj = value(j, u);
            T* a = acc + size_t(u) * d;
#pragma omp simd
            for (int c = 0; c < d; ++c) a[c] += pj * widened(vj[c]);
          }
        });
  }

  // Query vector u's output and log-sum-exp from its (acc, max, sum).
  void finish(int u, const T* acc_u, T max, T sum, T* out, T* lse) const {
    const int d = s.head_dim;
    const int64_t row = q_row0 + qv.row(u);
    T* o = out + row * s.ld_out + qv.head(u) * d;
    const T inv = T(1) / sum;
    for (int c = 0; c < d; ++c) o[c] = acc_u[c] * inv;
    lse[row * s.q_heads + qv.head(u)] = max + std::log(sum);
  }
};

// One sequence over a long cache: the positions in chunks (every kv head of a chunk's rows: each
// thread reads whole rows, contiguous), each chunk's (max, sum, acc) merged in chunk order. The
// chunks depend on the number of positions only, not on the thread count nor the values.
// Chunks of at most kSplitPositions keep each chunk's own work (its softmax, its part of the
// merge) small: chunks of 32 and 64 measured against 128, two threads: 0.84x and 0.76x the time
// at ref-dense's shape, 0.83x and 0.77x at the 0.6B shape (gattn_bench_attention_decode).
constexpr int kSplitPositions = 64;
constexpr int kSplitFrom = 256;  // cached positions from which one sequence is split

// The positions of a chunk: chunks of equal length (a multiple of 4, the last one shorter), an
// even number of them where that rounding allows, so two threads get equal shares. Fixed chunks of
// 64 gave one thread 5 and the other 4 at 560 positions (320 and 240 positions): the other waited a
// quarter of its time.
int split_chunk_positions(int most_seen) {
  const int chunks = 2 * ((most_seen + 2 * kSplitPositions - 1) / (2 * kSplitPositions));
  return ((most_seen + chunks - 1) / chunks + 3) / 4 * 4;
}

template <typename T, typename KV>
void few_queries_split(T* out, T* lse, const T* q, const KV* k, const KV* v,
                       const AttentionShape& s, int most_seen) {
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const QueryVectors qv{.rows = s.q_len, .kv_begin = 0, .kv_count = s.kv_heads, .group = group};
  const int length = split_chunk_positions(most_seen);
  const int vectors = qv.count(), chunks = (most_seen + length - 1) / length;
  thread_local VectorPointers<T> vs;  // the calling thread's: read by every thread below
  vs.make(qv, q, 0, s);
  const FewQueryTask<T, KV> task{
      s, qv, vs, k, v, 0, T(1) / std::sqrt(T(d)), few_query_kernels<T>(d)};
  thread_local std::vector<T> parts;  // [chunk][vector]: acc (d), then max and sum
  const size_t part = size_t(vectors) * (d + 2);
  if (parts.size() < part * chunks) parts.resize(part * chunks);
  T* const results = parts.data();
#pragma omp parallel
  {
    thread_local std::vector<T> scores;
    if (scores.size() < size_t(vectors) * length) scores.resize(size_t(vectors) * length);
#pragma omp for schedule(static)
    for (int c = 0; c < chunks; ++c) {
      T* r = results + part * c;
      T* acc = r;
      T* row_max = r + size_t(vectors) * d;
      task.run(c * length, std::min(most_seen, (c + 1) * length), scores.data(), acc, row_max,
               row_max + vectors);
    }
#pragma omp for schedule(static) nowait  // the region's end waits for every thread
    for (int u = 0; u < vectors; ++u) {
      auto max_of = [&](int c) { return results[part * c + size_t(vectors) * d + u]; };
      auto sum_of = [&](int c) { return results[part * c + size_t(vectors) * d + vectors + u]; };
      T most = max_of(0);
      for (int c = 1; c < chunks; ++c) most = std::max(most, max_of(c));
      T sum = 0;
      T* merged = results + size_t(u) * d;  // chunk 0's acc, rescaled in place
      for (int c = 0; c < chunks; ++c) {
        if (sum_of(c) == 0) continue;  // sees none of chunk c (chunk 0: every vector sees it)
        const T w = std::exp(max_of(c) - most);
        sum += w * sum_of(c);
        const T* a = results + part * c + size_t(u) * d;
        if (c == 0)
          for (int i = 0; i < d; ++i) merged[i] = w * a[i];
        else
          for (int i = 0; i < d; ++i) merged[i] += w * a[i];
      }
      task.finish(u, merged, most, sum, out, lse);
    }
  }
}
}  // namespace

// A cache keeps all kv heads of a position in one row. One sequence with a long cache splits its
// positions (few_queries_split); otherwise each task serves a contiguous range of kv heads of one
// sequence and walks the rows in order, not one 4 KiB stride per head. Tasks: sequences x (one
// range of heads per thread).
template <typename T, typename KV>
void attention_forward_few_queries(T* out, T* lse, const T* q, const KV* k, const KV* v,
                                   const AttentionShape& s) {
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const T scale = T(1) / std::sqrt(T(d));
  // Keys query row i sees: those at or before its position (at least one: its own).
  const int most_seen = std::min(s.kv_len, s.q_offset + s.q_len);
  if (s.batch == 1 && most_seen >= kSplitFrom)
    return few_queries_split(out, lse, q, k, v, s, most_seen);
  const FewQueryKernels kernels = few_query_kernels<T>(d);
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
    for (int64_t t = 0; t < tasks; ++t) {
      const int range = int(t % ranges), b = int(t / ranges);
      const int kv_begin = s.kv_heads * range / ranges;
      const QueryVectors qv{.rows = s.q_len,
                            .kv_begin = kv_begin,
                            .kv_count = s.kv_heads * (range + 1) / ranges - kv_begin,
                            .group = group};
      const int64_t kv_row0 = b * s.kv_stride;
      thread_local VectorPointers<T> vs;
      vs.make(qv, q, int64_t(b) * s.q_len, s);
      const KV *k_seq = k + kv_row0 * s.ld_k, *v_seq = v + kv_row0 * s.ld_v;
      const FewQueryTask<T, KV> task{s, qv, vs, k_seq, v_seq, int64_t(b) * s.q_len, scale, kernels};
      task.run(0, most_seen, scores, acc, row_max, row_sum);
      for (int u = 0; u < qv.count(); ++u)
        task.finish(u, acc + size_t(u) * d, row_max[u], row_sum[u], out, lse);
    }
  }
}

template void attention_forward_few_queries(float*, float*, const float*, const float*,
                                            const float*, const AttentionShape&);
template void attention_forward_few_queries(double*, double*, const double*, const double*,
                                            const double*, const AttentionShape&);
template void attention_forward_few_queries(float*, float*, const float*, const uint16_t*,
                                            const uint16_t*, const AttentionShape&);

}  // namespace gattn
