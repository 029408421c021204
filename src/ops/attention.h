// Causal multi-head attention with grouped kv heads, tiled with an online softmax: no T x T matrix
// is ever stored. Forward saves the log-sum-exp of each query row; backward recomputes the
// probabilities from it (as FlashAttention-2 does).
#pragma once

namespace gattn {

inline constexpr int kAttentionTile = 64;  // query and key rows per tile

struct AttentionShape {
  int batch;
  int seq_len;   // row r = b * seq_len + t
  int q_heads;   // H
  int kv_heads;  // K; query head h reads kv head h / (H / K)
  int head_dim;
  int ld_q, ld_k, ld_v, ld_out;  // row strides of q, k, v, out (and of their gradients)
};

// out[r, h*d .. ] = softmax(q k^T / sqrt(d)) v over keys t' <= t; lse[r * H + h] saved.
template <typename T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const AttentionShape& s);

// Writes (not accumulates) d_q, d_k, d_v.
template <typename T>
void attention_backward(T* d_q, T* d_k, T* d_v, const T* d_out, const T* out, const T* lse,
                        const T* q, const T* k, const T* v, const AttentionShape& s);

}  // namespace gattn
