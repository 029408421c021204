// The attention gate of Qiu et al.: Y' = Y * s or Y + s, with s = act(z) per head and channel
// (elementwise) or per head (headwise), optionally averaged over heads (head-shared).
// One code path serves every position (G1..G5): the caller passes the gated tensor and the
// pre-activation scores z, which come from the gate GEMM or from a per-channel parameter.
#pragma once
#include <cstdint>

namespace gattn {

enum class GateActivation { sigmoid, silu, identity, ns_sigmoid };

struct GateShape {
  int rows;          // tokens
  int heads;         // heads of the gated tensor
  int head_dim;      // channels per head
  bool headwise;     // one score per head instead of one per channel
  bool head_shared;  // scores averaged over heads after the activation
  bool additive;     // Y + s instead of Y * s
  GateActivation activation;
  int ld_y;      // row stride of y_in and d_y_in
  int ld_y_out;  // row stride of y_out and d_y_out
  int ld_z;      // row stride of z and d_z; 0: one row of z shared by every token
  int scores() const { return headwise ? heads : heads * head_dim; }
};

template <typename T>
T gate_activation(GateActivation act, T z);

// The score each channel gets, [rows, heads * head_dim] (packed): the activation of z, broadcast
// over a head's channels (headwise) and averaged over the heads (head-shared). For analysis.
template <typename T>
void gate_channel_scores(T* scores, const T* z, const GateShape& s);

// y_out may equal y_in (same stride).
template <typename T>
void gate_forward(T* y_out, const T* y_in, const T* z, const GateShape& s);

// Writes d_y_in and d_z[rows, scores] (row stride s.ld_z, or scores() when ld_z is 0).
template <typename T>
void gate_backward(T* d_y_in, T* d_z, const T* d_y_out, const T* y_in, const T* z,
                   const GateShape& s);

}  // namespace gattn
