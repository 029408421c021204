#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/attention_decode.h"
#include "ops/fast_exp.h"
#include "ops/matmul.h"

namespace gattn {

namespace {
// Per-thread tile buffers, grown once and reused across calls.
template <typename T>
T* scratch(std::vector<T>& buffer, size_t count) {
  if (buffer.size() < count) buffer.resize(count);
  return buffer.data();
}

int tile_count(int rows) { return (rows + kAttentionTile - 1) / kAttentionTile; }

// How many keys query row i of a sequence sees: those at or before its position.
int keys_seen(const AttentionShape& s, int i) { return std::min(s.kv_len, s.q_offset + i + 1); }

// Keys k0 + j with j < visible_keys(...) are seen by query row i (0 when the tile is all later).
int visible_keys(const AttentionShape& s, int i, int k0, int nk) {
  return std::clamp(keys_seen(s, i) - k0, 0, nk);
}
// sums[i] = rows[i][0] + rows[i][1] + ... + rows[i][counts[i] - 1], added in that order (the
// bits of a sequential sum), eight rows at a time so that their chains of dependent additions
// overlap instead of waiting on each other.
template <typename T>
void row_sums_in_order(const T* rows, int ld, const int* counts, int n, T* sums) {
  constexpr int kRows = 8;
  int i = 0;
  for (; i + kRows <= n; i += kRows) {
    T s[kRows] = {};
    const int common = *std::min_element(counts + i, counts + i + kRows);
    for (int j = 0; j < common; ++j)
      for (int r = 0; r < kRows; ++r) s[r] += rows[int64_t(i + r) * ld + j];
    for (int r = 0; r < kRows; ++r) {
      for (int j = common; j < counts[i + r]; ++j) s[r] += rows[int64_t(i + r) * ld + j];
      sums[i + r] = s[r];
    }
  }
  for (; i < n; ++i) {
    T s = 0;
    for (int j = 0; j < counts[i]; ++j) s += rows[int64_t(i) * ld + j];
    sums[i] = s;
  }
}

// The keys (or values) of kv head kvh of sequence b, transposed one tile at a time: key tile kt
// is a packed d x kAttentionTile block, out[(kt * d + c) * kAttentionTile + j] = x[row kt * 64 + j,
// channel c], a plain (not transposed) GEMM operand. sgemm runs 64 x 64 tiles 1.3-1.7x faster as
// NN than as NT, and the products are the same sums in the same order; packed blocks, not rows
// kv_len apart, keep the tile's rows from sharing cache sets.
template <typename T>
void transpose_head(T* out, const T* x, int64_t ld, const AttentionShape& s, int b, int kvh) {
  const int d = s.head_dim;
  const T* rows = x + b * s.kv_stride * ld + int64_t(kvh) * d;
  for (int k0 = 0; k0 < s.kv_len; k0 += kAttentionTile) {
    T* block = out + int64_t(k0) * d;
    const int nk = std::min(kAttentionTile, s.kv_len - k0);
    for (int c = 0; c < d; ++c)
      for (int j = 0; j < nk; ++j) block[c * kAttentionTile + j] = rows[int64_t(k0 + j) * ld + c];
  }
}

// Room for one transposed kv head of a sequence: whole tiles.
int64_t transposed_head_size(const AttentionShape& s) {
  return int64_t(tile_count(s.kv_len)) * kAttentionTile * s.head_dim;
}
}  // namespace

AttentionShape self_attention_shape(int batch, int seq_len, int q_heads, int kv_heads, int head_dim,
                                    int ld_q, int ld_k, int ld_v, int ld_out) {
  return {.batch = batch,
          .q_len = seq_len,
          .kv_len = seq_len,
          .q_offset = 0,
          .kv_stride = seq_len,
          .q_heads = q_heads,
          .kv_heads = kv_heads,
          .head_dim = head_dim,
          .ld_q = ld_q,
          .ld_k = ld_k,
          .ld_v = ld_v,
          .ld_out = ld_out};
}

template <typename T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v,
                       const AttentionShape& s) {
  if (s.q_len <= kFewQueryRows) return attention_forward_few_queries(out, lse, q, k, v, s);
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const int tiles = tile_count(s.q_len);
  const T scale = T(1) / std::sqrt(T(d));
  const int64_t tasks = int64_t(s.batch) * s.q_heads * tiles;
  const int64_t head_keys = transposed_head_size(s);
  thread_local std::vector<T> keys_t_buffer;
  T* keys_t = scratch(keys_t_buffer, size_t(s.batch) * s.kv_heads * head_keys);
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t task = 0; task < int64_t(s.batch) * s.kv_heads; ++task)
      transpose_head(keys_t + task * head_keys, k, s.ld_k, s, int(task / s.kv_heads),
                     int(task % s.kv_heads));
    thread_local std::vector<T> buffer;
    T* scores = scratch(buffer, size_t(kAttentionTile) * (kAttentionTile + d + 4));
    T* acc = scores + kAttentionTile * kAttentionTile;
    T* row_max = acc + kAttentionTile * d;
    T* row_sum = row_max + kAttentionTile;
    T* rescale = row_sum + kAttentionTile;
    T* tile_sum = rescale + kAttentionTile;
    int visible[kAttentionTile];
#pragma omp for schedule(static, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int qt = int(task % tiles), h = int(task / tiles % s.q_heads);
      const int b = int(task / tiles / s.q_heads), kvh = h / group;
      const int q0 = qt * kAttentionTile, nq = std::min(kAttentionTile, s.q_len - q0);
      const int64_t q_row0 = int64_t(b) * s.q_len, kv_row0 = b * s.kv_stride;
      const T* q_tile = q + (q_row0 + q0) * s.ld_q + h * d;
      std::fill(acc, acc + nq * d, T(0));
      std::fill(row_max, row_max + nq, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + nq, T(0));
      const int key_tiles = tile_count(keys_seen(s, q0 + nq - 1));
      for (int kt = 0; kt < key_tiles; ++kt) {
        const int k0 = kt * kAttentionTile, nk = std::min(kAttentionTile, s.kv_len - k0);
        const T* k_t_tile = keys_t + (int64_t(b) * s.kv_heads + kvh) * head_keys + int64_t(k0) * d;
        const T* v_tile = v + (kv_row0 + k0) * s.ld_v + kvh * d;
        tile_matmul<T>(scores, q_tile, k_t_tile, nq, nk, d, false, false, scale, 0, s.ld_q,
                       kAttentionTile, kAttentionTile);
        for (int i = 0; i < nq; ++i) {
          T* row = scores + i * kAttentionTile;
          visible[i] = visible_keys(s, q0 + i, k0, nk);
          T new_max = row_max[i];
#pragma omp simd reduction(max : new_max)
          for (int j = 0; j < visible[i]; ++j) new_max = std::max(new_max, row[j]);
          for (int j = 0; j < visible[i]; ++j) row[j] = fast_exp(row[j] - new_max);
          for (int j = visible[i]; j < nk; ++j) row[j] = 0;
          rescale[i] = fast_exp(row_max[i] - new_max);  // 0 on the first tile
          row_max[i] = new_max;
          for (int c = 0; c < d; ++c) acc[i * d + c] *= rescale[i];
        }
        row_sums_in_order(scores, kAttentionTile, visible, nq, tile_sum);
        for (int i = 0; i < nq; ++i) row_sum[i] = row_sum[i] * rescale[i] + tile_sum[i];
        tile_matmul<T>(acc, scores, v_tile, nq, d, nk, false, false, 1, 1, kAttentionTile, s.ld_v, d);
      }
      for (int i = 0; i < nq; ++i) {
        T* o = out + (q_row0 + q0 + i) * s.ld_out + h * d;
        for (int c = 0; c < d; ++c) o[c] = acc[i * d + c] / row_sum[i];
        lse[(q_row0 + q0 + i) * s.q_heads + h] = row_max[i] + std::log(row_sum[i]);
      }
    }
  }
}

template <typename T>
void attention_backward(T* d_q, T* d_k, T* d_v, const T* d_out, const T* out, const T* lse,
                        const T* q, const T* k, const T* v, const AttentionShape& s) {
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const int tiles = tile_count(s.q_len);
  const T scale = T(1) / std::sqrt(T(d));
  // One task per (batch, kv head) owns d_k, d_v of that head and d_q of its query heads,
  // so every gradient is summed in one fixed order without atomics.
  const int64_t tasks = int64_t(s.batch) * s.kv_heads;
#pragma omp parallel
  {
    thread_local std::vector<T> buffer;
    const int64_t head_keys = transposed_head_size(s);
    T* probs = scratch(buffer, size_t(2) * kAttentionTile * kAttentionTile + s.q_len +
                                   2 * head_keys);
    T* d_scores = probs + kAttentionTile * kAttentionTile;
    T* out_dot = d_scores + kAttentionTile * kAttentionTile;  // D_t = sum_c dO O
    T* keys_t = out_dot + s.q_len;                              // this task's k and v, transposed
    T* values_t = keys_t + head_keys;
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int kvh = int(task % s.kv_heads), b = int(task / s.kv_heads);
      const int64_t q_row0 = int64_t(b) * s.q_len, kv_row0 = b * s.kv_stride;
      transpose_head(keys_t, k, s.ld_k, s, b, kvh);
      transpose_head(values_t, v, s.ld_v, s, b, kvh);
      for (int t = 0; t < s.kv_len; ++t) {
        std::fill_n(d_k + (kv_row0 + t) * s.ld_k + kvh * d, d, T(0));
        std::fill_n(d_v + (kv_row0 + t) * s.ld_v + kvh * d, d, T(0));
      }
      for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
        for (int t = 0; t < s.q_len; ++t) {
          const T* o = out + (q_row0 + t) * s.ld_out + h * d;
          const T* dout = d_out + (q_row0 + t) * s.ld_out + h * d;
          T dot = 0;
          for (int c = 0; c < d; ++c) dot += o[c] * dout[c];
          out_dot[t] = dot;
          std::fill_n(d_q + (q_row0 + t) * s.ld_q + h * d, d, T(0));
        }
        for (int qt = 0; qt < tiles; ++qt) {
          const int q0 = qt * kAttentionTile, nq = std::min(kAttentionTile, s.q_len - q0);
          const T* q_tile = q + (q_row0 + q0) * s.ld_q + h * d;
          const T* dout_tile = d_out + (q_row0 + q0) * s.ld_out + h * d;
          T* dq_tile = d_q + (q_row0 + q0) * s.ld_q + h * d;
          const int key_tiles = tile_count(keys_seen(s, q0 + nq - 1));
          for (int kt = 0; kt < key_tiles; ++kt) {
            const int k0 = kt * kAttentionTile, nk = std::min(kAttentionTile, s.kv_len - k0);
            const T* k_tile = k + (kv_row0 + k0) * s.ld_k + kvh * d;
            tile_matmul<T>(probs, q_tile, keys_t + int64_t(k0) * d, nq, nk, d, false, false, scale,
                           0, s.ld_q, kAttentionTile, kAttentionTile);
            for (int i = 0; i < nq; ++i) {
              T* row = probs + i * kAttentionTile;
              const int visible = visible_keys(s, q0 + i, k0, nk);
              const T row_lse = lse[(q_row0 + q0 + i) * s.q_heads + h];
              for (int j = 0; j < visible; ++j) row[j] = fast_exp(row[j] - row_lse);
              for (int j = visible; j < nk; ++j) row[j] = 0;
            }
            // d_v += P^T dO
            tile_matmul<T>(d_v + (kv_row0 + k0) * s.ld_v + kvh * d, probs, dout_tile, nk, d, nq, true,
                      false, 1, 1, kAttentionTile, s.ld_out, s.ld_v);
            // dP = dO v^T, then dS = P (dP - D) scale
            tile_matmul<T>(d_scores, dout_tile, values_t + int64_t(k0) * d, nq, nk, d, false, false,
                           1, 0, s.ld_out, kAttentionTile, kAttentionTile);
            for (int i = 0; i < nq; ++i) {
              const T* p = probs + i * kAttentionTile;
              T* ds = d_scores + i * kAttentionTile;
              const T di = out_dot[q0 + i];
              for (int j = 0; j < nk; ++j) ds[j] = p[j] * (ds[j] - di) * scale;
            }
            // d_q += dS k;  d_k += dS^T q
            tile_matmul<T>(dq_tile, d_scores, k_tile, nq, d, nk, false, false, 1, 1, kAttentionTile,
                      s.ld_k, s.ld_q);
            tile_matmul<T>(d_k + (kv_row0 + k0) * s.ld_k + kvh * d, d_scores, q_tile, nk, d, nq, true,
                      false, 1, 1, kAttentionTile, s.ld_q, s.ld_k);
          }
        }
      }
    }
  }
}

#define GATTN_INSTANTIATE(T)                                                                       \
  template void attention_forward<T>(T*, T*, const T*, const T*, const T*, const AttentionShape&); \
  template void attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*,          \
                                      const T*, const T*, const AttentionShape&);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
