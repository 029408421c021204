// Causal multi-head attention with grouped kv heads, tiled with an online softmax: no T x T matrix
// is ever stored. Forward saves the log-sum-exp of each query row; backward recomputes the
// probabilities from it (as FlashAttention-2 does).
#pragma once
#include <cstdint>

#include "ops/exec_context.h"
#include "ops/gate.h"

namespace gattn {

inline constexpr int kAttentionTile = 64;  // query and key rows per tile

// Queries of a sequence may be fewer than its keys (a prefill chunk or a decode step against a KV
// cache): query row i of a sequence sits at key position q_offset + i and sees the keys
// j <= q_offset + i (and j < kv_len). A training batch has q_offset 0 and q_len == kv_len.
struct AttentionShape {
  int batch;          // sequences
  int q_len;          // query rows per sequence: row r = b * q_len + i (q, out, lse)
  int kv_len;         // key/value rows per sequence
  int q_offset;       // key position of query row 0
  int64_t kv_stride;  // rows from one sequence's keys to the next (kv_len, or a cache's capacity)
  int q_heads;        // H
  int kv_heads;       // K; query head h reads kv head h / (H / K)
  int head_dim;
  int ld_q, ld_k, ld_v, ld_out;  // row strides of q, k, v, out (and of their gradients)
};

// The shape of a training batch: every sequence attends to itself from position 0.
AttentionShape self_attention_shape(int batch, int seq_len, int q_heads, int kv_heads, int head_dim,
                                    int ld_q, int ld_k, int ld_v, int ld_out);

// A head-specific gate on each head's output (G1 whose scores are not shared), applied by
// attention itself rather than as an op of its own, which saves the gate's passes over the
// attention output and its gradient: the forward writes each row's head output to `out` (the
// gate's input, kept for the backward) and gate_head_forward of it to `gated`; the backward takes
// the gradient of the gated output as d_out, applies gate_head_backward while it reads it and
// writes d_z besides. The bits are those of gate_forward / gate_backward as a separate op.
template <typename T>
struct OutputGate {
  HeadGate gate;
  const T* z;  // row r's scores at z + r * ld_z (ld_z 0: one row for every token)
  int64_t ld_z;
  T* gated;  // forward: the gated output, row stride ld_gated
  int64_t ld_gated;
  T* d_z;  // backward: the gradient of z, row stride ld_dz
  int64_t ld_dz;
};

// out[r, h*d .. ] = softmax(q k^T / sqrt(d)) v over the visible keys; lse[r * H + h] saved.
// With a gate, also gate->gated (above).
template <typename T>
void attention_forward(const ExecContext& exec, T* out, T* lse, const T* q, const T* k, const T* v,
                       const AttentionShape& s, const OutputGate<T>* gate = nullptr);

// The same over keys and values stored as bf16 bits (a bf16 KV cache; no gate): a few query rows
// read them in place, each value widened (exactly) as it is read; more widen every sequence's
// keys and values to fp32 first. Either way the sums are those of the fp32 path on the widened
// values.
void attention_forward(const ExecContext& exec, float* out, float* lse, const float* q,
                       const uint16_t* k, const uint16_t* v, const AttentionShape& s);

// Writes (not accumulates) d_q, d_k, d_v (kv_len rows of each sequence); with a gate, d_out is the
// gradient of the gated output and gate->d_z is written too.
template <typename T>
void attention_backward(const ExecContext& exec, T* d_q, T* d_k, T* d_v, const T* d_out,
                        const T* out, const T* lse, const T* q, const T* k, const T* v,
                        const AttentionShape& s, const OutputGate<T>* gate = nullptr);

}  // namespace gattn
