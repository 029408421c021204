#include "ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/attention_decode.h"
#include "ops/bf16_bits.h"
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

// The tiles' GEMM operands are per-head copies, packed: a head's channels sit in rows ld_q, ld_k,
// ... apart in the caller's tensors, 4 KiB apart at a projection width of 1,024, where a tile's
// 64 rows compete for one cache set. The products are the same sums in the same order.

// rows x d values (x's rows ld apart) copied to a packed rows x d matrix, and back.
template <typename T>
void pack_rows(T* packed, const T* x, int64_t ld, int rows, int d) {
  for (int r = 0; r < rows; ++r) std::copy_n(x + r * ld, d, packed + int64_t(r) * d);
}
template <typename T>
void unpack_rows(T* x, int64_t ld, const T* packed, int rows, int d) {
  for (int r = 0; r < rows; ++r) std::copy_n(packed + int64_t(r) * d, d, x + r * ld);
}

// rows x d values transposed one tile of rows at a time: tile t is a packed d x kAttentionTile
// block, out[(t * d + c) * kAttentionTile + j] = x[row t * 64 + j, channel c]. Keys (and values)
// so laid out make the score products plain NN tiles, which sgemm runs 1.3-1.7x faster than NT.
template <typename T>
void transpose_tiles(T* out, const T* x, int64_t ld, int rows, int d) {
  for (int r0 = 0; r0 < rows; r0 += kAttentionTile) {
    T* block = out + int64_t(r0) * d;
    const int n = std::min(kAttentionTile, rows - r0);
    for (int c = 0; c < d; ++c)
      for (int j = 0; j < n; ++j) block[c * kAttentionTile + j] = x[int64_t(r0 + j) * ld + c];
  }
}

// Where row r, head h of an output gate's scores, gated output and score gradients sit.
template <typename T>
const T* z_at(const OutputGate<T>& g, int64_t r, int h) {
  return g.z + r * g.ld_z + h * g.gate.scores();
}
template <typename T>
T* gated_at(const OutputGate<T>& g, int64_t r, int h) {
  return g.gated + r * g.ld_gated + h * g.gate.head_dim;
}
template <typename T>
T* d_z_at(const OutputGate<T>& g, int64_t r, int h) {
  return g.d_z + r * g.ld_dz + h * g.gate.scores();
}

// The gate on every row and head of out (after the few-query path, which has no epilogue).
template <typename T>
void gate_rows(const OutputGate<T>& g, const T* out, const AttentionShape& s) {
  std::vector<T> sig(g.gate.head_dim);
  for (int64_t r = 0; r < int64_t(s.batch) * s.q_len; ++r)
    for (int h = 0; h < s.q_heads; ++h)
      gate_head_forward(gated_at(g, r, h), out + r * s.ld_out + h * g.gate.head_dim, z_at(g, r, h),
                        sig.data(), g.gate);
}

// Room for transpose_tiles of rows x d values: whole tiles.
int64_t transposed_size(int rows, int d) { return int64_t(tile_count(rows)) * kAttentionTile * d; }
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
void attention_forward(const ExecContext& exec, T* out, T* lse, const T* q, const T* k, const T* v,
                       const AttentionShape& s, const OutputGate<T>* gate) {
  if (s.q_len <= kFewQueryRows) {
    attention_forward_few_queries(out, lse, q, k, v, s);
    if (gate) gate_rows(*gate, out, s);
    return;
  }
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const int tiles = tile_count(s.q_len);
  const T scale = T(1) / std::sqrt(T(d));
  const int64_t tasks = int64_t(s.batch) * s.q_heads * tiles;
  // every (sequence, kv head)'s keys transposed and values packed, shared by the threads
  const int64_t kv_heads = int64_t(s.batch) * s.kv_heads;
  const int64_t keys_size = transposed_size(s.kv_len, d), values_size = int64_t(s.kv_len) * d;
  thread_local std::vector<T> kv_buffer;
  T* keys_t = scratch(kv_buffer, size_t(kv_heads) * (keys_size + values_size));
  T* values = keys_t + kv_heads * keys_size;
#pragma omp parallel
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < kv_heads; ++i) {
      const int64_t row0 = i / s.kv_heads * s.kv_stride, col0 = i % s.kv_heads * d;
      transpose_tiles(keys_t + i * keys_size, k + row0 * s.ld_k + col0, s.ld_k, s.kv_len, d);
      pack_rows(values + i * values_size, v + row0 * s.ld_v + col0, s.ld_v, s.kv_len, d);
    }
    thread_local std::vector<T> buffer;
    T* scores = scratch(buffer, size_t(kAttentionTile) * (kAttentionTile + 2 * d + 4) + d);
    T* acc = scores + kAttentionTile * kAttentionTile;
    T* q_tile = acc + kAttentionTile * d;
    T* sig = q_tile + kAttentionTile * d;  // the gate's scratch
    T* row_max = sig + d;
    T* row_sum = row_max + kAttentionTile;
    T* rescale = row_sum + kAttentionTile;
    T* tile_sum = rescale + kAttentionTile;
    int visible[kAttentionTile];
#pragma omp for schedule(static, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int qt = int(task % tiles), h = int(task / tiles % s.q_heads);
      const int b = int(task / tiles / s.q_heads), kvh = h / group;
      const int q0 = qt * kAttentionTile, nq = std::min(kAttentionTile, s.q_len - q0);
      const int64_t q_row0 = int64_t(b) * s.q_len, kv_head = int64_t(b) * s.kv_heads + kvh;
      pack_rows(q_tile, q + (q_row0 + q0) * s.ld_q + h * d, s.ld_q, nq, d);
      std::fill(acc, acc + nq * d, T(0));
      std::fill(row_max, row_max + nq, -std::numeric_limits<T>::infinity());
      std::fill(row_sum, row_sum + nq, T(0));
      const int key_tiles = tile_count(keys_seen(s, q0 + nq - 1));
      for (int kt = 0; kt < key_tiles; ++kt) {
        const int k0 = kt * kAttentionTile, nk = std::min(kAttentionTile, s.kv_len - k0);
        const T* k_t_tile = keys_t + kv_head * keys_size + int64_t(k0) * d;
        const T* v_tile = values + kv_head * values_size + int64_t(k0) * d;
        tile_matmul<T>(exec, scores, q_tile, k_t_tile, nq, nk, d, false, false, scale, 0, d,
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
        tile_matmul<T>(exec, acc, scores, v_tile, nq, d, nk, false, false, 1, 1, kAttentionTile, d,
                       d);
      }
      for (int i = 0; i < nq; ++i) {
        const int64_t r = q_row0 + q0 + i;
        T* o = out + r * s.ld_out + h * d;
        for (int c = 0; c < d; ++c) o[c] = acc[i * d + c] / row_sum[i];
        lse[r * s.q_heads + h] = row_max[i] + std::log(row_sum[i]);
        if (gate) gate_head_forward(gated_at(*gate, r, h), o, z_at(*gate, r, h), sig, gate->gate);
      }
    }
  }
}

void attention_forward(const ExecContext& exec, float* out, float* lse, const float* q,
                       const uint16_t* k, const uint16_t* v, const AttentionShape& s) {
  if (s.q_len <= kFewQueryRows) return attention_forward_few_queries(out, lse, q, k, v, s);
  // every sequence's keys and values widened, packed [kv_len, K * d], then the fp32 path
  const int width = s.kv_heads * s.head_dim;
  const int64_t per_sequence = int64_t(s.kv_len) * width;
  thread_local std::vector<float> widened;
  float* keys = scratch(widened, size_t(2 * s.batch * per_sequence));
  float* values = keys + s.batch * per_sequence;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < int64_t(s.batch) * s.kv_len; ++r) {
    const int64_t from = (r / s.kv_len * s.kv_stride + r % s.kv_len);
    for (int c = 0; c < width; ++c) {
      keys[r * width + c] = bf16_to_float(k[from * s.ld_k + c]);
      values[r * width + c] = bf16_to_float(v[from * s.ld_v + c]);
    }
  }
  AttentionShape packed = s;
  packed.kv_stride = s.kv_len;
  packed.ld_k = packed.ld_v = width;
  attention_forward(exec, out, lse, q, keys, values, packed);
}

namespace {
// One backward task's packed copies (see pack_rows): its kv head's keys and values, transposed
// and as rows, and the gradients it sums; one query head's queries, output gradients and query
// gradients at a time.
template <typename T>
struct BackwardHead {
  T *probs, *d_scores, *out_dot;  // a tile's P and dS; D_t = sum_c dO O of each query row
  T *keys_t, *values_t, *keys, *d_keys, *d_values;
  T *queries, *d_outs, *d_queries;
  T* sig;  // an output gate's scratch

  BackwardHead(std::vector<T>& buffer, const AttentionShape& s) {
    const int64_t tile = kAttentionTile * kAttentionTile, d = s.head_dim;
    const int64_t kt = transposed_size(s.kv_len, s.head_dim), kv = s.kv_len * d, q = s.q_len * d;
    probs = scratch(buffer, size_t(2 * tile + s.q_len + 2 * kt + 3 * kv + 3 * q + d));
    d_scores = probs + tile;
    out_dot = d_scores + tile;
    keys_t = out_dot + s.q_len;
    values_t = keys_t + kt;
    keys = values_t + kt;
    d_keys = keys + kv;
    d_values = d_keys + kv;
    queries = d_values + kv;
    d_outs = queries + q;
    d_queries = d_outs + q;
    sig = d_queries + q;
  }
};
}  // namespace

template <typename T>
void attention_backward(const ExecContext& exec, T* d_q, T* d_k, T* d_v, const T* d_out,
                        const T* out, const T* lse, const T* q, const T* k, const T* v,
                        const AttentionShape& s, const OutputGate<T>* gate) {
  const int d = s.head_dim, group = s.q_heads / s.kv_heads;
  const int tiles = tile_count(s.q_len);
  const T scale = T(1) / std::sqrt(T(d));
  // One task per (batch, kv head) owns d_k, d_v of that head and d_q of its query heads,
  // so every gradient is summed in one fixed order without atomics.
  const int64_t tasks = int64_t(s.batch) * s.kv_heads;
#pragma omp parallel
  {
    thread_local std::vector<T> buffer;
    const BackwardHead<T> w(buffer, s);
#pragma omp for schedule(static)
    for (int64_t task = 0; task < tasks; ++task) {
      const int kvh = int(task % s.kv_heads), b = int(task / s.kv_heads);
      const int64_t q_row0 = int64_t(b) * s.q_len, kv_row0 = b * s.kv_stride;
      const T* k_head = k + kv_row0 * s.ld_k + kvh * d;
      const T* v_head = v + kv_row0 * s.ld_v + kvh * d;
      transpose_tiles(w.keys_t, k_head, s.ld_k, s.kv_len, d);
      transpose_tiles(w.values_t, v_head, s.ld_v, s.kv_len, d);
      pack_rows(w.keys, k_head, s.ld_k, s.kv_len, d);
      std::fill_n(w.d_keys, int64_t(s.kv_len) * d, T(0));
      std::fill_n(w.d_values, int64_t(s.kv_len) * d, T(0));
      for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
        pack_rows(w.queries, q + q_row0 * s.ld_q + h * d, s.ld_q, s.q_len, d);
        if (gate) {  // the gate's backward, into the packed output gradients
          for (int t = 0; t < s.q_len; ++t) {
            const int64_t r = q_row0 + t, col = h * d;
            gate_head_backward(w.d_outs + int64_t(t) * d, d_z_at(*gate, r, h),
                               d_out + r * s.ld_out + col, out + r * s.ld_out + col,
                               z_at(*gate, r, h), w.sig, gate->gate);
          }
        } else {
          pack_rows(w.d_outs, d_out + q_row0 * s.ld_out + h * d, s.ld_out, s.q_len, d);
        }
        std::fill_n(w.d_queries, int64_t(s.q_len) * d, T(0));
        for (int t = 0; t < s.q_len; ++t) {
          const T* o = out + (q_row0 + t) * s.ld_out + h * d;
          const T* dout = w.d_outs + int64_t(t) * d;
          T dot = 0;
          for (int c = 0; c < d; ++c) dot += o[c] * dout[c];
          w.out_dot[t] = dot;
        }
        for (int qt = 0; qt < tiles; ++qt) {
          const int q0 = qt * kAttentionTile, nq = std::min(kAttentionTile, s.q_len - q0);
          const T* q_tile = w.queries + int64_t(q0) * d;
          const T* dout_tile = w.d_outs + int64_t(q0) * d;
          T* dq_tile = w.d_queries + int64_t(q0) * d;
          const int key_tiles = tile_count(keys_seen(s, q0 + nq - 1));
          for (int kt = 0; kt < key_tiles; ++kt) {
            const int k0 = kt * kAttentionTile, nk = std::min(kAttentionTile, s.kv_len - k0);
            tile_matmul<T>(exec, w.probs, q_tile, w.keys_t + int64_t(k0) * d, nq, nk, d, false,
                           false, scale, 0, d, kAttentionTile, kAttentionTile);
            for (int i = 0; i < nq; ++i) {
              T* row = w.probs + i * kAttentionTile;
              const int visible = visible_keys(s, q0 + i, k0, nk);
              const T row_lse = lse[(q_row0 + q0 + i) * s.q_heads + h];
              for (int j = 0; j < visible; ++j) row[j] = fast_exp(row[j] - row_lse);
              for (int j = visible; j < nk; ++j) row[j] = 0;
            }
            // d_v += P^T dO
            tile_matmul<T>(exec, w.d_values + int64_t(k0) * d, w.probs, dout_tile, nk, d, nq, true,
                           false, 1, 1, kAttentionTile, d, d);
            // dP = dO v^T, then dS = P (dP - D) scale
            tile_matmul<T>(exec, w.d_scores, dout_tile, w.values_t + int64_t(k0) * d, nq, nk, d,
                           false, false, 1, 0, d, kAttentionTile, kAttentionTile);
            for (int i = 0; i < nq; ++i) {
              const T* p = w.probs + i * kAttentionTile;
              T* ds = w.d_scores + i * kAttentionTile;
              const T di = w.out_dot[q0 + i];
              for (int j = 0; j < nk; ++j) ds[j] = p[j] * (ds[j] - di) * scale;
            }
            // d_q += dS k;  d_k += dS^T q
            tile_matmul<T>(exec, dq_tile, w.d_scores, w.keys + int64_t(k0) * d, nq, d, nk, false,
                           false, 1, 1, kAttentionTile, d, d);
            tile_matmul<T>(exec, w.d_keys + int64_t(k0) * d, w.d_scores, q_tile, nk, d, nq, true,
                           false, 1, 1, kAttentionTile, d, d);
          }
        }
        unpack_rows(d_q + q_row0 * s.ld_q + h * d, s.ld_q, w.d_queries, s.q_len, d);
      }
      unpack_rows(d_k + kv_row0 * s.ld_k + kvh * d, s.ld_k, w.d_keys, s.kv_len, d);
      unpack_rows(d_v + kv_row0 * s.ld_v + kvh * d, s.ld_v, w.d_values, s.kv_len, d);
    }
  }
}

#define GATTN_INSTANTIATE(T)                                                                   \
  template void attention_forward<T>(const ExecContext&, T*, T*, const T*, const T*, const T*, \
                                     const AttentionShape&, const OutputGate<T>*);             \
  template void attention_backward<T>(const ExecContext&, T*, T*, T*, const T*, const T*,      \
                                      const T*, const T*, const T*, const T*,                  \
                                      const AttentionShape&, const OutputGate<T>*);
GATTN_INSTANTIATE(float)
GATTN_INSTANTIATE(double)
#undef GATTN_INSTANTIATE

}  // namespace gattn
