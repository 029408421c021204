// The gated delta rule of Gated DeltaNet (Yang et al., arXiv 2412.06464), exactly as transformers'
// Qwen3.5 computes it (torch_recurrent_gated_delta_rule / torch_chunk_gated_delta_rule). Per
// sequence and value head h (reading key head h / r, r = value heads / key heads), with a state
// S [key_dim, value_dim] carried from token to token:
//   S <- exp(g_t) S;  S <- S + k_t (beta_t (v_t - S^T k_t))^T;  o_t = S^T q_t   (read after the
//   write)
// q and k arrive l2-normalised, q scaled by key_dim^-1/2; g_t <= 0 is the log of the decay.
// Everything is computed in T (fp32 in the engine, double in the tests), never rounded to bf16.
//
// Two forms: the recurrent one (decode, and the oracle) and the chunked one (prefill and training:
// chunks of kDeltaRuleChunk tokens, the WY/UT form, GEMM-shaped), equal in exact arithmetic. The
// backward pass is the chunked form's: a forward sweep per value head finds the state at each
// chunk's start and prepares the chunks, then a reverse sweep takes their gradients.
#pragma once
#include <cstdint>

#include "ops/exec_context.h"

namespace gattn {

inline constexpr int kDeltaRuleChunk = 64;

// Geometry of one call: `sequences` sequences of `tokens` tokens each, their rows consecutive
// (row b * tokens + t). Row strides, in elements: q and k rows hold key_heads * key_dim values,
// v and out rows value_heads * value_dim, g and beta rows value_heads.
struct DeltaRuleShape {
  int sequences = 1, tokens = 0;
  int key_heads = 0, value_heads = 0, key_dim = 0, value_dim = 0;
  int64_t qk_stride = 0, v_stride = 0, gate_stride = 0, out_stride = 0;
  // Value heads grouped by key head (Hugging Face: head h reads key head h / ratio) or tiled
  // (llama.cpp's qwen35 files: h % key_heads).
  bool tiled_value_heads = false;

  int ratio() const { return value_heads / key_heads; }
  int key_head(int h) const { return tiled_value_heads ? h % key_heads : h / ratio(); }
  // The j-th value head (of ratio()) reading key head kh.
  int value_head(int kh, int j) const {
    return tiled_value_heads ? j * key_heads + kh : kh * ratio() + j;
  }
  int chunks() const { return (tokens + kDeltaRuleChunk - 1) / kDeltaRuleChunk; }
  // Values of one sequence's state, and of the chunk-start states the chunked forward keeps.
  int64_t state_size() const { return int64_t(value_heads) * key_dim * value_dim; }
  int64_t chunk_states_size() const { return int64_t(sequences) * chunks() * state_size(); }
  // Values one thread of the backward pass keeps: one value head's prepared chunks (Chunk in
  // delta_rule_chunk.h) and the state at each chunk's start.
  int64_t backward_values_per_thread() const {
    const int64_t c = kDeltaRuleChunk;
    return int64_t(chunks()) *
           (6 * c * key_dim + 4 * c * value_dim + 4 * c * c + 6 * c + int64_t(key_dim) * value_dim);
  }
};

// The inputs of one call; state [sequences, value_heads, key_dim, value_dim] holds each
// sequence's state before the first token and is overwritten with the state after the last.
template <typename T>
struct DeltaRuleInputs {
  const T* q = nullptr;
  const T* k = nullptr;
  const T* v = nullptr;
  const T* g = nullptr;
  const T* beta = nullptr;
};

// Checks the shape (positive sizes, value_heads a multiple of key_heads, strides wide enough).
void check_delta_rule_shape(const DeltaRuleShape& s);

// Token by token: decode steps, and the oracle of the chunked form.
template <typename T>
void delta_rule_recurrent(const ExecContext& x, const DeltaRuleShape& s,
                          const DeltaRuleInputs<T>& in, T* state, T* out);

// Chunk by chunk. chunk_states (null: not kept) receives the state at the start of every chunk,
// [sequences, chunks, value_heads, key_dim, value_dim], for the backward pass; out null: the
// states only (the backward pass computes them again rather than keep them).
template <typename T>
void delta_rule_chunked(const ExecContext& x, const DeltaRuleShape& s, const DeltaRuleInputs<T>& in,
                        T* state, T* out, T* chunk_states);

// The gradients of a chunked forward pass (same shape, inputs and initial state: null for zero):
// written, not added, to d_q, d_k (key rows), d_v (value rows), d_g and d_beta (gate rows), with
// the strides of their inputs. d_out uses out_stride. d_state: dL/d(the final state) on entry
// (null: zero), dL/d(the initial state) on exit. The chunk-start states are found again inside,
// one value head at a time (each thread keeps one head's prepared chunks: about
// 6 dk + 4 dv + 4 * 64 values per token of the sequence), so the forward pass need not keep them.
template <typename T>
struct DeltaRuleGradients {
  T* q = nullptr;
  T* k = nullptr;
  T* v = nullptr;
  T* g = nullptr;
  T* beta = nullptr;
  T* state = nullptr;
};

template <typename T>
void delta_rule_chunked_backward(const ExecContext& x, const DeltaRuleShape& s,
                                 const DeltaRuleInputs<T>& in, const T* initial_state,
                                 const T* d_out, const DeltaRuleGradients<T>& d);

}  // namespace gattn
