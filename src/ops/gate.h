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

// A head-specific gate on one head of one row: what gate_forward and gate_backward apply per head
// when the scores are not shared, and what attention applies in its epilogue when it fuses a G1
// gate (ops/attention.h). z holds the head's head_dim scores (elementwise) or its one score
// (headwise); sig is room for head_dim values.
struct HeadGate {
  int head_dim;
  bool headwise, additive;
  GateActivation activation;
  int scores() const { return headwise ? 1 : head_dim; }  // the head's scores (z values)
};

// out = y * act(z) or y + act(z) over the head's channels (out may equal y).
template <typename T>
void gate_head_forward(T* out, const T* y, const T* z, T* sig, const HeadGate& g);

// d_y = d_out * act(z) (or d_out, additive); d_z = act'(z) times the gradient of the head's scores
// (d_out * y, or d_out when additive; summed over the channels when headwise).
template <typename T>
void gate_head_backward(T* d_y, T* d_z, const T* d_out, const T* y, const T* z, T* sig,
                        const HeadGate& g);

// y_out may equal y_in (same stride).
template <typename T>
void gate_forward(T* y_out, const T* y_in, const T* z, const GateShape& s);

// Writes d_y_in and d_z[rows, scores] (row stride s.ld_z, or scores() when ld_z is 0).
template <typename T>
void gate_backward(T* d_y_in, T* d_z, const T* d_y_out, const T* y_in, const T* z,
                   const GateShape& s);

}  // namespace gattn
